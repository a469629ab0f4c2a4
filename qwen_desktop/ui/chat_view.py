"""The conversation on show: one ``MessageView`` per message in a scroll area.

Each message has its own text browser, so streaming re-renders only the message being written (at most
about 30 times a second, through a ``Throttle``) and a long conversation costs nothing while it grows.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QEvent, QMargins, QPoint, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QDesktopServices,
    QEnterEvent,
    QFontInfo,
    QGuiApplication,
    QResizeEvent,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QScrollArea,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.storage.chats import Message
from qwen_desktop.ui.markdown_render import LIGHT, Colors, render_markdown, render_plain, reveal_bidi
from qwen_desktop.ui.throttle import Throttle
from qwen_desktop.worker import emit

RENDER_INTERVAL_MS = 33  # ~30 renders a second while an answer streams
COLUMN_EM = 46  # the reading column's widest, in em
BUBBLE_SHARE = 0.8  # your messages take at most this share of the column
OPEN_SCHEMES = ("http", "https", "mailto")


def link_target(url: QUrl) -> QUrl | None:
    """The URL a clicked link may open, or None: only http, https and mailto, and a mailto link loses its
    query and fragment (``?attach=/etc/passwd``, ``&body=…``) so it can only address a mail."""
    scheme = url.scheme().lower()
    if scheme not in OPEN_SCHEMES or not url.isValid():
        return None
    target = QUrl(url)
    if scheme == "mailto":
        target.setQuery(None)  # None clears it ("" would leave a bare "?")
        target.setFragment(None)
    return target


def confirm_open(parent: QWidget, url: QUrl) -> bool:
    """Ask before opening a link, showing its real target (the text of a link can claim anything)."""
    shown = reveal_bidi(url.toDisplayString())
    encoded = bytes(url.toEncoded().data()).decode("ascii", "replace")
    if encoded != shown:  # a look-alike host or path shows as the address it really is, too
        shown += "\n" + encoded
    box = QMessageBox(
        QMessageBox.Icon.Question,
        parent.tr("Open link"),
        parent.tr("Open this address outside the app?") + "\n\n" + shown,
        QMessageBox.StandardButton.Open | QMessageBox.StandardButton.Cancel,
        parent,
    )
    box.setTextFormat(Qt.TextFormat.PlainText)  # the address is shown as text, whatever it contains
    box.setDefaultButton(QMessageBox.StandardButton.Cancel)
    box.setEscapeButton(QMessageBox.StandardButton.Cancel)
    box.setObjectName("linkConfirmation")
    return box.exec() == QMessageBox.StandardButton.Open


class MessageBody(QTextBrowser):
    """A read-only, self-sizing view of one message that never fetches anything.

    Signals:
        copy_code(int): the copy link of code block n was clicked.
    """

    copy_code = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.resource_requests: list[str] = []  # every URL the document asked for (tests check it)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextBrowserInteraction | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.viewport().setAutoFillBackground(False)
        self.setStyleSheet("QTextBrowser { background: transparent; }")
        self.anchorClicked.connect(self._on_anchor)
        self.highlighted.connect(self._on_hover)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)

    def loadResource(self, kind: int, url: QUrl | str) -> object:  # noqa: N802 - Qt's name
        """Refuse every resource: model output must not make the app fetch or read anything."""
        self.resource_requests.append(url.toString() if isinstance(url, QUrl) else str(url))
        return None

    def _on_anchor(self, url: QUrl) -> None:
        if url.scheme() == "copy":
            try:
                emit(self.copy_code, int(url.path()))
            except ValueError:
                return
            return
        target = link_target(url)
        if target is not None and confirm_open(self, target):
            QDesktopServices.openUrl(target)

    def _on_hover(self, url: QUrl) -> None:
        """Hovering a link shows where it really goes (its text may name another address)."""
        target = link_target(url) if url.scheme() != "copy" else None
        self.setToolTip(reveal_bidi(target.toDisplayString()) if target is not None else "")

    def _fit_height(self) -> None:
        height = int(self.document().size().height()) + 4
        bar = self.horizontalScrollBar()
        if bar.isVisible():
            height += bar.height()
        if self.height() != height:
            self.setFixedHeight(height)

    def resizeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)  # type: ignore[arg-type]
        self._fit_height()


def inner_margins(frame: QFrame) -> QMargins:
    """The margins of ``frame``'s layout (none without one)."""
    layout = frame.layout()
    return layout.contentsMargins() if layout is not None else QMargins()


