"""Walking a window's widget tree for what a keyboard or screen-reader user meets: every interactive widget."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QScrollBar,
    QTextEdit,
    QWidget,
)

INTERACTIVE = (
    QAbstractButton,  # push and tool buttons, check boxes, radio buttons
    QLineEdit,
    QComboBox,
    QTextEdit,
    QPlainTextEdit,
    QAbstractItemView,  # list, tree and table views
    QAbstractSpinBox,
    QAbstractSlider,
)


def _part_of_another(widget: QWidget) -> bool:
    """Pieces Qt builds inside a named widget: a spin box's or combo box's editor and list, a view's header
    and scroll bars (a screen reader announces them with their owner)."""
    if isinstance(widget, QScrollBar):
        return True
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, (QAbstractSpinBox, QComboBox)):
            return True
        parent = parent.parentWidget()
    return isinstance(widget, QHeaderView) and isinstance(widget.parentWidget(), QAbstractItemView)


def interactive_widgets(top: QWidget) -> list[QWidget]:
    """Every interactive widget under ``top`` (``top`` included), shown or hidden."""
    found = [top] if isinstance(top, INTERACTIVE) else []
    found += [w for w in top.findChildren(QWidget) if isinstance(w, INTERACTIVE)]
    return [w for w in found if not _part_of_another(w)]


def unnamed(top: QWidget) -> list[str]:
    """The interactive widgets under ``top`` without an accessible name, described for the failure message."""

    def describe(widget: QWidget) -> str:
        text = widget.text() if isinstance(widget, (QAbstractButton, QLineEdit)) else ""
        return f"{type(widget).__name__} {widget.objectName()!r} {text!r} in {type(widget.parentWidget()).__name__}"

    return [describe(w) for w in interactive_widgets(top) if not w.accessibleName()]
