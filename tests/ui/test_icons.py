"""The SVG icons load through Qt's image plugin and take the palette's colour (light and dark)."""

from __future__ import annotations

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
