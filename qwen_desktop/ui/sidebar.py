"""The sidebar: New chat, search, the chats grouped by date, each chat's actions, models and settings.

The chats are grouped Pinned / Today / Yesterday / Previous 7 days / Older by their last activity
(`Conversation.updated_at`, local dates). Typing in the search field (Ctrl+K) looks every message up with
`ChatStore.search` and lists the chats that match, each with a snippet of its best hit, the hit highlighted;
opening one asks the window to show that message. Esc in the field clears it and the chat list is back.

Each chat's actions (Rename, Pin/Unpin, Export…, Delete…) are on a "⋯" button that appears on the row under
the mouse, on right-click and on the context-menu key; Delete asks first, F2 renames in place. The bottom
row has Models and Settings as icon buttons and a menu to export every chat to one file or import such a
file. Text from the chats (titles, snippets) is escaped before it is drawn as HTML, and bidi controls show as
markers, as in the chat view.
"""

from __future__ import annotations

import contextlib
import datetime
import html
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QAbstractItemModel,
    QCoreApplication,
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QRectF,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QAbstractTextDocumentLayout,
    QAction,
    QColor,
    QContextMenuEvent,
    QFont,
    QFontMetrics,
    QKeyEvent,
    QKeySequence,
    QPainter,
    QPalette,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QStackedWidget,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.storage.chats import HIT_END, HIT_START, ChatStore, Conversation, SearchHit
from qwen_desktop.storage.errors import StorageError
from qwen_desktop.ui.icons import icon, icon_size, mix
from qwen_desktop.ui.markdown_render import reveal_bidi
from qwen_desktop.worker import emit

if TYPE_CHECKING:
    from collections.abc import Sequence

# Item data: what a row is and which chat (and message) it stands for.
ID_ROLE = Qt.ItemDataRole.UserRole
KIND_ROLE = Qt.ItemDataRole.UserRole + 1  # "header", "chat" or "hit"
TITLE_ROLE = Qt.ItemDataRole.UserRole + 2  # the title as stored (DisplayRole has bidi controls as markers)
MESSAGE_ROLE = Qt.ItemDataRole.UserRole + 3  # a hit's message id
SNIPPET_ROLE = Qt.ItemDataRole.UserRole + 4  # a hit's snippet as HTML (escaped, the hit marked)
COUNT_ROLE = Qt.ItemDataRole.UserRole + 5  # how many messages of the chat match
PINNED_ROLE = Qt.ItemDataRole.UserRole + 6

GROUPS = ("pinned", "today", "yesterday", "week", "older")
SEARCH_DELAY_MS = 150  # typing pauses this long before the store is asked
SEARCH_LIMIT = 200  # message hits read for one query (then grouped by chat)
SNIPPET_CONTEXT = 28  # characters of a snippet kept before the hit, so the hit shows on the first line
_UNSAFE_IN_FILE_NAMES = re.compile(r'[\x00-\x1f\x7f<>:"/\\|?*\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+')


def date_group(updated_at: float, now: float | None = None) -> str:
    """The group a chat last active at ``updated_at`` is listed under: "today", "yesterday", "week" (the
    7 days before yesterday) or "older", by local calendar days (a time in the future counts as today)."""
    today = datetime.date.fromtimestamp(time.time() if now is None else now)
    days = (today - datetime.date.fromtimestamp(updated_at)).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    return "week" if days <= 7 else "older"


def group_title(group: str) -> str:
    """The header shown for a group (translated)."""
    titles = {
        "pinned": QCoreApplication.translate("Sidebar", "Pinned"),
        "today": QCoreApplication.translate("Sidebar", "Today"),
        "yesterday": QCoreApplication.translate("Sidebar", "Yesterday"),
        "week": QCoreApplication.translate("Sidebar", "Previous 7 days"),
        "older": QCoreApplication.translate("Sidebar", "Older"),
    }
    return titles[group]


def grouped(
    conversations: Sequence[Conversation], now: float | None = None
) -> list[tuple[str, list[Conversation]]]:
    """``conversations`` under their groups, in `GROUPS` order (empty groups left out), each group in the
    order given (the store's: most recently active first)."""
    groups: dict[str, list[Conversation]] = {g: [] for g in GROUPS}
    for conv in conversations:
        groups["pinned" if conv.pinned else date_group(conv.updated_at, now)].append(conv)
    return [(g, groups[g]) for g in GROUPS if groups[g]]


def trim_snippet(snippet: str, context: int = SNIPPET_CONTEXT) -> str:
    """Cut a snippet's text before the hit to about ``context`` characters (at a word start, "…" in front),
    so that in a narrow sidebar the hit is on the first line."""
    start = snippet.find(HIT_START)
    if start <= context:
        return snippet
    cut = start - context
    space = snippet.find(" ", cut, start)
    if space != -1:
        cut = space + 1
    return "…" + snippet[cut:]


def snippet_html(snippet: str, hit_colour: str) -> str:
    """A `SearchHit.snippet` as HTML: the text escaped (bidi controls as markers), the hit bold in
    ``hit_colour``. The text is the model's or the user's: nothing in it can become markup."""
    parts: list[str] = []
    rest = snippet
    while True:
        start = rest.find(HIT_START)
        end = rest.find(HIT_END, start + 1) if start != -1 else -1
        if start == -1 or end == -1:
            parts.append(_escaped(rest.replace(HIT_START, "").replace(HIT_END, "")))
            break
        parts.append(_escaped(rest[:start]))
        parts.append(
            f'<span style="color:{hit_colour}; font-weight:600">{_escaped(rest[start + 1 : end])}</span>'
        )
        rest = rest[end + 1 :]
    return "".join(parts)


