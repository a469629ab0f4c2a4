"""The problem banner above the chat: one sentence, and "Choose a model…" when the model is the problem."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget


class ProblemBanner(QFrame):
    """A problem the app stays usable through (a model that did not load, a chat that cannot be saved);
    the window connects ``choose_button`` to its settings."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("errorBanner")
        row = QHBoxLayout(self)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setAccessibleName(self.tr("Problem"))
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row.addWidget(self.label, 1)
        self.choose_button = QPushButton(self.tr("Choose a model…"))
        self.choose_button.setAccessibleName(self.tr("Choose a model"))
        row.addWidget(self.choose_button)
        self.close_button = QPushButton(self.tr("Dismiss"))
        self.close_button.setAccessibleName(self.tr("Dismiss the message"))
        self.close_button.clicked.connect(self.hide)
        row.addWidget(self.close_button)
        self.hide()

    def show_problem(self, text: str, model: bool = False) -> None:
        """Show ``text``; ``model``: the model is the problem, so offer to choose another."""
        self.label.setText(text)
        self.choose_button.setVisible(model)
        self.show()

    def about_the_model(self) -> bool:
        """The problem on show is the model's (a load may fix it)."""
        return self.choose_button.isVisibleTo(self)
