"""Light, dark and "system" themes: a Fusion palette for the widgets, matching colours for the chat HTML."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QGuiApplication, QPalette
from PySide6.QtWidgets import QApplication

from qwen_desktop.ui.markdown_render import DARK, LIGHT, Colors

_DARK_ROLES = {
    QPalette.ColorRole.Window: "#1e2227",
    QPalette.ColorRole.WindowText: "#e6edf3",
    QPalette.ColorRole.Base: "#14171b",
    QPalette.ColorRole.AlternateBase: "#23272e",
    QPalette.ColorRole.ToolTipBase: "#2d333b",
    QPalette.ColorRole.ToolTipText: "#e6edf3",
    QPalette.ColorRole.PlaceholderText: "#7d8590",
    QPalette.ColorRole.Text: "#e6edf3",
    QPalette.ColorRole.Button: "#2d333b",
    QPalette.ColorRole.ButtonText: "#e6edf3",
    QPalette.ColorRole.BrightText: "#ff7b72",
    QPalette.ColorRole.Link: "#58a6ff",
    QPalette.ColorRole.Highlight: "#1f6feb",
    QPalette.ColorRole.HighlightedText: "#ffffff",
}
_LIGHT_ROLES = {
    QPalette.ColorRole.Window: "#f6f8fa",
    QPalette.ColorRole.WindowText: "#1f2328",
    QPalette.ColorRole.Base: "#ffffff",
    QPalette.ColorRole.AlternateBase: "#f0f2f4",
    QPalette.ColorRole.ToolTipBase: "#ffffe8",
    QPalette.ColorRole.ToolTipText: "#1f2328",
    QPalette.ColorRole.PlaceholderText: "#6e7781",
    QPalette.ColorRole.Text: "#1f2328",
    QPalette.ColorRole.Button: "#f0f2f4",
    QPalette.ColorRole.ButtonText: "#1f2328",
    QPalette.ColorRole.BrightText: "#cf222e",
    QPalette.ColorRole.Link: "#0969da",
    QPalette.ColorRole.Highlight: "#0969da",
    QPalette.ColorRole.HighlightedText: "#ffffff",
}

# Dialog buttons say what they do in words, as Jan's and LM Studio's do: Fusion's stock icons on OK, Cancel,
# Close, Yes and No are fixed pixmaps (a black cross on Close) that vanished on the dark theme.
STYLE_SHEET = """
QDialogButtonBox { dialogbuttonbox-buttons-have-icons: 0; }
QFrame#userMessage { background: %(user)s; border: 1px solid %(user_border)s; border-radius: 14px; }
QFrame#assistantMessage { background: transparent; border: none; }
QLabel#answerFooter { color: %(muted)s; }
QLabel#editedMark { color: %(muted)s; }
QWidget#messageActions QToolButton, QLabel#versionLabel { color: %(muted)s; }
QTableView { gridline-color: %(grid)s; }
QFrame#errorBanner { background: %(banner)s; border: 1px solid %(banner_border)s; border-radius: 6px; }
QFrame#composerFrame { background: %(base)s; border: 1px solid %(border)s; border-radius: 12px; }
QFrame#attachmentChip { background: %(chip)s; border: 1px solid %(border)s; border-radius: 8px; }
QLabel#composerNotice { color: %(warn)s; }
QToolButton#attachButton { font-size: 16px; font-weight: bold; border-radius: 8px; min-width: 26px;
    min-height: 26px; }
QPushButton#sendButton { background: %(accent)s; color: #ffffff; border: none; border-radius: 8px;
    padding: 5px 16px; min-height: 18px; font-weight: bold; }
QPushButton#sendButton:hover { background: %(accent_hover)s; }
QPushButton#sendButton:disabled { background: %(accent_off)s; color: %(text_off)s; }
QPushButton#sendButton[stop="true"] { background: %(stop)s; }
"""


def is_dark(theme: str) -> bool:
    """Whether ``theme`` ("light", "dark", "system") means dark here."""
    if theme == "system":
        return QGuiApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark
    return theme == "dark"


def apply_theme(app: QApplication, theme: str) -> Colors:
    """Set the application's palette and style sheet; returns the colours for the chat HTML."""
    dark = is_dark(theme)
    app.setStyle("Fusion")
    palette = QPalette()
    for role, colour in (_DARK_ROLES if dark else _LIGHT_ROLES).items():
        palette.setColor(role, QColor(colour))
    disabled = QColor("#6e7681" if dark else "#8c959f")
    for role in (QPalette.ColorRole.Text, QPalette.ColorRole.ButtonText, QPalette.ColorRole.WindowText):
        palette.setColor(QPalette.ColorGroup.Disabled, role, disabled)
    app.setPalette(palette)
    values = (
        {
            "user": "#1c2d41",
            "user_border": "#24405e",
            "muted": "#7d8590",
            "answer": "#22272e",
            "border": "#3d444d",
            "grid": "#373e47",
            "banner": "#4a1d1d",
            "banner_border": "#8b2e2e",
            "base": "#14171b",
            "chip": "#23272e",
            "warn": "#f0883e",
            "accent": "#1f6feb",
            "accent_hover": "#388bfd",
            "accent_off": "#2d333b",
            "text_off": "#6e7681",
            "stop": "#6e7681",
        }
        if dark
        else {
            "user": "#ddf4ff",
            "user_border": "#b6e3ff",
            "muted": "#6e7781",
            "answer": "#ffffff",
            "border": "#d0d7de",
            "grid": "#d8dee4",
            "banner": "#ffebe9",
            "banner_border": "#ff8182",
            "base": "#ffffff",
            "chip": "#f0f2f4",
            "warn": "#bc4c00",
            "accent": "#0969da",
            "accent_hover": "#0860c8",
            "accent_off": "#d0d7de",
            "text_off": "#f6f8fa",
            "stop": "#57606a",
        }
    )
    app.setStyleSheet(STYLE_SHEET % values)
    return DARK if dark else LIGHT
