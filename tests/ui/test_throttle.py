"""The throttle that keeps streaming re-renders to about 30 a second."""

from __future__ import annotations

import time

from qwen_desktop.ui.throttle import Throttle


def test_many_calls_become_few_and_the_last_state_is_shown(qtbot):
    seen = []
    state = {"n": 0}
    throttle = Throttle(lambda: seen.append(state["n"]), 33)
    started = time.perf_counter()
    while time.perf_counter() - started < 0.3:
        state["n"] += 1
        throttle()
        qtbot.wait(1)
    qtbot.waitUntil(lambda: seen and seen[-1] == state["n"], timeout=1000)
    elapsed = time.perf_counter() - started
    assert state["n"] > 50
    assert len(seen) <= elapsed * 1000 / 33 + 2
    assert seen[0] == 1  # the first call runs at once


def test_adaptive_interval_follows_the_cost(qtbot):
    def slow():
        time.sleep(0.02)

    throttle = Throttle(slow, 10, adaptive=True)
    throttle()
    assert throttle.interval() >= 60
