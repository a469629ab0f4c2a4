"""The frozen app's entry point: ``qwen-desktop`` (the window) and its subcommands, as ``python -m qwen_desktop``.

It has one addition for smoke tests and start-up timing, inactive unless the environment variable
``QWEN_DESKTOP_SMOKE_QUIT_MS`` is set: when the Qt event loop starts with the main window shown, print the line
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
    """Make ``QApplication.exec`` report the shown window and quit after ``delay_ms`` milliseconds."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    original_exec = QApplication.exec

    def exec_then_quit(*_args: object) -> int:
        def report_shown() -> None:
            titles = [w.windowTitle() for w in QApplication.topLevelWidgets() if w.isVisible()]
            print(f"{SMOKE_MARK} {' | '.join(titles) or '(none)'}", file=sys.stderr, flush=True)
            QTimer.singleShot(delay_ms, QApplication.closeAllWindows)

        QTimer.singleShot(0, report_shown)  # runs once the show/expose events queued by show() are handled
        return original_exec()  # static in Qt 6

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
