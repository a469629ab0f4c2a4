"""The catalogue's descriptions (``qwen_desktop/data/catalog.json``) in the interface language.

The catalogue is data, so lupdate cannot find its texts: ``DESCRIPTIONS`` repeats them for it, and the
translations live in the app's ``.ts`` like every other string. ``tests/ui/test_i18n.py`` fails when a
description in the catalogue is missing here, so a changed catalogue cannot show English in a translated
window. A description that is not here (a mirror's own catalogue, ``QWEN_DESKTOP_CATALOG``) shows as it is.
Display names are names and stay as they are.
"""

from __future__ import annotations

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication

from qwen_desktop.library.catalog import CatalogEntry

CONTEXT = "catalog"
DESCRIPTIONS = (
    QT_TRANSLATE_NOOP(
        "catalog",
        "The default: small and fast on any laptop CPU; good for everyday questions and short texts.",
    ),
    QT_TRANSLATE_NOOP(
        "catalog", "Noticeably better answers, about three times slower; wants 4 GB of free memory."
    ),
    QT_TRANSLATE_NOOP("catalog", "Tuned for code: explaining, writing and fixing small pieces of code."),
    QT_TRANSLATE_NOOP("catalog", "The better code model of the two; wants 4 GB of free memory."),
    QT_TRANSLATE_NOOP(
        "catalog",
        "The ONNX export published by onnx-community (4-bit weights), used as it is: nothing is built on this "
        "machine.",
    ),
)


def description(entry: CatalogEntry) -> str:
    """``entry``'s description in the interface language ("" when it has none)."""
    return QCoreApplication.translate(CONTEXT, entry.description) if entry.description else ""
