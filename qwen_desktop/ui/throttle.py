"""``Throttle``: call a function at most once per interval, always ending with the latest call."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer


class Throttle(QObject):
    """Rate-limit a callable: the first call runs at once, later ones within ``interval_ms`` are merged
    into one call at the end of the interval, so the last state is always shown.

    ``adaptive`` stretches the interval to three times the cost of the last call, so an expensive render
    (a long answer) keeps the window responsive instead of filling the event loop.
    """

    def __init__(
        self,
        func: Callable[[], None],
        interval_ms: int,
        parent: QObject | None = None,
        adaptive: bool = False,
    ) -> None:
        super().__init__(parent)
        self._func = func
        self._interval = interval_ms
        self._adaptive = adaptive
        self._cost_ms = 0.0
        self._last = -1e9
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._fire)

    def interval(self) -> int:
        """The current minimum gap between calls, in milliseconds."""
        return max(self._interval, int(3 * self._cost_ms)) if self._adaptive else self._interval

    def __call__(self) -> None:
        """Ask for a call: now if the interval has passed, else once at its end."""
        if self._timer.isActive():
            return
        since = (time.perf_counter() - self._last) * 1000
        if since >= self.interval():
            self._fire()
        else:
            self._timer.start(max(1, int(self.interval() - since)))

    def flush(self) -> None:
        """Run a pending call now."""
        if self._timer.isActive():
            self._timer.stop()
            self._fire()

    def cancel(self) -> None:
        """Drop a pending call."""
        self._timer.stop()

    def _fire(self) -> None:
        started = time.perf_counter()
        self._last = started
        self._func()
        self._cost_ms = (time.perf_counter() - started) * 1000
