"""The frozen app's entry point: ``qwen-desktop`` (the window) and its subcommands, as ``python -m qwen_desktop``.

It has one addition for smoke tests and start-up timing, inactive unless the environment variable
``QWEN_DESKTOP_SMOKE_QUIT_MS`` is set: when the main window is first painted, print the line
``qwen-desktop-smoke: window shown: <title>`` on stderr, then close all windows after that many milliseconds, so
the app leaves through its normal path (the window's closeEvent, exit code 0). The app itself has no such switch
yet; once ``run_app`` grows one this file goes back to two lines.
"""

from __future__ import annotations

import os
import sys

SMOKE_ENV = "QWEN_DESKTOP_SMOKE_QUIT_MS"
SMOKE_MARK = "qwen-desktop-smoke: window shown:"


def install_smoke_quit(delay_ms: int) -> None:
    """Make ``QApplication.exec`` report the main window's first paint and quit ``delay_ms`` ms later."""
    from PySide6.QtCore import QEvent, QObject, QTimer
    from PySide6.QtWidgets import QApplication, QWidget

    original_exec = QApplication.exec

    class FirstPaint(QObject):
        """Watches for the first paint of a visible top-level window: what the user sees as "shown"."""

        def __init__(self) -> None:
            super().__init__()
            self.seen = False

        def report(self, title: str) -> None:
            if not self.seen:
                self.seen = True
                print(f"{SMOKE_MARK} {title}", file=sys.stderr, flush=True)
                QTimer.singleShot(delay_ms, QApplication.closeAllWindows)

        def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
            if (
                event.type() == QEvent.Type.Paint
                and isinstance(watched, QWidget)
                and watched.isWindow()
                and watched.isVisible()
            ):
                self.report(watched.windowTitle())
            return False

    def exec_then_quit(*_args: object) -> int:
        app = QApplication.instance()
        assert app is not None  # run_app created it before calling exec()
        watcher = FirstPaint()
        app.installEventFilter(watcher)
        # Should no paint event arrive (a platform plugin that skips painting), still end the run.
        QTimer.singleShot(20_000, lambda: watcher.report("(no paint event within 20 s)"))
        try:
            return original_exec()  # static in Qt 6
        finally:
            app.removeEventFilter(watcher)

    QApplication.exec = exec_then_quit  # type: ignore[method-assign]


def main() -> int:
    """Run ``qwen-desktop`` with ``sys.argv``."""
    delay = os.environ.get(SMOKE_ENV)
    if delay:
        install_smoke_quit(int(delay))
    from qwen_desktop.cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    raise SystemExit(main())