def _title_has(title: str, query: str) -> bool:
    """Whether every word of ``query`` is in ``title``, ignoring case (the title search of the sidebar)."""
    folded = title.casefold()
    return all(word in folded for word in query.casefold().split())


def _escaped(text: str) -> str:
    return html.escape(reveal_bidi(text), quote=False)


def file_name_for(title: str, suffix: str) -> str:
    """A file name made from a chat title: no path separators, control or bidi characters, ≤ 60 characters."""
    stem = " ".join(_UNSAFE_IN_FILE_NAMES.sub(" ", title).split())[:60].strip(" .")
    return (stem or "chat") + suffix


class SearchField(QLineEdit):
    """The search field: Esc clears it (before the window's Esc stops an answer), Down goes to the results.

    Signals:
        escaped(): Esc was pressed (the text is cleared already).
        down_pressed(): the Down arrow was pressed.
    """

    escaped = Signal()
    down_pressed = Signal()

    def event(self, event: QEvent) -> bool:
        if (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Escape
            and self.text()
        ):
            event.accept()  # Esc belongs to the field while it has text: it is not "stop the answer"
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        if event.key() == Qt.Key.Key_Escape:
            self.clear()
            emit(self.escaped)
            return
        if event.key() == Qt.Key.Key_Down:
            emit(self.down_pressed)
            return
        super().keyPressEvent(event)


