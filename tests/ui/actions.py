"""A message's quiet actions (Copy, Edit, Regenerate, the versions' ‹ ›), used as a person does: point at the
message, wait for them to show, click one."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QAbstractButton


def hover(qtbot, chat_view, view) -> None:
    """Scroll ``view`` into sight, move the pointer over it (where its actions sit) and wait for them."""
    chat_view.ensureWidgetVisible(view.action_bar, 8, 8)
    spot = view.action_bar.mapTo(view, view.action_bar.rect().center())
    qtbot.mouseMove(view, spot + QPoint(1, 0))  # two moves: one to the same spot may not count as moving
    qtbot.mouseMove(view, spot)
    qtbot.waitUntil(view.action_bar.isVisible, timeout=2000)


def action(view, name: str) -> QAbstractButton:
    """The action of ``view`` with the accessible name ``name``."""
    return next(b for b in view.action_bar.findChildren(QAbstractButton) if b.accessibleName() == name)


def click_action(qtbot, chat_view, view, name: str) -> None:
    """Point at ``view`` and click its action ``name``."""
    hover(qtbot, chat_view, view)
    qtbot.mouseClick(action(view, name), Qt.MouseButton.LeftButton)
