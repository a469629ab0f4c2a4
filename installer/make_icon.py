"""Draw the app icon with QPainter: ``python installer/make_icon.py`` writes resources/qwen-desktop.{png,ico}.

A rounded square in the app's blue with a white speech bubble holding three dots. The PNG (256 px) serves Linux
(hicolor theme) and macOS (PyInstaller turns it into .icns); the .ico carries 16-256 px sizes for Windows.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZES = (16, 24, 32, 48, 64, 128, 256)


def draw_icon(size: int) -> object:
    """Return a ``QImage`` of the icon at ``size`` x ``size`` pixels."""
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QColor, QImage, QLinearGradient, QPainter, QPainterPath

    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = size / 256  # the drawing is laid out on a 256 grid

    gradient = QLinearGradient(QPointF(0, 0), QPointF(0, size))
    gradient.setColorAt(0, QColor("#4f7cff"))
    gradient.setColorAt(1, QColor("#2b4fd6"))
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(gradient)
    painter.drawRoundedRect(QRectF(8 * s, 8 * s, 240 * s, 240 * s), 52 * s, 52 * s)

    bubble = QPainterPath()
    bubble.addRoundedRect(QRectF(44 * s, 60 * s, 168 * s, 116 * s), 40 * s, 40 * s)
    tail = QPainterPath()
    tail.moveTo(76 * s, 160 * s)
    tail.lineTo(64 * s, 206 * s)
    tail.lineTo(118 * s, 170 * s)
    tail.closeSubpath()
    painter.setBrush(QColor("white"))
    painter.drawPath(bubble.united(tail))

    painter.setBrush(QColor("#2b4fd6"))
    for x in (92, 128, 164):
        painter.drawEllipse(QPointF(x * s, 118 * s), 13 * s, 13 * s)
    painter.end()
    return image


def png_bytes(image: object) -> bytes:
    """Encode a ``QImage`` as PNG in memory."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice

    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[attr-defined]
    buffer.close()
    return bytes(data.data())


def ico_bytes(pngs: list[bytes], sizes: tuple[int, ...]) -> bytes:
    """An .ico file holding one PNG-compressed image per size (Windows Vista and later read these).

    Qt's ICO writer stores a single image per file, so the container is written here: a 6-byte header, a
    16-byte directory entry per image (width/height 0 means 256), then the PNG data.
    """
    header = struct.pack("<HHH", 0, 1, len(pngs))
    offset = len(header) + 16 * len(pngs)
    entries, blobs = b"", b""
    for size, png in zip(sizes, pngs, strict=True):
        side = 0 if size >= 256 else size
        entries += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(png), offset)
        offset += len(png)
        blobs += png
    return header + entries + blobs


def write_icons(out_dir: Path) -> list[Path]:
    """Write ``qwen-desktop.png`` (256 px) and ``qwen-desktop.ico`` into ``out_dir``; return their paths."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 - QImage needs an app
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / "qwen-desktop.png"
    if not draw_icon(256).save(str(png)):  # type: ignore[attr-defined]
        raise OSError(f"cannot write {png}")
    written = [png]
    ico = out_dir / "qwen-desktop.ico"
    ico.write_bytes(ico_bytes([png_bytes(draw_icon(size)) for size in SIZES], SIZES))
    written.append(ico)
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "resources", help="folder (default: resources/)")
    args = parser.parse_args()
    for path in write_icons(args.out):
        print(f"{path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