class ChatDelegate(QStyledItemDelegate):
    """Draws the sidebar's rows: group headers, chats (title elided) and search hits (title and snippet), and
    edits a title in place (F2, Rename).

    Signals:
        renamed(int, str): a title was edited to this text (queued: the list is rebuilt after the editor closed).
    """

    renamed = Signal(int, str)

    def __init__(self, view: ChatList) -> None:
        super().__init__(view)
        self.view = view

    # sizes

    def _small(self, option: QStyleOptionViewItem) -> QFont:
        font = QFont(option.font)
        font.setPointSizeF(max(7.0, option.font.pointSizeF() * 0.9))
        return font

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:  # noqa: N802
        fm = QFontMetrics(option.font)
        kind = index.data(KIND_ROLE)
        if kind == "header":
            small = QFontMetrics(self._small(option))
            return QSize(1, small.height() + (6 if index.row() == 0 else 16))
        if kind == "hit":
            small = QFontMetrics(self._small(option))
            return QSize(1, fm.height() + 2 * small.lineSpacing() + 22)
        # width 1: the row takes the list's width and the title elides; nothing is ever wider than the list
        return QSize(1, fm.height() + 16)

    # painting

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        palette = self.view.colours
        kind = index.data(KIND_ROLE)
        rect = QRect(option.rect)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        if kind == "header":
            painter.setFont(self._small(option))
            painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
            text_rect = rect.adjusted(12, 0, -8, -3)
            title = QFontMetrics(painter.font()).elidedText(
                str(index.data()), Qt.TextElideMode.ElideRight, text_rect.width()
            )
            painter.drawText(text_rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignBottom), title)
            painter.restore()
            return
        row = rect.adjusted(4, 1, -4, -1)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        hovered = index.row() in (self.view.hovered_row(), self.view.menu_row)
        if selected:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(self.view.selected_colour)
            painter.drawRoundedRect(row, 6, 6)
        elif hovered:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(self.view.hover_colour)
            painter.drawRoundedRect(row, 6, 6)
        if option.state & QStyle.StateFlag.State_HasFocus and self.view.hasFocus():
            painter.setPen(palette.color(QPalette.ColorRole.Highlight))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(row.adjusted(0, 0, -1, -1), 6, 6)
        # room for the "⋯" only where it shows: hidden (the selected search result's, say) it keeps Qt's default
        # width, 100 px, and the title would elide to a word
        button = self.view.more_button
        on_row = self.view.button_row() == index.row() and not button.isHidden()
        right = 10 + (button.width() + 4 if on_row else 0)
        text_rect = row.adjusted(10, 0, -right, 0)
        text = palette.color(QPalette.ColorRole.Text)
        fm = QFontMetrics(option.font)
        title = fm.elidedText(str(index.data()), Qt.TextElideMode.ElideRight, text_rect.width())
        if kind == "chat":
            painter.setFont(option.font)
            painter.setPen(text)
            painter.drawText(
                text_rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), title
            )
            painter.restore()
            return
        # a search hit: the chat's title, then two lines of the snippet with the hit highlighted
        bold = QFont(option.font)
        bold.setWeight(QFont.Weight.DemiBold)
        painter.setFont(bold)
        painter.setPen(text)
        count = int(index.data(COUNT_ROLE) or 1)
        top = text_rect.adjusted(0, 7, 0, 0)
        small = self._small(option)
        if count > 1:
            label = QCoreApplication.translate("ChatList", "%1 matches").replace("%1", str(count))
            width = QFontMetrics(small).horizontalAdvance(label)
            painter.setFont(small)
            painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
            painter.drawText(top, int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop), label)
            top = top.adjusted(0, 0, -(width + 8), 0)
            painter.setFont(bold)
            painter.setPen(text)
        title = QFontMetrics(bold).elidedText(str(index.data()), Qt.TextElideMode.ElideRight, top.width())
        painter.drawText(top, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop), title)
        lines = QFontMetrics(small).lineSpacing() * 2
        snippet_top = top.top() + fm.height() + 3
        document = QTextDocument()
        document.setDefaultFont(small)
        document.setDocumentMargin(0)
        document.setTextWidth(text_rect.width())
        muted = palette.color(QPalette.ColorRole.PlaceholderText).name()
        document.setHtml(f'<span style="color:{muted}">{index.data(SNIPPET_ROLE) or ""}</span>')
        painter.translate(text_rect.left(), snippet_top)
        clip = QRect(0, 0, text_rect.width(), lines)
        painter.setClipRect(clip)
        context = QAbstractTextDocumentLayout.PaintContext()
        context.clip = QRectF(clip)
        context.palette.setColor(QPalette.ColorRole.Text, palette.color(QPalette.ColorRole.Text))
        document.documentLayout().draw(painter, context)
        painter.restore()

    # editing a title in place

    def createEditor(  # noqa: N802 - Qt's name
        self, parent: QWidget, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> QWidget:
        editor = QLineEdit(parent)
        editor.setAccessibleName(QCoreApplication.translate("ChatList", "Chat title"))
        editor.setFrame(True)
        return editor

    def setEditorData(self, editor: QWidget, index: QModelIndex | QPersistentModelIndex) -> None:  # noqa: N802
        if isinstance(editor, QLineEdit):
            editor.setText(str(index.data(TITLE_ROLE) or ""))
            editor.selectAll()

    def setModelData(  # noqa: N802 - Qt's name
        self, editor: QWidget, model: QAbstractItemModel, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        # The store is changed, not the model: the list is rebuilt from the store afterwards.
        if isinstance(editor, QLineEdit):
            text = editor.text().strip()
            if text and text != index.data(TITLE_ROLE):
                emit(self.renamed, int(index.data(ID_ROLE)), text)

    def updateEditorGeometry(  # noqa: N802 - Qt's name
        self, editor: QWidget, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        editor.setGeometry(option.rect.adjusted(4, 2, -4, -2))


class ChatList(QListWidget):
    """A list of chats or search hits with group headers, and a "⋯" actions button on the row under the mouse.

    Signals:
        menu_requested(object, QPoint): the actions menu for this item is wanted at this global position
            (right-click, the context-menu key, the "⋯" button).
        delete_pressed(object): Delete was pressed on this item.
        escaped(): Esc was pressed (only with ``escape_returns``).
    """

    menu_requested = Signal(object, QPoint)
    delete_pressed = Signal(object)
    escaped = Signal()
    escape_returns = False  # True for the search results: Esc goes back to the chat list (set per list)
    menu_row = -1  # the row whose actions menu is open: it stays highlighted meanwhile

    def __init__(self, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(name)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setMouseTracking(True)
        self.setFrameShape(QListWidget.Shape.NoFrame)
        self.viewport().setAutoFillBackground(False)
        self.delegate = ChatDelegate(self)
        self.setItemDelegate(self.delegate)
        self._hovered: int = -1
        # The list's own palette is the style sheet's (transparent): the sidebar hands it the window's colours.
        self.colours = QPalette(self.palette())
        self.selected_colour = QColor()
        self.hover_colour = QColor()
        self.more_button = QToolButton(self.viewport())
        self.more_button.setAccessibleName(self.tr("Chat actions"))
        self.more_button.setToolTip(self.tr("Rename, pin, export or delete"))
        self.more_button.setAutoRaise(True)
        self.more_button.setIconSize(icon_size(16))
        self.more_button.setCursor(Qt.CursorShape.ArrowCursor)
        self.more_button.hide()
        self.more_button.clicked.connect(self._menu_from_button)
        self.verticalScrollBar().valueChanged.connect(self._place_button)
        self.currentItemChanged.connect(self._place_button)

    def chat_items(self) -> list[QListWidgetItem]:
        """The rows that stand for a chat (not the headers), top to bottom."""
        return [it for i in range(self.count()) if (it := self.item(i)).data(KIND_ROLE) != "header"]

    def hovered_row(self) -> int:
        """The row under the mouse, or -1."""
        return self._hovered

    def button_row(self) -> int:
        """The row the "⋯" button is on (the one under the mouse, else the current one), or -1."""
        if self._hovered >= 0:
            return self._hovered
        current = self.currentItem()
        return self.row(current) if current is not None and current.isSelected() else -1

    def clear(self) -> None:
        self._hovered = -1
        super().clear()
        self._place_button()

    def _place_button(self, *_args: object) -> None:
        row = self.button_row()
        item = self.item(row) if row >= 0 else None
        if (
            item is None
            or item.data(KIND_ROLE) == "header"
            or self.state() == QAbstractItemView.State.EditingState
        ):
            self.more_button.hide()
            return
        rect = self.visualItemRect(item)
        side = min(26, self.fontMetrics().height() + 10)
        top = rect.top() + (rect.height() - side) // 2 if item.data(KIND_ROLE) == "chat" else rect.top() + 4
        self.more_button.setGeometry(rect.right() - side - 8, top, side, side)
        self.more_button.show()
        self.viewport().update()

    def _set_hovered(self, row: int) -> None:
        if row != self._hovered:
            self._hovered = row
            self._place_button()

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        kind = event.type()
        if kind == QEvent.Type.MouseMove:
            item = self.itemAt(event.position().toPoint())  # type: ignore[attr-defined]
            self._set_hovered(self.row(item) if item is not None and item.data(KIND_ROLE) != "header" else -1)
        elif kind == QEvent.Type.Leave and not self.more_button.underMouse():
            self._set_hovered(-1)
        return super().viewportEvent(event)

    def resizeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)  # type: ignore[arg-type]
        self._place_button()

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:  # noqa: N802 - Qt's name
        if event.reason() == QContextMenuEvent.Reason.Mouse:
            item = self.itemAt(event.pos())
            where = event.globalPos()
        else:  # the context-menu key: the current row
            item = self.currentItem()
            where = (
                self.viewport().mapToGlobal(self.visualItemRect(item).center()) if item else event.globalPos()
            )
        if item is not None and item.data(KIND_ROLE) != "header":
            emit(self.menu_requested, item, where)

    def event(self, event: QEvent) -> bool:
        if (
            self.escape_returns
            and event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Escape
            and self.state() != QAbstractItemView.State.EditingState
        ):
            event.accept()  # Esc in the search results leaves the search (before the window's "stop")
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        item = self.currentItem()
        if event.key() == Qt.Key.Key_Escape and self.escape_returns:
            emit(self.escaped)
            return
        if event.key() == Qt.Key.Key_Delete and item is not None and item.data(KIND_ROLE) != "header":
            emit(self.delete_pressed, item)
            return
        super().keyPressEvent(event)

    def _menu_from_button(self) -> None:
        row = self.button_row()
        item = self.item(row) if row >= 0 else None
        if item is not None:
            button = self.more_button
            emit(self.menu_requested, item, button.mapToGlobal(QPoint(0, button.height())))


class Sidebar(QWidget):
    """The left pane over a `ChatStore`: it renames, pins, exports, imports and deletes chats itself and
    tells the window what to show.

    Signals:
        chat_chosen(int, int): show this chat; the second value is a message to scroll to (0: none).
        new_chat_requested(): the New chat button.
        chat_deleted(int): this chat was deleted (after the user said so).
        chats_changed(): chats were renamed, pinned or imported.
        models_requested(), settings_requested(): the buttons at the bottom.
        notice(str): a short message for the status bar (an export written, chats imported).
    """

    chat_chosen = Signal(int, int)
    new_chat_requested = Signal()
    chat_deleted = Signal(int)
    chats_changed = Signal()
    models_requested = Signal()
    settings_requested = Signal()
    notice = Signal(str)

    def __init__(self, store: ChatStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.store = store
        self.current_id: int | None = None
        self.busy_id: int | None = None  # the chat an answer is being written in: it cannot be deleted now
        self.last_folder = Path.home()
        self.setObjectName("sidebar")
        self.setMinimumWidth(200)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.setSpacing(8)

        self.new_button = QPushButton(self.tr("New chat"))
        self.new_button.setObjectName("newChat")
        self.new_button.setAccessibleName(self.tr("New chat"))
        self.new_button.setToolTip(self.tr("Start a new chat (Ctrl+N)"))
        self.new_button.clicked.connect(lambda _checked=False: emit(self.new_chat_requested))
        layout.addWidget(self.new_button)

        self.search = SearchField()
        self.search.setObjectName("chatSearch")
        self.search.setAccessibleName(self.tr("Search chats"))
        self.search.setPlaceholderText(self.tr("Search chats (Ctrl+K)"))
        self.search.setClearButtonEnabled(True)
        self._search_icon = self.search.addAction(icon("search"), QLineEdit.ActionPosition.LeadingPosition)
        self._search_icon.setToolTip(self.tr("Search chats (Ctrl+K)"))
        for button in self.search.findChildren(QToolButton):  # Qt's own: the clear button and the icon
            button.setAccessibleName(
                self.tr("Search chats")
                if button.defaultAction() is self._search_icon
                else self.tr("Clear the search")
            )
        self.search.textChanged.connect(self._on_search_text)
        self.search.escaped.connect(self._on_search_escaped)
        self.search.down_pressed.connect(self._focus_results)
        self.search.returnPressed.connect(self._open_first_result)
        layout.addWidget(self.search)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self.run_search)

        self.chat_list = ChatList(self.tr("Chats"))
        self.chat_list.currentItemChanged.connect(self._on_chat_current)
        self.results_list = ChatList(self.tr("Search results"))
        self.results_list.itemClicked.connect(self._open_result)
        self.results_list.itemActivated.connect(self._open_result)
        self.results_list.escape_returns = True
        self.results_list.escaped.connect(self._leave_search)
        for view in (self.chat_list, self.results_list):
            view.menu_requested.connect(self.show_menu)
            view.delete_pressed.connect(lambda item: self.delete(int(item.data(ID_ROLE))))
            view.delegate.renamed.connect(self._renamed, Qt.ConnectionType.QueuedConnection)
        self.no_results = QLabel()
        self.no_results.setAccessibleName(self.tr("Search result"))
        self.no_results.setWordWrap(True)
        self.no_results.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.no_results.setContentsMargins(8, 16, 8, 8)
        self.no_results.setTextFormat(Qt.TextFormat.PlainText)
        self.stack = QStackedWidget()
        self.no_chats = QLabel(self.tr("No chats yet. What you ask starts one, and it shows here."))
        self.no_chats.setAccessibleName(self.tr("Chats"))
        self.no_chats.setWordWrap(True)
        self.no_chats.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.no_chats.setContentsMargins(8, 16, 8, 8)
        self.no_chats.setObjectName("sidebarNote")
        self.no_results.setObjectName("sidebarNote")
        for page in (self.chat_list, self.no_chats, self.results_list, self.no_results):
            self.stack.addWidget(page)
        layout.addWidget(self.stack, 1)

        bottom = QHBoxLayout()
        bottom.setSpacing(4)
        self.models_button = self._tool_button(self.tr("Models"), self.tr("Models: download, import, choose"))
        self.models_button.clicked.connect(lambda _checked=False: emit(self.models_requested))
        self.settings_button = self._tool_button(self.tr("Settings"), self.tr("Settings (Ctrl+,)"))
        self.settings_button.clicked.connect(lambda _checked=False: emit(self.settings_requested))
        self.chats_button = self._tool_button(
            self.tr("Import and export chats"), self.tr("Import and export chats")
        )
        self.chats_menu = QMenu(self)
        self.chats_menu.setAccessibleName(self.tr("Import and export chats"))
        self.export_all_action = self.chats_menu.addAction(self.tr("Export all chats…"))
        self.export_all_action.triggered.connect(lambda _checked=False: self.export_all())
        self.import_action = self.chats_menu.addAction(self.tr("Import chats…"))
        self.import_action.triggered.connect(lambda _checked=False: self.import_chats())
        self.chats_button.setMenu(self.chats_menu)
        self.chats_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.chats_button.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0; }")
        bottom.addWidget(self.models_button)
        bottom.addWidget(self.settings_button)
        bottom.addStretch(1)
        bottom.addWidget(self.chats_button)
        layout.addLayout(bottom)

        self.search_action = QAction(self.tr("Search chats"), self)
        self.search_action.setShortcut(QKeySequence("Ctrl+K"))
        self.search_action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        self.search_action.triggered.connect(lambda _checked=False: self.focus_search())
        self.addAction(self.search_action)
        self.setTabOrder(self.new_button, self.search)
        self.setTabOrder(self.search, self.chat_list)
        self.restyle()

    def _tool_button(self, name: str, tip: str) -> QToolButton:
        button = QToolButton()
        button.setAccessibleName(name)
        button.setToolTip(tip)
        button.setAutoRaise(True)
        button.setIconSize(icon_size(20))
        button.setFixedSize(34, 34)
        return button

    # ----------------------------------------------------------------- look

    def restyle(self) -> None:
        """Take the colours of the current palette (icons, field, buttons): after a theme change."""
        palette = self.palette()
        window = palette.color(QPalette.ColorRole.Window)
        text = palette.color(QPalette.ColorRole.Text)
        base = palette.color(QPalette.ColorRole.Base)
        border = mix(window, text, 0.18).name()
        hover = mix(window, text, 0.07).name()
        highlight = palette.color(QPalette.ColorRole.Highlight).name()
        self.new_button.setIcon(icon("plus", palette))
        self.new_button.setIconSize(icon_size(18))
        self.models_button.setIcon(icon("models", palette))
        self.settings_button.setIcon(icon("settings", palette))
        self.chats_button.setIcon(icon("more", palette))
        self._search_icon.setIcon(icon("search", palette, QPalette.ColorRole.PlaceholderText))
        # Qt's clear button draws a fixed dark pixmap, lost on the dark theme: it gets the app's own icon
        clear = self.search.findChild(QAction, "_q_qlineeditclearaction")
        if clear is not None:
            clear.setIcon(icon("clear", palette, QPalette.ColorRole.PlaceholderText))
        for view in (self.chat_list, self.results_list):
            view.more_button.setIcon(icon("more", palette))
            view.colours = QPalette(palette)
            view.selected_colour = mix(window, palette.color(QPalette.ColorRole.Highlight), 0.16)
            view.hover_colour = mix(window, text, 0.07)
            view.viewport().update()
        self.setStyleSheet(
            f"""
            QPushButton#newChat {{ text-align: left; padding: 7px 10px; border: 1px solid {border};
                border-radius: 8px; background: {base.name()}; }}
            QPushButton#newChat:hover {{ background: {hover}; }}
            QPushButton#newChat:focus {{ border-color: {highlight}; }}
            QLineEdit#chatSearch {{ padding: 5px 4px; border: 1px solid {border}; border-radius: 8px;
                background: {base.name()}; }}
            QLineEdit#chatSearch:focus {{ border-color: {highlight}; }}
            QListWidget {{ background: transparent; border: none; outline: none; }}
            QLabel#sidebarNote {{ color: {palette.color(QPalette.ColorRole.PlaceholderText).name()}; }}
            QToolButton {{ border: none; border-radius: 6px; padding: 2px; }}
            QToolButton:hover {{ background: {hover}; }}
            QToolButton:focus {{ border: 1px solid {highlight}; }}
            """
        )
        self._menu_icons = {
            name: icon(name, palette) for name in ("rename", "pin", "export", "delete", "import")
        }
        self.export_all_action.setIcon(self._menu_icons["export"])
        self.import_action.setIcon(self._menu_icons["import"])

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self.restyle()

    # ----------------------------------------------------------------- the chat list

    def refresh(self, current_id: int | None = None) -> None:
        """Fill the list from the store, ``current_id`` selected (None: no chat selected, a new one is
        being written); a search on show is run again."""
        self.current_id = current_id
        view = self.chat_list
        scrolled = view.verticalScrollBar().value()
        view.blockSignals(True)
        view.clear()
        try:
            conversations = self.store.list_conversations()
        except StorageError:
            conversations = []
        for group, chats in grouped(conversations):
            header = QListWidgetItem(group_title(group))
            header.setData(KIND_ROLE, "header")
            header.setFlags(Qt.ItemFlag.NoItemFlags)  # not selectable, and the arrow keys skip it
            view.addItem(header)
            for conv in chats:
                view.addItem(self._chat_item(conv, "chat"))
                if conv.id == current_id:
                    view.setCurrentRow(view.count() - 1)
        if current_id is None:
            view.setCurrentRow(-1)
        view.blockSignals(False)
        view.verticalScrollBar().setValue(scrolled)
        view._place_button()
        if self.search.text().strip():
            self.run_search()
        else:
            self._show_chats()

    def _chat_item(self, conv: Conversation | SearchHit, kind: str) -> QListWidgetItem:
        item = QListWidgetItem(reveal_bidi(conv.title))
        conversation_id = conv.id if isinstance(conv, Conversation) else conv.conversation_id
        item.setData(ID_ROLE, conversation_id)
        item.setData(KIND_ROLE, kind)
        item.setData(TITLE_ROLE, conv.title)
        item.setData(PINNED_ROLE, bool(getattr(conv, "pinned", False)))
        item.setToolTip(_escaped(conv.title))
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemIsEditable)
        return item

    def titles(self) -> list[str]:
        """The chats' titles as the list shows them, top to bottom (tests, accessibility)."""
        return [str(item.text()) for item in self.chat_list.chat_items()]

    def headers(self) -> list[str]:
        """The group headers on show, top to bottom."""
        view = self.chat_list
        return [
            str(view.item(i).text()) for i in range(view.count()) if view.item(i).data(KIND_ROLE) == "header"
        ]

    def item_of(self, conversation_id: int, results: bool = False) -> QListWidgetItem | None:
        """The row of a chat in the chat list (or the search results)."""
        view = self.results_list if results else self.chat_list
        return next((it for it in view.chat_items() if it.data(ID_ROLE) == conversation_id), None)

    def _on_chat_current(self, item: QListWidgetItem | None, _previous: object) -> None:
        if item is not None and item.data(KIND_ROLE) == "chat":
            emit(self.chat_chosen, int(item.data(ID_ROLE)), 0)

    # ----------------------------------------------------------------- search

    def focus_search(self) -> None:
        """Put the cursor in the search field (Ctrl+K), its text selected."""
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _on_search_text(self, text: str) -> None:
        if text.strip():
            self._search_timer.start()
        else:
            self._search_timer.stop()
            self._show_chats()

    def _leave_search(self) -> None:
        self.search.clear()
        self._on_search_escaped()

    def _on_search_escaped(self) -> None:
        self._show_chats()
        self.chat_list.setFocus()

    def run_search(self) -> None:
        """Look the search field's text up in every message and list the chats that have it."""
        self._search_timer.stop()
        query = self.search.text().strip()
        if not query:
            self._show_chats()
            return
        try:
            hits = self.store.search(query, limit=SEARCH_LIMIT)
        except StorageError as exc:
            self.no_results.setText(self.tr("The chats cannot be searched: %1").replace("%1", str(exc)))
            self.stack.setCurrentWidget(self.no_results)
            return
        by_chat: dict[int, list[SearchHit]] = {}
        for hit in hits:
            by_chat.setdefault(hit.conversation_id, []).append(hit)
        # chats whose title has the words but none of whose messages do (a renamed chat): listed first
        try:
            titled = [
                c
                for c in self.store.list_conversations()
                if c.id not in by_chat and _title_has(c.title, query)
            ]
        except StorageError:
            titled = []
        view = self.results_list
        chosen = view.currentItem().data(ID_ROLE) if view.currentItem() is not None else None
        view.blockSignals(True)
        view.clear()
        accent = self.palette().color(QPalette.ColorRole.Link).name()
        for conv in titled:
            item = self._chat_item(conv, "hit")
            item.setData(MESSAGE_ROLE, 0)
            item.setData(SNIPPET_ROLE, _escaped(self.tr("The title matches")))
            item.setData(COUNT_ROLE, 1)
            item.setData(Qt.ItemDataRole.AccessibleTextRole, reveal_bidi(conv.title))
            view.addItem(item)
            if conv.id == chosen:
                view.setCurrentItem(item)
        for chat_hits in by_chat.values():
            best = chat_hits[0]
            item = self._chat_item(best, "hit")
            item.setData(MESSAGE_ROLE, best.message_id)
            item.setData(SNIPPET_ROLE, snippet_html(trim_snippet(best.snippet), accent))
            item.setData(COUNT_ROLE, len(chat_hits))
            plain = trim_snippet(best.snippet).replace(HIT_START, "").replace(HIT_END, "")
            item.setData(
                Qt.ItemDataRole.AccessibleTextRole, f"{reveal_bidi(best.title)}: {reveal_bidi(plain)}"
            )
            view.addItem(item)
            if best.conversation_id == chosen:
                view.setCurrentItem(item)
        view.blockSignals(False)
        if by_chat or titled:
            self.stack.setCurrentWidget(view)
        else:
            self.no_results.setText(self.tr("No chat contains “%1”.").replace("%1", reveal_bidi(query)))
            self.stack.setCurrentWidget(self.no_results)

    def searching(self) -> bool:
        """Whether the search results (or "no chat contains …") are on show."""
        return self.stack.currentWidget() in (self.results_list, self.no_results)

    def _show_chats(self) -> None:
        """The chat list, or a line saying there is none yet."""
        self.stack.setCurrentWidget(self.chat_list if self.chat_list.count() else self.no_chats)

    def _focus_results(self) -> None:
        if self.stack.currentWidget() is self.results_list and self.results_list.count():
            self.results_list.setFocus()
            if self.results_list.currentRow() < 0:
                self.results_list.setCurrentRow(0)

    def _open_first_result(self) -> None:
        self._search_timer.stop()
        self.run_search()
        if self.stack.currentWidget() is self.results_list and self.results_list.count():
            self._open_result(self.results_list.item(0))

    def _open_result(self, item: QListWidgetItem) -> None:
        if item.data(KIND_ROLE) == "hit":
            self.results_list.setCurrentItem(item)
            emit(self.chat_chosen, int(item.data(ID_ROLE)), int(item.data(MESSAGE_ROLE)))

    # ----------------------------------------------------------------- a chat's actions

    def show_menu(self, item: QListWidgetItem, where: QPoint) -> None:
        """The actions of the chat on ``item``: Rename, Pin/Unpin, Export…, Delete…."""
        conversation_id = int(item.data(ID_ROLE))
        try:
            conv = self.store.get_conversation(conversation_id)
        except StorageError:  # deleted meanwhile (another program): show what is there
            self.refresh(self.current_id)
            return
        menu = QMenu(self)
        menu.setAccessibleName(self.tr("Chat actions"))
        rename = menu.addAction(self._menu_icons["rename"], self.tr("Rename"))
        pin = menu.addAction(self._menu_icons["pin"], self.tr("Unpin") if conv.pinned else self.tr("Pin"))
        export = menu.addAction(self._menu_icons["export"], self.tr("Export…"))
        menu.addSeparator()
        delete = menu.addAction(self._menu_icons["delete"], self.tr("Delete…"))
        delete.setEnabled(conversation_id != self.busy_id)
        view = item.listWidget()
        if isinstance(view, ChatList):
            view.menu_row = view.row(item)
            view.viewport().update()
        try:
            chosen = menu.exec(where)
        finally:
            if isinstance(view, ChatList):
                view.menu_row = -1
                view.viewport().update()
        if chosen is rename:
            self.rename(conversation_id, view)
        elif chosen is pin:
            self.set_pinned(conversation_id, not conv.pinned)
        elif chosen is export:
            self.export_chat(conversation_id)
        elif chosen is delete:
            self.delete(conversation_id)

    def rename(self, conversation_id: int, view: QListWidget | None = None) -> None:
        """Edit the chat's title in place (Enter keeps it, Esc leaves it as it was)."""
        view = view if isinstance(view, ChatList) else self.chat_list
        if view is self.chat_list and self.searching():
            view = self.results_list
        item = next((it for it in view.chat_items() if it.data(ID_ROLE) == conversation_id), None)
        if item is None:
            return
        view.scrollToItem(item)
        view.setFocus()
        view.editItem(item)
        view.more_button.hide()

    def _renamed(self, conversation_id: int, title: str) -> None:
        with contextlib.suppress(
            StorageError, ValueError
        ):  # deleted meanwhile, or blank: the list shows the store
            self.store.rename_conversation(conversation_id, title)
        self.refresh(self.current_id)
        emit(self.chats_changed)

    def set_pinned(self, conversation_id: int, pinned: bool) -> None:
        """Pin the chat to the top of the list, or unpin it."""
        try:
            self.store.set_pinned(conversation_id, pinned)
        except StorageError as exc:
            self._problem(self.tr("The chat could not be changed"), str(exc))
        self.refresh(self.current_id)
        emit(self.chats_changed)

    def delete(self, conversation_id: int, confirm: bool = True) -> bool:
        """Delete a chat and all its messages, after asking (Enter and Esc keep it). True if deleted."""
        if conversation_id == self.busy_id:
            return False
        try:
            conv = self.store.get_conversation(conversation_id)
        except StorageError:
            self.refresh(self.current_id)
            return False
        if confirm:
            box = QMessageBox(
                QMessageBox.Icon.Question,
                self.tr("Delete conversation"),
                self.tr("Delete “%1” and all its messages? This cannot be undone.").replace(
                    "%1", reveal_bidi(conv.title)
                ),
                QMessageBox.StandardButton.Cancel,
                self,
            )
            box.setTextFormat(Qt.TextFormat.PlainText)
            delete = box.addButton(self.tr("Delete"), QMessageBox.ButtonRole.DestructiveRole)
            delete.setAccessibleName(self.tr("Delete the conversation"))
            # Enter (the default) and Esc both keep the chat: only a deliberate click deletes.
            box.setDefaultButton(QMessageBox.StandardButton.Cancel)
            box.setEscapeButton(QMessageBox.StandardButton.Cancel)
            box.exec()
            if box.clickedButton() is not delete:
                return False
        try:
            self.store.delete_conversation(conversation_id)
        except StorageError as exc:
            self._problem(self.tr("The chat could not be deleted"), str(exc))
            return False
        if conversation_id == self.current_id:
            self.current_id = None
        emit(self.chat_deleted, conversation_id)
        self.refresh(self.current_id)
        return True

    # ----------------------------------------------------------------- export and import

    def export_chat(self, conversation_id: int) -> None:
        """Ask where, then write the chat as Markdown (to read) or JSON (everything, to import again)."""
        from qwen_desktop.storage.export import export_json, export_markdown

        try:
            conv = self.store.get_conversation(conversation_id)
        except StorageError:
            self.refresh(self.current_id)
            return
        markdown = self.tr("Markdown (*.md)")
        everything = self.tr("JSON, every version (*.json)")
        path_text, chosen = QFileDialog.getSaveFileName(
            self,
            self.tr("Export chat"),
            str(self.last_folder / file_name_for(conv.title, ".md")),
            f"{markdown};;{everything}",
        )
        if not path_text:
            return
        path = Path(path_text)
        as_json = path.suffix.lower() == ".json" or (path.suffix.lower() != ".md" and chosen == everything)
        if not path.suffix:
            path = path.with_suffix(".json" if as_json else ".md")
        try:
            if as_json:
                export_json(self.store, path, [conversation_id])
            else:
                export_markdown(self.store, conversation_id, path)
        except StorageError as exc:
            self._problem(self.tr("The chat was not exported"), str(exc))
            return
        self.last_folder = path.parent
        emit(
            self.notice,
            self.tr("Exported “%1” to %2").replace("%1", reveal_bidi(conv.title)).replace("%2", str(path)),
        )

    def export_all(self) -> None:
        """Ask where, then write every chat to one JSON file (`Import chats…` reads it back)."""
        from qwen_desktop.storage.export import export_json

        name = time.strftime("qwen-desktop-chats-%Y-%m-%d.json")
        path_text, _chosen = QFileDialog.getSaveFileName(
            self, self.tr("Export all chats"), str(self.last_folder / name), self.tr("Chat export (*.json)")
        )
        if not path_text:
            return
        path = Path(path_text)
        if not path.suffix:
            path = path.with_suffix(".json")
        try:
            result = export_json(self.store, path)
        except StorageError as exc:
            self._problem(self.tr("The chats were not exported"), str(exc))
            return
        self.last_folder = path.parent
        # one string per English form (Chinese has one form: both say the same); no English catalogue is
        # installed to give Qt's %n plural its forms
        exported = (
            self.tr("Exported 1 chat to %2") if result.chats == 1 else self.tr("Exported %1 chats to %2")
        )
        text = exported.replace("%1", str(result.chats)).replace("%2", str(path))
        if result.damaged:
            left_out = ", ".join(f"“{reveal_bidi(t)}”" for t in result.damaged)
            self._problem(
                self.tr("Some chats were left out"),
                self.tr("These chats are damaged and were not exported: %1").replace("%1", left_out),
            )
        emit(self.notice, text)

    def import_chats(self) -> None:
        """Ask for an export file and add its chats; a file that is not a whole export changes nothing and
        says why."""
        from qwen_desktop.storage.export import import_chats_file

        path_text, _chosen = QFileDialog.getOpenFileName(
            self,
            self.tr("Import chats"),
            str(self.last_folder),
            self.tr("Chat export (*.json);;All files (*)"),
        )
        if not path_text:
            return
        path = Path(path_text)
        try:
            result = import_chats_file(self.store, path)
        except StorageError as exc:  # ImportFileError included: the reason, in one line
            self._problem(self.tr("Nothing was imported"), str(exc))
            return
        self.last_folder = path.parent
        imported, skipped = len(result.imported), len(result.skipped)
        text = (
            self.tr("Imported 1 chat")
            if imported == 1
            else self.tr("Imported %1 chats").replace("%1", str(imported))
        )
        if skipped:
            here = self.tr(" (1 was here already)") if skipped == 1 else self.tr(" (%1 were here already)")
            text += here.replace("%1", str(skipped))
        self.refresh(self.current_id)
        emit(self.chats_changed)
        emit(self.notice, text)

    def _problem(self, title: str, reason: str) -> None:
        box = QMessageBox(
            QMessageBox.Icon.Warning, title, reveal_bidi(reason), QMessageBox.StandardButton.Ok, self
        )
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setObjectName("sidebarProblem")
        box.exec()

    def set_busy(self, conversation_id: int | None) -> None:
        """The chat an answer is being written in (it cannot be deleted until the answer ends), or None."""
        self.busy_id = conversation_id
