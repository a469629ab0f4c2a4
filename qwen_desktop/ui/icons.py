"""The app's SVG icons (``qwen_desktop/resources/icons``), drawn in the palette's colours.

Each icon is a hand-written 24×24 SVG whose strokes and fills are ``currentColor``; `icon` puts the text colour
of the current palette in its place (and the disabled text colour for the disabled state), so one file reads
on light and dark themes alike. Call it again after a theme change: the result is cached per colour.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QSize
from PySide6.QtGui import QColor, QGuiApplication, QIcon, QImageReader, QPalette, QPixmap

ICON_DIR = Path(__file__).resolve().parent.parent / "resources" / "icons"
NAMES = (
    "arrow",
    "clear",
    "delete",
    "export",
    "import",
    "models",
    "more",
    "pin",
    "plus",
    "rename",
    "search",
    "settings",
)
_SIZES = (16, 20, 24, 32)


@cache
def _source(name: str) -> str:
    return (ICON_DIR / f"{name}.svg").read_text(encoding="utf-8")


def _pixmap(name: str, colour: str, size: int, ratio: float) -> QPixmap:
    # Qt's SVG image plugin (kept in the frozen app; the QtSvg Python module is not) draws it at this size.
    data = QByteArray(_source(name).replace("currentColor", colour).encode("utf-8"))
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer, QByteArray(b"svg"))
    pixels = max(1, round(size * ratio))
    reader.setScaledSize(QSize(pixels, pixels))
    pixmap = QPixmap.fromImage(reader.read())
    pixmap.setDevicePixelRatio(ratio)
    return pixmap


@cache
def _icon(name: str, normal: str, disabled: str, ratio: float) -> QIcon:
    result = QIcon()
    for size in _SIZES:
        result.addPixmap(_pixmap(name, normal, size, ratio), QIcon.Mode.Normal)
        result.addPixmap(_pixmap(name, normal, size, ratio), QIcon.Mode.Active)
        result.addPixmap(_pixmap(name, disabled, size, ratio), QIcon.Mode.Disabled)
    return result


def icon(name: str, palette: QPalette | None = None, role: QPalette.ColorRole | None = None) -> QIcon:
    """The icon ``name`` (one of `NAMES`) in ``palette``'s ``role`` colour (the button text colour).

    Args:
        name: The SVG's file name without ``.svg``.
        palette: Whose colours to use; the application's by default.
        role: The colour role for the normal state; ``ButtonText`` by default.
    """
    palette = palette if palette is not None else QGuiApplication.palette()
    role = role if role is not None else QPalette.ColorRole.ButtonText
    normal = palette.color(QPalette.ColorGroup.Active, role).name()
    disabled = palette.color(QPalette.ColorGroup.Disabled, role).name()
    screen = QGuiApplication.primaryScreen()
    ratio = screen.devicePixelRatio() if screen is not None else 1.0
    return _icon(name, normal, disabled, ratio)


def icon_size(pixels: int = 18) -> QSize:
    """The size the app draws its icons at in buttons."""
    return QSize(pixels, pixels)


def mix(a: QColor, b: QColor, amount: float) -> QColor:
    """``a`` moved ``amount`` (0..1) of the way to ``b``: the sidebar's soft hover and selection colours."""
    return QColor(
        round(a.red() + (b.red() - a.red()) * amount),
        round(a.green() + (b.green() - a.green()) * amount),
        round(a.blue() + (b.blue() - a.blue()) * amount),
    )
