"""The SVG icons load through Qt's image plugin and take the palette's colour (light and dark)."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QColor, QPalette

from qwen_desktop.ui.icons import ICON_DIR, NAMES, icon


def test_every_icon_file_is_listed_and_draws_in_the_palette_colour(qapp):
    assert sorted(p.stem for p in ICON_DIR.glob("*.svg")) == sorted(NAMES)
    for colour in ("#1f2328", "#e6edf3"):  # the light and the dark theme's button text
        palette = QPalette()
        palette.setColor(QPalette.ColorRole.ButtonText, QColor(colour))
        for name in NAMES:
            image = icon(name, palette).pixmap(24, 24).toImage()
            drawn = [
                image.pixelColor(x, y)
                for x in range(image.width())
                for y in range(image.height())
                if image.pixelColor(x, y).alpha() == 255
            ]
            assert drawn, name
            assert {c.name() for c in drawn} == {colour}, name


def _luminance(colour: QColor) -> float:
    def channel(value: float) -> float:
        return value / 12.92 if value <= 0.03928 else ((value + 0.055) / 1.055) ** 2.4

    return (
        0.2126 * channel(colour.redF()) + 0.7152 * channel(colour.greenF()) + 0.0722 * channel(colour.blueF())
    )


def _contrast(a: QColor, b: QColor) -> float:
    """The WCAG contrast ratio of two colours (1 to 21; 3 is the least for icons and other graphics)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def faint_icons(top, palette: QPalette) -> list[str]:
    """The buttons under ``top`` whose icon is too faint on the window, button and field colours."""
    from PySide6.QtWidgets import QAbstractButton

    grounds = [
        palette.color(r)
        for r in (QPalette.ColorRole.Window, QPalette.ColorRole.Button, QPalette.ColorRole.Base)
    ]
    faint = []
    for button in top.findChildren(QAbstractButton):
        if button.icon().isNull() or not button.isEnabled():
            continue
        image = button.icon().pixmap(24, 24).toImage()
        inked = [
            image.pixelColor(x, y)
            for x in range(image.width())
            for y in range(image.height())
            if image.pixelColor(x, y).alpha() > 200
        ]
        worst = min((_contrast(c, g) for c in inked for g in grounds), default=21.0)
        if worst < 3:
            faint.append(f"{type(button).__name__} {button.accessibleName() or button.text()!r}: {worst:.1f}")
    return faint


@pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")
@pytest.mark.parametrize("theme", ["dark", "light"])
def test_every_icon_shows_on_the_theme(theme, settings_for, make_window, tiny_model_dir, qtbot):
    # the Close button of the Models page once had Fusion's black cross on the dark theme
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QMessageBox

    from qwen_desktop.ui.models_dialog import ModelsDialog
    from qwen_desktop.ui.settings_dialog import SettingsDialog
    from tests.ui.boxes import on_dialog

    settings_for(model_path=str(tiny_model_dir), theme=theme)
    window = make_window()
    palette = QApplication.palette()
    found = {"main window": faint_icons(window, palette)}

    def look(name: str):
        def act(dialog) -> None:
            found[name] = faint_icons(dialog, palette)
            qtbot.keyClick(dialog, Qt.Key.Key_Escape)

        return act

    seen = on_dialog(qtbot, ModelsDialog, look("Models page"))
    qtbot.mouseClick(window.sidebar.models_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bool(seen))
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)
    seen = on_dialog(qtbot, SettingsDialog, look("settings"))
    qtbot.keyClick(window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: bool(seen))
    buttons = QMessageBox.StandardButton
    box = QMessageBox(
        QMessageBox.Icon.Question,
        "?",
        "?",
        buttons.Yes | buttons.No | buttons.Ok | buttons.Cancel | buttons.Close,
        window,
    )
    qtbot.addWidget(box)
    found["message box"] = faint_icons(box, palette)
    assert len(found) == 4 and not any(found.values()), found


@pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")
def test_icons_follow_a_theme_change_in_the_settings(settings_for, make_window, tiny_model_dir, qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication, QDialogButtonBox

    from qwen_desktop.ui.settings_dialog import SettingsDialog
    from tests.ui.boxes import on_dialog

    settings_for(model_path=str(tiny_model_dir), theme="light")
    window = make_window()

    def to_dark(dialog) -> None:
        dialog.theme.setFocus()
        while dialog.theme.currentData() != "dark":
            qtbot.keyClick(dialog.theme, Qt.Key.Key_Down)
        ok = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)

    seen = on_dialog(qtbot, SettingsDialog, to_dark)
    qtbot.keyClick(window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: bool(seen))
    assert window.settings.theme == "dark"
    assert faint_icons(window, QApplication.palette()) == []
