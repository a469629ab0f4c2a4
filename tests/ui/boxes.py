"""Answering the message box a click opens, as a user would: with a key or a click on its button."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMessageBox


def answer_box(qtbot, how: str, tries: int = 500) -> list[str]:
    """Answer the next message box (within ``tries`` polls 20 ms apart): "esc", "enter" (its default
    button), or a button's text. Returns the list the box's text is appended to once it was seen."""
    seen: list[str] = []

    def answer(box: QMessageBox) -> None:
        seen.append(box.text())
        if how == "esc":
            qtbot.keyClick(box, Qt.Key.Key_Escape)
        elif how == "enter":
            qtbot.keyClick(box, Qt.Key.Key_Return)
        else:
            qtbot.mouseClick(next(b for b in box.buttons() if b.text() == how), Qt.MouseButton.LeftButton)

    on_dialog(qtbot, QMessageBox, answer, tries)
    return seen


def on_dialog(qtbot, kind: type, act, tries: int = 500) -> list[object]:
    """Once a modal dialog of ``kind`` is up (within ``tries`` polls 20 ms apart), call ``act(dialog)``; act
    closes it (a key press, a click). Returns the list the dialog is appended to once it was seen."""
    seen: list[object] = []

    def look(left: int = tries) -> None:
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, kind):
            if left:
                QTimer.singleShot(20, lambda: look(left - 1))
            return
        seen.append(dialog)
        act(dialog)

    QTimer.singleShot(0, look)
    return seen