def _number(value: object) -> float:
    """A saved figure as a number (0 when missing or not a number: stats come from the database)."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


@dataclass(frozen=True)
class Branch:
    """Where a message sits among its siblings: ``index`` of ``count`` (1-based), and its neighbours."""

    index: int
    count: int
    previous_id: int | None
    next_id: int | None


class MessageView(QFrame):
    """One message: who wrote it, its text, and its actions.

    Signals:
        edit_requested(int): edit this user message and resend it (message id).
        regenerate_requested(int): write this answer again (message id).
        branch_requested(int): show the branch through this sibling (message id).
    """

    edit_requested = Signal(int)
    regenerate_requested = Signal(int)
    branch_requested = Signal(int)

    def __init__(
        self,
        message: Message,
        branch: Branch | None,
        colors: Colors,
        can_regenerate: bool,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.message = message
        self.branch = branch
        self.can_regenerate = can_regenerate
        self.text = message.content
        self.colors = colors
        self.code_blocks: list[str] = []
        self.streaming = message.status == "streaming"
        mine = message.role == "user"
        outer = QVBoxLayout(self)
        # your message is a bubble with its actions under it, outside; an answer sits on the page, its
        # actions on its first line
        self.bubble: QFrame = QFrame(self) if mine else self
        self.bubble.setObjectName("userMessage" if mine else "assistantMessage")
        self.bubble.setFrameShape(QFrame.Shape.StyledPanel)
        inner = QVBoxLayout(self.bubble) if mine else outer
        inner.setContentsMargins(10, 6, 10, 6)
        inner.setSpacing(2)
        if mine:
            self.setObjectName("userTurn")
            outer.setContentsMargins(0, 0, 0, 0)
            outer.setSpacing(2)
            outer.addWidget(self.bubble)
        header = QHBoxLayout()
        who = self.tr("You") if message.role == "user" else self.tr("Assistant")
        self.who = QLabel(f"<b>{who}</b>")
        self.who.setAccessibleName(self.tr("Author"))
        self.who.setIndent(4)  # in line with the text (the text view's document margin)
        header.addWidget(self.who)
        self.edited_label: QLabel | None = None
        if message.role == "user" and branch is not None and branch.index > 1:
            # a later version of your message is one you edited (the first is the one first sent)
            self.edited_label = QLabel(self.tr("edited"))
            self.edited_label.setObjectName("editedMark")
            self.edited_label.setAccessibleName(self.tr("Edited"))
            self.edited_label.setToolTip(self.tr("You edited this message; ‹ shows the earlier version"))
        header.addStretch(1)
        self.status_label = QLabel()
        self.status_label.setAccessibleName(self.tr("Message status"))
        header.addWidget(self.status_label)
        # The actions are quiet: shown while the pointer is over the message or the focus is in it (Tab), their
        # room kept meanwhile so nothing moves when they appear.
        self.action_bar = QWidget(self)
        self.action_bar.setObjectName("messageActions")
        row = QHBoxLayout(self.action_bar)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(2)
        self.branch_label: QLabel | None = None
        if branch is not None and branch.count > 1:
            prev_button = self._tool("‹", self.tr("Previous version"))
            prev_button.setEnabled(branch.previous_id is not None)
            prev_button.clicked.connect(lambda: emit(self.branch_requested, branch.previous_id))
            self.branch_label = QLabel(f"{branch.index} / {branch.count}")
            self.branch_label.setObjectName("versionLabel")
            self.branch_label.setAccessibleName(self.tr("Version"))
            next_button = self._tool("›", self.tr("Next version"))
            next_button.setEnabled(branch.next_id is not None)
            next_button.clicked.connect(lambda: emit(self.branch_requested, branch.next_id))
            row.addWidget(prev_button)
            row.addWidget(self.branch_label)
            row.addWidget(next_button)
        self.copy_button = self._tool(self.tr("Copy"), self.tr("Copy message"))
        self.copy_button.clicked.connect(self.copy_message)
        row.addWidget(self.copy_button)
        self.edit_button: QToolButton | None = None
        self.regenerate_button: QToolButton | None = None
        if message.role == "user":
            self.edit_button = self._tool(self.tr("Edit"), self.tr("Edit and resend"))
            self.edit_button.clicked.connect(lambda: emit(self.edit_requested, self.message.id))
            row.addWidget(self.edit_button)
        elif can_regenerate:
            failed = message.status == "failed"
            label = self.tr("Retry") if failed else self.tr("Regenerate")
            self.regenerate_button = self._tool(label, label)
            self.regenerate_button.clicked.connect(lambda: emit(self.regenerate_requested, self.message.id))
            row.addWidget(self.regenerate_button)
        policy = self.action_bar.sizePolicy()
        policy.setRetainSizeWhenHidden(True)
        self.action_bar.setSizePolicy(policy)
        self.action_bar.hide()
        self._hovered = False
        inner.addLayout(header)
        self.under = QHBoxLayout()  # your message's line under the bubble: "edited" and the actions
        self.under.setContentsMargins(0, 0, 0, 0)
        if mine:
            self.under.addStretch(1)
            if self.edited_label is not None:
                self.under.addWidget(self.edited_label)
            self.under.addWidget(self.action_bar)
        else:
            header.addWidget(self.action_bar)
        self.body = MessageBody(self.bubble)
        self.body.setAccessibleName(self.tr("Message text"))
        self.body.copy_code.connect(self._copy_code)
        inner.addWidget(self.body)
        self.footer: QLabel | None = None
        if message.role == "assistant" and message.stats and "ttft" in message.stats:
            self.footer = QLabel(self._figures(message.stats))
            self.footer.setObjectName("answerFooter")
            self.footer.setIndent(4)
            self.footer.setAccessibleName(self.tr("Answer figures"))
            self.footer.setToolTip(self._figure_details(message.stats))
            inner.addWidget(self.footer)
        if mine:
            outer.addLayout(self.under)
        if message.role == "user":
            self.who.hide()  # the bubble on the right says who wrote it; the label stays for screen readers
            self.setAccessibleName(who)
        self._throttle = Throttle(self.refresh, RENDER_INTERVAL_MS, self, adaptive=True)
        self.render_count = 0
        self.set_status(message.status)
        self.refresh()

    def _figures(self, stats: dict[str, object]) -> str:
        """The quiet line under an answer: "0.04 s to first word · 61.2 tokens/s"."""
        return (
            self.tr("%1 s to first word · %2 tokens/s")
            .replace("%1", f"{_number(stats.get('ttft')):.2f}")
            .replace("%2", f"{_number(stats.get('decode_tps')):.1f}")
        )

    def _figure_details(self, stats: dict[str, object]) -> str:
        lines = []
        if isinstance(stats.get("model"), str) and stats["model"]:
            lines.append(self.tr("Model: %1").replace("%1", reveal_bidi(str(stats["model"]))))
        lines.append(
            self.tr("Prompt: %1 tokens (%2 already read), read at %3 tokens/s")
            .replace("%1", str(int(_number(stats.get("prompt_tokens")))))
            .replace("%2", str(int(_number(stats.get("reused_tokens")))))
            .replace("%3", f"{_number(stats.get('prefill_tps')):.0f}")
        )
        lines.append(
            self.tr("Answer: %1 tokens at %2 tokens/s, %3 s in all")
            .replace("%1", str(int(_number(stats.get("generated_tokens")))))
            .replace("%2", f"{_number(stats.get('decode_tps')):.1f}")
            .replace("%3", f"{_number(stats.get('total')):.2f}")
        )
        return "\n".join(lines)

    def fit_bubble(self, max_width: int) -> None:
        """Your message as a bubble: as wide as its text, at most ``max_width``."""
        doc = self.body.document().clone(self)
        doc.setTextWidth(-1)
        margins = inner_margins(self.bubble)
        text = int(doc.idealWidth()) + margins.left() + margins.right() + 12
        doc.deleteLater()
        buttons = self.under.minimumSize().width()  # "edited" and the actions, under the bubble
        self.setFixedWidth(max(min(max_width, max(text, buttons)), min(max_width, 120)))

    def _tool(self, text: str, name: str) -> QToolButton:
        button = QToolButton(self.action_bar)
        button.setText(text)
        button.setAccessibleName(name)
        button.setToolTip(name)
        button.setAutoRaise(True)
        return button

    def enterEvent(self, event: QEnterEvent) -> None:  # noqa: N802 - Qt's name
        """The pointer came over the message: show its actions."""
        self._hovered = True
        self.show_actions_if_wanted()
        super().enterEvent(event)

    def leaveEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        """The pointer left the message (not for one of its buttons): hide its actions, unless it has focus."""
        self._hovered = False
        self.show_actions_if_wanted()
        super().leaveEvent(event)

    def show_actions_if_wanted(self) -> None:
        """The actions show while the pointer is over the message or the keyboard focus is in it."""
        focus = QApplication.focusWidget()
        focused = focus is not None and (focus is self or self.isAncestorOf(focus))
        self.action_bar.setVisible(self._hovered or focused)

    def set_status(self, status: str, error: str | None = None) -> None:
        """Show how the message ended (nothing for a complete one)."""
        labels = {
            "streaming": self.tr("writing…"),
            "cancelled": self.tr("stopped"),
            "interrupted": self.tr("interrupted (the app closed while writing)"),
            "failed": self.tr("failed"),
        }
        text = labels.get(status, "")
        if status == "failed" and error:
            self.status_label.setToolTip(error)
        self.status_label.setText(f"<i>{text}</i>" if text else "")
        self.status_label.setVisible(bool(text))  # an empty line would widen your bubble's top
        self.streaming = status == "streaming"

    def refresh(self) -> None:
        """Re-render the text (Markdown for answers, plain text for the user's messages)."""
        self.render_count += 1
        if self.message.role == "user":
            self.body.setHtml(render_plain(self.text))
            return
        rendered = render_markdown(
            self.text,
            self.colors,
            copy_label=self.tr("Copy code"),
            streaming=self.streaming,
            plain_note=self.tr("Shown as plain text: {reason}."),
        )
        self.code_blocks = rendered.code_blocks
        bar = self.body.horizontalScrollBar().value()
        self.body.setHtml(
            f'<div style="color:{self.colors.text}">{rendered.html or "<p>…</p>"}</div>'
            if self.streaming
            else f'<div style="color:{self.colors.text}">{rendered.html}</div>'
        )
        self.body.horizontalScrollBar().setValue(bar)

    def append(self, text: str) -> None:
        """Add streamed text; the view re-renders at most ~30 times a second."""
        self.text += text
        self._throttle()

    def finish(self, text: str, status: str, error: str | None = None) -> None:
        """The answer ended: show its final text and status."""
        self._throttle.cancel()
        self.text = text
        self.set_status(status, error)
        self.refresh()

    def copy_message(self) -> None:
        """Put the message's text (its Markdown source) on the clipboard."""
        QGuiApplication.clipboard().setText(self.text)

    def _copy_code(self, index: int) -> None:
        if 0 <= index < len(self.code_blocks):
            QGuiApplication.clipboard().setText(self.code_blocks[index].rstrip("\n") + "\n")


class ChatView(QScrollArea):
    """The messages of the branch on show, newest at the bottom.

    Signals:
        edit_requested(int), regenerate_requested(int), branch_requested(int): from a message's buttons.
    """

    edit_requested = Signal(int)
    regenerate_requested = Signal(int)
    branch_requested = Signal(int)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(self.tr("Conversation"))
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.colors = LIGHT
        # A reading column of at most COLUMN_EM em, centred: lines stay short enough to read on a wide window.
        self._inner = QWidget()
        self._inner.setObjectName("conversationPage")
        centre = QHBoxLayout(self._inner)
        centre.setContentsMargins(16, 16, 16, 16)
        self.column = QWidget()
        self.column.setObjectName("conversationColumn")
        centre.addWidget(self.column, 0, Qt.AlignmentFlag.AlignHCenter)
        self._layout = QVBoxLayout(self.column)
        self._layout.setContentsMargins(0, 0, 0, 0)
        self._layout.setSpacing(16)
        self._layout.addStretch(1)
        self.setWidget(self._inner)
        self.views: list[MessageView] = []
        self._follow = True
        self._target: MessageView | None = (
            None  # a message to keep in view (a search hit) until the user scrolls
        )
        self.verticalScrollBar().rangeChanged.connect(self._on_range)
        self.verticalScrollBar().actionTriggered.connect(self._on_user_scroll)
        self.verticalScrollBar().valueChanged.connect(self._on_scroll)
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._on_focus_changed)

    def _on_focus_changed(self, old: QWidget | None, new: QWidget | None) -> None:
        """Tab into a message shows its actions (the next Tab reaches them); leaving it hides them."""
        for widget in (old, new):
            view = widget
            while view is not None and not isinstance(view, MessageView):
                view = view.parentWidget()
            if isinstance(view, MessageView) and view in self.views:
                view.show_actions_if_wanted()

    def show_messages(
        self, messages: list[Message], branches: dict[int, Branch], regenerable: set[int]
    ) -> None:
        """Show ``messages`` (a conversation path); ``regenerable`` are the answers that get a button."""

        # Views whose message, version arrows and buttons are unchanged are kept: sending a message in a
        # long conversation adds two views instead of re-rendering them all.
        def key_of(message: Message, branch: Branch | None, regenerate: bool) -> tuple[object, ...]:
            return (message.id, message.status, message.updated_at, message.content, branch, regenerate)

        old = {key_of(v.message, v.branch, v.can_regenerate): v for v in self.views}
        views = []
        for message in messages:
            if message.role == "system":
                continue
            branch = branches.get(message.id)
            view = old.pop(key_of(message, branch, message.id in regenerable), None)
            if view is None:
                view = MessageView(message, branch, self.colors, message.id in regenerable, self.column)
                view.edit_requested.connect(self.edit_requested)
                view.regenerate_requested.connect(self.regenerate_requested)
                view.branch_requested.connect(self.branch_requested)
            views.append(view)
        for view in old.values():
            self._layout.removeWidget(view)
            # hidden at once: deleted only when the event loop runs, it would stay in Tab's way until then.
            # (The new views show from the event loop, once placed: shown here, unplaced, they would take the
            # pointer's enter and show their actions unasked.)
            view.hide()
            view.deleteLater()
        for index, view in enumerate(views):
            # your messages are bubbles on the right, answers take the column's width
            if view.message.role == "user":
                self._layout.insertWidget(index, view, 0, Qt.AlignmentFlag.AlignRight)
            else:
                self._layout.insertWidget(index, view)
        self.views = views
        self._chain_focus()
        self._fit_column()
        self._follow = True
        self._target = None
        QTimer.singleShot(0, self.scroll_to_end)

    def _chain_focus(self) -> None:
        """Tab walks the messages right after the conversation itself, top to bottom, each message's text and
        then its actions (the text's focus shows them), then leaves for what followed the conversation (the
        message box): new views would otherwise join the end of the window's chain, between Send and the
        sidebar."""
        previous: QWidget = self
        for view in self.views:
            widgets = [w for w in view.findChildren(QWidget) if w.focusPolicy() & Qt.FocusPolicy.TabFocus]
            widgets.sort(key=lambda w: w is not view.body)  # the text first: a stable sort keeps the rest
            for widget in widgets:
                QWidget.setTabOrder(previous, widget)
                previous = widget

    def reveal_actions_before(self, focus: QWidget | None) -> MessageView | None:
        """Shift+Tab is about to leave ``focus``: if the widget it lands on is one of a message's actions,
        hidden while the message has neither the pointer nor the focus, show them now (Qt's Tab passes over
        hidden widgets; forward, the text's focus shows them before Tab gets there). Returns that message.
        """
        if focus is None:
            return None
        widget = focus.previousInFocusChain()
        while widget is not None and widget is not focus:
            if widget.focusPolicy() & Qt.FocusPolicy.TabFocus and widget.isEnabled():
                view = next((v for v in self.views if v.action_bar.isAncestorOf(widget)), None)
                if view is not None and view.isVisible() and not view.action_bar.isVisible():
                    view.action_bar.show()
                    return view
                if widget.isVisibleTo(widget.window()):
                    return None  # where Shift+Tab goes: nothing hidden on the way
            widget = widget.previousInFocusChain()
        return None

    def column_width(self) -> int:
        """The reading column's width: the view's, up to ``COLUMN_EM`` em."""
        em = QFontInfo(self.font()).pixelSize()
        return max(200, min(self.viewport().width() - 32, COLUMN_EM * em))

    def _fit_column(self) -> None:
        width = self.column_width()
        self.column.setFixedWidth(width)
        for view in self.views:
            if view.message.role == "user":
                view.fit_bubble(int(width * BUBBLE_SHARE))

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        self._fit_column()

    def view_of(self, message_id: int) -> MessageView | None:
        """The view showing a message, if it is on show."""
        return next((v for v in self.views if v.message.id == message_id), None)

    def last_answer(self) -> MessageView | None:
        """The newest assistant message on show."""
        return next((v for v in reversed(self.views) if v.message.role == "assistant"), None)

    def set_colors(self, colors: Colors) -> None:
        """Switch theme colours and re-render every message."""
        self.colors = colors
        for view in self.views:
            view.colors = colors
            view.refresh()

    def plain_text(self) -> str:
        """All text on show, as the user sees it (tests and accessibility)."""
        return "\n".join(v.body.toPlainText() for v in self.views)

    def documents(self) -> list[QTextDocument]:
        """The documents of the messages on show."""
        return [v.body.document() for v in self.views]

    def scroll_to_end(self) -> None:
        """Show the newest text."""
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def scroll_to_message(self, message_id: int, text: str = "") -> None:
        """Show a message (a search hit) near the top, ``text`` in it selected, and keep it there while the
        messages above it settle their heights, until the user scrolls."""
        view = self.view_of(message_id)
        if view is None:
            return
        self._follow = False
        self._target = view
        if text:
            view.body.find(text)  # case-insensitive; selects the first occurrence, so the hit shows marked
        QTimer.singleShot(0, self._scroll_to_target)

    def _scroll_to_target(self) -> None:
        view = self._target
        if view is None or view not in self.views:
            return
        top = view.mapTo(self._inner, QPoint(0, 0)).y()
        cursor = view.body.cursorRect(view.body.textCursor())
        if view.body.textCursor().hasSelection() and cursor.bottom() + 24 > self.viewport().height():
            top += (
                view.body.y() + cursor.top() - self.viewport().height() // 3
            )  # a hit far down a long answer
        self.verticalScrollBar().setValue(max(0, top - 8))

    def _on_user_scroll(self, _action: int) -> None:
        self._target = None

    def _on_range(self, _low: int, high: int) -> None:
        if self._target is not None:
            self._scroll_to_target()
            return
        if self._follow:
            self.verticalScrollBar().setValue(high)

    def _on_scroll(self, value: int) -> None:
        # Follow the answer while the user stays at the bottom; scrolling up to read stops following.
        self._follow = value >= self.verticalScrollBar().maximum() - 8
