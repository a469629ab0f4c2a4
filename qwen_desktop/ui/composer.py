"""The message box under the conversation: it grows with its text, attaches text files, and its one button
sends, or stops the answer being written.

``ComposerBox`` holds the attached files as chips above the text (each with a remove button); the message
sent is the text, then each file under its name as a fenced block (``Attachment.block``), so the model reads
it, the context meter counts it (``message_text``) and the stored message shows it. A file that cannot be
attached (binary, not UTF-8, over 200 KB, longer than the context holds) gets one line of refusal above the
box and the draft stays as it was.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, Qt, QTimer, Signal
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent, QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.ui.attachments import TEXT_SUFFIXES, Attachment, AttachmentError, read_attachment
from qwen_desktop.ui.markdown_render import reveal_bidi
from qwen_desktop.units import human_bytes
from qwen_desktop.worker import emit

MAX_LINES = 8  # the box grows up to this many lines, then scrolls
NOTICE_MS = 8000  # how long a refusal stays up (the next change of the draft also hides it)


def local_files(mime: QMimeData) -> list[Path]:
    """The local files (not folders' contents) a drag carries; empty if it carries anything else too."""
    if not mime.hasUrls():
        return []
    urls = mime.urls()
    if not urls or not all(url.isLocalFile() for url in urls):
        return []
    return [Path(url.toLocalFile()) for url in urls]


class Composer(QPlainTextEdit):
    """The text of the message: Enter sends, Shift+Enter starts a new line; the height follows the text up
    to ``MAX_LINES`` lines. Files dropped on it are attached, not pasted as paths.

    Signals:
        submitted(): Enter was pressed.
        files_dropped(list): local files were dropped on it (``Path`` objects).
    """

    submitted = Signal()
    files_dropped = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setTabChangesFocus(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().documentLayout().documentSizeChanged.connect(self._fit_height)
        self._fit_height()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
            event.modifiers() & Qt.KeyboardModifier.ShiftModifier
        ):
            emit(self.submitted)
            return
        super().keyPressEvent(event)

    def lines_shown(self) -> int:
        """How many lines of text the box is tall (1..``MAX_LINES``)."""
        # QPlainTextEdit's document layout measures in lines (wrapped lines included)
        lines = int(self.document().size().height())
        return max(1, min(MAX_LINES, lines))

    def _fit_height(self, *_args: object) -> None:
        margins = self.contentsMargins()
        doc_margin = int(self.document().documentMargin())
        height = (
            self.lines_shown() * self.fontMetrics().lineSpacing()
            + 2 * doc_margin
            + margins.top()
            + margins.bottom()
            + 2
        )
        if self.height() != height:
            self.setFixedHeight(height)
        self.setVerticalScrollBarPolicy(
            Qt.ScrollBarPolicy.ScrollBarAsNeeded
            if self.document().size().height() > MAX_LINES
            else Qt.ScrollBarPolicy.ScrollBarAlwaysOff
        )

    def resizeEvent(self, event: QResizeEvent) -> None:  # noqa: N802 - Qt's name
        super().resizeEvent(event)
        QTimer.singleShot(0, self._fit_height)  # wrapping changed with the width

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_height()

    # Drops: local files are attached (a model file or folder never gets here: the window's event filter
    # takes those first and imports them); text and anything else is QPlainTextEdit's.
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt's name
        if local_files(event.mimeData()):
            event.acceptProposedAction()
            return
        super().dragEnterEvent(event)

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:  # noqa: N802 - Qt's name
        if local_files(event.mimeData()):
            event.acceptProposedAction()
            return
        super().dragMoveEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt's name
        files = local_files(event.mimeData())
        if files:
            event.acceptProposedAction()
            emit(self.files_dropped, files)
            return
        super().dropEvent(event)


class AttachmentChip(QFrame):
    """One attached file above the text: its name and size, and a button that takes it off.

    Signals:
        removed(): the remove button was clicked.
    """

    removed = Signal()

    def __init__(self, attachment: Attachment, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.attachment = attachment
        self.setObjectName("attachmentChip")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 2, 2, 2)
        layout.setSpacing(4)
        name = reveal_bidi(attachment.name)
        size = human_bytes(len(attachment.text.encode("utf-8")))
        self.label = QLabel(f"{name} · {size}")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.label.setAccessibleName(self.tr("Attached file"))
        self.label.setToolTip(name)
        layout.addWidget(self.label)
        self.remove_button = QToolButton()
        self.remove_button.setText("×")
        self.remove_button.setAutoRaise(True)
        self.remove_button.setAccessibleName(self.tr("Remove %1").replace("%1", name))
        self.remove_button.setToolTip(self.tr("Remove this file from the message"))
        self.remove_button.clicked.connect(lambda _checked=False: emit(self.removed))
        layout.addWidget(self.remove_button)


class ComposerBox(QFrame):
    """The message box: attached files, the text, Attach, and Send (Stop while an answer is written).

    ``context_check`` (set by the window) is asked about every file before it is attached: it returns None
    when the file fits, or ``(tokens, room)`` when it does not fit in the context.

    Signals:
        send_requested(): Enter, or the button while nothing is being written.
        stop_requested(): the button while an answer is written.
        draft_changed(): the text or the attached files changed (the context meter counts again).
    """

    send_requested = Signal()
    stop_requested = Signal()
    draft_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("composerBox")
        self.attachments: list[Attachment] = []
        self.context_check: Callable[[str], tuple[int, int] | None] | None = None
        self._answering = False
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.setSpacing(4)
        self.notice = QLabel()
        self.notice.setObjectName("composerNotice")
        self.notice.setWordWrap(True)
        self.notice.setTextFormat(Qt.TextFormat.PlainText)
        self.notice.setAccessibleName(self.tr("Attachment problem"))
        self.notice.hide()
        outer.addWidget(self.notice)
        self._notice_timer = QTimer(self)
        self._notice_timer.setSingleShot(True)
        self._notice_timer.setInterval(NOTICE_MS)
        self._notice_timer.timeout.connect(self.notice.hide)

        self.frame = QFrame()
        self.frame.setObjectName("composerFrame")
        inner = QVBoxLayout(self.frame)
        inner.setContentsMargins(8, 6, 6, 6)
        inner.setSpacing(4)
        self.chips = QWidget()
        self.chips_layout = QHBoxLayout(self.chips)
        self.chips_layout.setContentsMargins(0, 0, 0, 0)
        self.chips_layout.setSpacing(6)
        self.chips_layout.addStretch(1)
        self.chips.hide()
        inner.addWidget(self.chips)
        row = QHBoxLayout()
        row.setSpacing(6)
        self.attach_button = QToolButton()
        self.attach_button.setObjectName("attachButton")
        self.attach_button.setText("+")
        self.attach_button.setAccessibleName(self.tr("Attach a text file"))
        self.attach_button.setToolTip(self.tr("Attach a text file (or drop one on the message box)"))
        self.attach_button.clicked.connect(self.choose_file)
        row.addWidget(self.attach_button, 0, Qt.AlignmentFlag.AlignBottom)
        self.editor = Composer()
        self.editor.setAccessibleName(self.tr("Message"))
        self.editor.setPlaceholderText(self.tr("Ask anything — Enter sends, Shift+Enter adds a line"))
        self.editor.submitted.connect(self.send_requested)
        self.editor.files_dropped.connect(self.attach_files)
        self.editor.textChanged.connect(self._on_text_changed)
        row.addWidget(self.editor, 1)
        self.send_button = QPushButton()
        self.send_button.setObjectName("sendButton")
        self.send_button.setDefault(False)
        self.send_button.setAutoDefault(False)
        self.send_button.clicked.connect(self._on_button)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        inner.addLayout(row)
        outer.addWidget(self.frame)
        self.set_answering(False)

    # ----------------------------------------------------------------- the button

    def set_answering(self, answering: bool) -> None:
        """Show Send, or Stop while an answer is being written."""
        self._answering = answering
        self.send_button.setProperty("stop", answering)
        if answering:
            self.send_button.setText(self.tr("Stop"))
            self.send_button.setAccessibleName(self.tr("Stop the answer"))
            self.send_button.setToolTip(self.tr("Stop the answer (Esc)"))
        else:
            self.send_button.setText(self.tr("Send"))
            self.send_button.setAccessibleName(self.tr("Send message"))
            self.send_button.setToolTip(self.tr("Send (Enter)"))
        self.send_button.style().unpolish(self.send_button)
        self.send_button.style().polish(self.send_button)

    @property
    def answering(self) -> bool:
        """Whether the button is Stop."""
        return self._answering

    def _on_button(self) -> None:
        emit(self.stop_requested if self._answering else self.send_requested)

    # ----------------------------------------------------------------- the draft

    def message_text(self) -> str:
        """The message as it will be sent: the text, then each attached file under its name."""
        parts = [self.editor.toPlainText().strip()]
        parts += [a.block() for a in self.attachments]
        return "\n\n".join(p for p in parts if p)

    def clear(self) -> None:
        """Empty the text and take every file off (after sending)."""
        self.attachments.clear()
        self._show_chips()
        self.editor.clear()
        self.notice.hide()

    def set_text(self, text: str) -> None:
        """Put ``text`` in the box (editing an earlier message); attached files stay."""
        self.editor.setPlainText(text)
        self.editor.moveCursor(self.editor.textCursor().MoveOperation.End)

    def _on_text_changed(self) -> None:
        emit(self.draft_changed)

    # ----------------------------------------------------------------- attaching

    def choose_file(self) -> None:
        """Attach (the button): pick a text file."""
        patterns = " ".join(f"*{suffix}" for suffix in TEXT_SUFFIXES)
        path, _filter = QFileDialog.getOpenFileName(
            self,
            self.tr("Attach a text file"),
            "",
            self.tr("Text files (%1);;All files (*)").replace("%1", patterns),
        )
        if path:
            self.attach_files([Path(path)])

    def attach_files(self, paths: list[Path]) -> bool:
        """Attach ``paths`` in order; the first that cannot be attached is refused in one line and stops the
        rest. Returns whether all were attached."""
        for path in paths:
            try:
                attachment = read_attachment(Path(path))
                self._check_context(attachment)
            except AttachmentError as refusal:
                self.refuse(refusal)
                return False
            self.attachments.append(attachment)
            self._show_chips()
            self.notice.hide()
            emit(self.draft_changed)
        return True

    def _check_context(self, attachment: Attachment) -> None:
        if self.context_check is None:
            return
        too_long = self.context_check(attachment.block())
        if too_long is not None:
            tokens, room = too_long
            raise AttachmentError("context", attachment.name, size=tokens, limit=room)

    def refuse(self, refusal: AttachmentError) -> None:
        """Say in one line why a file was not attached."""
        name = reveal_bidi(refusal.name)
        texts = {
            "large": self.tr("%1 is too large to attach (%2; at most %3)."),
            "empty": self.tr("%1 is empty: there is nothing to attach."),
            "binary": self.tr("%1 is not a text file (it holds binary data), so it was not attached."),
            "encoding": self.tr("%1 is not UTF-8 text, so it was not attached."),
            "folder": self.tr("%1 is a folder: attach the text files in it one by one."),
            "unreadable": self.tr("%1 cannot be read: %2"),
            "context": self.tr("%1 is too long for the context (%2 tokens; there is room for %3)."),
        }
        text = texts.get(refusal.kind, self.tr("%1 cannot be attached."))
        if refusal.kind == "large":
            text = text.replace("%2", human_bytes(refusal.size, round_up=True)).replace(
                "%3", human_bytes(refusal.limit)
            )
        elif refusal.kind == "context":
            text = text.replace("%2", str(refusal.size)).replace("%3", str(refusal.limit))
        elif refusal.kind == "unreadable":
            text = text.replace("%2", refusal.detail)
        self.notice.setText(text.replace("%1", name))
        self.notice.show()
        self._notice_timer.start()

    def remove_attachment(self, attachment: Attachment) -> None:
        """Take ``attachment`` off the message."""
        if attachment in self.attachments:
            self.attachments.remove(attachment)
            self._show_chips()
            emit(self.draft_changed)
            self.editor.setFocus()

    def chip_widgets(self) -> list[AttachmentChip]:
        """The chips on show, in order."""
        return [
            w
            for i in range(self.chips_layout.count())
            if isinstance(w := self.chips_layout.itemAt(i).widget(), AttachmentChip)
        ]

    def _show_chips(self) -> None:
        for chip in self.chip_widgets():
            self.chips_layout.removeWidget(chip)
            chip.deleteLater()
        for index, attachment in enumerate(self.attachments):
            chip = AttachmentChip(attachment, self.chips)
            chip.removed.connect(lambda a=attachment: self.remove_attachment(a))
            self.chips_layout.insertWidget(index, chip)
        self.chips.setVisible(bool(self.attachments))
