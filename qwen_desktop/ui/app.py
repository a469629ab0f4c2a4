"""``run_app()``: the ``qwen-desktop`` command with no arguments opens the window.

One app per data folder: `run_app` holds the folder's `InstanceLock` while the window is open. A second
start finds the lock held, asks the first to bring its window to the front (a request file the first one
watches for), says so, and exits with status 0.
"""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QLibraryInfo, QLocale, Qt, QTranslator
from PySide6.QtGui import QFont, QFontInfo
from PySide6.QtWidgets import QApplication, QWidget

SHOW_REQUEST = "show-window.request"
I18N_DIR = Path(__file__).resolve().parent.parent / "i18n"
# Simplified Chinese faces, best first. Listed first, they also draw the Latin letters of a Chinese line, so
# both share one design and baseline (as on Chinese desktops); without them Qt falls back to whichever CJK
# face the system lists first, often Noto Sans CJK JP, whose Japanese glyph shapes differ from Chinese ones.
CJK_FAMILIES = (
    "Noto Sans CJK SC",
    "Source Han Sans SC",
    "WenQuanYi Micro Hei",
    "Microsoft YaHei UI",
    "Microsoft YaHei",
    "PingFang SC",
)
# At the Latin base size (9 pt, 12 px) a Chinese character is 11 px high and its strokes run together.
CJK_EXTRA_POINTS = 1.0


def interface_locale(language: str) -> QLocale:
    """The locale of the interface for the ``language`` setting ("system" or "" = the OS's)."""
    return QLocale.system() if language in ("", "system") else QLocale(language)


def interface_font(base: QFont, locale: QLocale) -> QFont:
    """The application font for ``locale``: for Chinese, ``base`` one point larger in the first Simplified
    Chinese face installed (``base``'s own face after them, for a system with none); otherwise ``base``."""
    if locale.language() != QLocale.Language.Chinese:
        return base
    font = QFont(base)
    # QFontInfo: the face "Sans Serif" stands for; a generic name in a family list is not looked up
    font.setFamilies([*CJK_FAMILIES, QFontInfo(base).family()])
    if base.pointSizeF() > 0:
        font.setPointSizeF(base.pointSizeF() + CJK_EXTRA_POINTS)
    return font


def install_translators(app: QApplication, language: str) -> list[QTranslator]:
    """Load our translation (and Qt's own, for standard buttons) for ``language`` ("system" = the OS's).

    Returns the installed translators (keep them alive as long as the app).
    """
    locale = interface_locale(language)
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


def ask_running_app_to_show(data_folder: Path, wait_s: float = 2.0) -> bool:
    """Ask the app running on `data_folder` to bring its window to the front; True if it took the request.

    The request is a file, `SHOW_REQUEST`, in the data folder: the running app watches the folder, raises
    its window and deletes the file (no network module needed, and only this user can write there).
    """
    request = data_folder / SHOW_REQUEST
    try:
        request.write_bytes(b"")
    except OSError:
        return False
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if not request.exists():
            return True
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        request.unlink()
    return False


def watch_for_show_requests(data_folder: Path, window: QWidget) -> QFileSystemWatcher:
    """Bring `window` to the front whenever a second start leaves a `SHOW_REQUEST` in `data_folder`."""
    request = data_folder / SHOW_REQUEST
    with contextlib.suppress(OSError):
        request.unlink()  # left by a start while a crashed run still held the lock
    watcher = QFileSystemWatcher([str(data_folder)], window)

    def check(_folder: str) -> None:
        if not request.exists():
            return
        with contextlib.suppress(OSError):
            request.unlink()
        window.setWindowState(window.windowState() & ~Qt.WindowState.WindowMinimized)
        window.show()
        window.raise_()
        window.activateWindow()

    watcher.directoryChanged.connect(check)
    return watcher


def run_app(argv: list[str] | None = None) -> int:
    """Open the main window and run until it closes; returns the exit code.

    If another Qwen Desktop already runs on the same data folder, bring its window to the front, say so on
    stderr, and return 0 without opening anything.
    """
    from qwen_desktop.storage import paths
    from qwen_desktop.storage.errors import AlreadyRunningError
    from qwen_desktop.storage.lock import InstanceLock

    existing = QApplication.instance()
    app = (
        existing
        if isinstance(existing, QApplication)
        else QApplication(argv if argv is not None else sys.argv)
    )
    folder = paths.data_dir()
    lock = InstanceLock(folder)
    try:
        lock.acquire()
    except AlreadyRunningError as exc:
        shown = ask_running_app_to_show(folder)
        print(
            f"qwen-desktop: {exc} " + ("Its window is now in front." if shown else "Switch to its window."),
            file=sys.stderr,
        )
        return 0
    try:
        return _run_window(app, folder)
    finally:
        lock.release()


def _run_window(app: QApplication, folder: Path) -> int:
    from qwen_desktop.storage.settings import load_settings

    app.setApplicationName("Qwen Desktop")
    app.setOrganizationName("QwenDesktop")
    icon = Path(__file__).resolve().parent.parent / "resources" / "qwen-desktop.png"
    if icon.is_file():
        from PySide6.QtGui import QIcon

        app.setWindowIcon(QIcon(str(icon)))
    app.setDesktopFileName("qwen-desktop")  # matches the .desktop entry, so docks show the right icon
    settings, _warning = load_settings()  # the window reads them again and shows any warning
    translators = install_translators(app, settings.language)  # noqa: F841 - kept alive until exit
    app.setFont(interface_font(app.font(), interface_locale(settings.language)))

    from qwen_desktop.ui.main_window import MainWindow

    window = MainWindow()
    watcher = watch_for_show_requests(folder, window)  # noqa: F841 - kept alive until exit
    window.show()
    return int(app.exec())
