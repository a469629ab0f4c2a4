"""``run_app()``: the ``qwen-desktop`` command with no arguments opens the window."""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import QLibraryInfo, QLocale, QTranslator
from PySide6.QtWidgets import QApplication

I18N_DIR = Path(__file__).resolve().parent.parent / "i18n"


def install_translators(app: QApplication, language: str) -> list[QTranslator]:
    """Load our translation (and Qt's own, for standard buttons) for ``language`` ("system" = the OS's).

    Returns the installed translators (keep them alive as long as the app).
    """
    locale = QLocale.system() if language in ("", "system") else QLocale(language)
    installed = []
    ours = QTranslator(app)
    if ours.load(locale, "qwen_desktop", "_", str(I18N_DIR)):
        app.installTranslator(ours)
        installed.append(ours)
    qt = QTranslator(app)
    if qt.load(locale, "qtbase", "_", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)):
        app.installTranslator(qt)
        installed.append(qt)
    return installed


def run_app(argv: list[str] | None = None) -> int:
    """Open the main window and run until it closes; returns the exit code."""
    from qwen_desktop.storage.settings import load_settings

    existing = QApplication.instance()
    app = (
        existing
        if isinstance(existing, QApplication)
        else QApplication(argv if argv is not None else sys.argv)
    )
    app.setApplicationName("Qwen Desktop")
    app.setOrganizationName("QwenDesktop")
    icon = Path(__file__).resolve().parent.parent / "resources" / "qwen-desktop.png"
    if icon.is_file():
        from PySide6.QtGui import QIcon

        app.setWindowIcon(QIcon(str(icon)))
    app.setDesktopFileName("qwen-desktop")  # matches the .desktop entry, so docks show the right icon
    settings, _warning = load_settings()  # the window reads them again and shows any warning
    translators = install_translators(app, settings.language)  # noqa: F841 - kept alive until exit

    from qwen_desktop.ui.main_window import MainWindow

    window = MainWindow()
    window.show()
    return int(app.exec())
