"""The context meter in the status bar and the warning above the message box.

Both show the same ``ContextPlan`` (``engine/context.py``): the prompt with the draft plus the room kept for
the reply, the numbers that decide which turns drop, so the meter and the warning always agree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel, QProgressBar, QWidget

if TYPE_CHECKING:
    from qwen_desktop.engine.context import ContextPlan


class ContextMeter(QProgressBar):
    """How full the context is: "608 / 2048 tokens", the parts in its tooltip."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(self.tr("Context used"))
        self.setFixedWidth(220)
        self.setTextVisible(True)
        self.clear()

    def clear(self) -> None:
        """No model to count with: an empty meter."""
        self.setRange(0, 1)
        self.setValue(0)
        self.setFormat(self.tr("context: –"))

    def show_plan(self, plan: ContextPlan) -> None:
        """Show the prompt and the room kept for the reply of ``plan``."""
        full = plan.used + plan.reserved
        self.setRange(0, plan.limit)
        self.setValue(min(full, plan.limit))
        self.setFormat(self.tr("%1 / %2 tokens").replace("%1", str(full)).replace("%2", str(plan.limit)))
        self.setToolTip(
            self.tr("System prompt: %1 · history and message: %2 · kept for the reply: %3")
            .replace("%1", str(plan.system_tokens))
            .replace("%2", str(plan.history_tokens))
            .replace("%3", str(plan.reserved))
        )


class ContextWarning(QLabel):
    """Above the message box, only when sending would drop or shorten a turn."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setAccessibleName(self.tr("Context warning"))
        self.setStyleSheet("color: #bc4c00;")
        self.hide()

    def show_plan(self, plan: ContextPlan) -> None:
        """Say what ``plan`` drops or shortens; hide when it keeps everything."""
        if plan.dropped:
            self.setText(
                self.tr(
                    "Sending this pushes the %1 oldest message(s) out of the context: the model will not see them."
                ).replace("%1", str(plan.dropped))
            )
        elif plan.trimmed:
            self.setText(
                self.tr("A message is too long for the context and will be shortened in the middle.")
            )
        self.setVisible(bool(plan.dropped or plan.trimmed))
