"""Range-checked argument types for the ``qwen-desktop`` command line.

A value out of range is a usage error: argparse prints the usage and one line naming the option, and the
command exits with status 2 before anything is loaded.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

CONTEXT_MAX = 131072  # the longest context the engine accepts (same as the settings' limit)
SEED_MAX = 2**63 - 1


def max_threads() -> int:
    """The most threads an option accepts: this machine's CPU count (more only slows ONNX Runtime down)."""
    return os.cpu_count() or 1


def int_in(low: int, high: int | Callable[[], int] | None = None) -> Callable[[str], int]:
    """An argparse type: an integer from `low` to `high` (inclusive; None = no upper bound)."""

    def parse(text: str) -> int:
        top = high() if callable(high) else high
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low or (top is not None and value > top):
            span = f"from {low} to {top}" if top is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{value} is out of range (use a number {span})")
        return value

    parse.__name__ = "number"  # argparse names the type in its messages
    return parse


def float_in(low: float, high: float | None = None, *, low_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number from `low` (excluded if `low_open`) to `high` (inclusive)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        below = value <= low if low_open else value < low
        if not math.isfinite(value) or below or (high is not None and value > high):
            left = f"more than {low}" if low_open else f"at least {low}"
            span = f"{left} and at most {high}" if high is not None else left
            raise argparse.ArgumentTypeError(f"{text} is out of range (use a finite number {span})")
        return value

    parse.__name__ = "number"
    return parse


threads = int_in(0, max_threads)
context = int_in(1, CONTEXT_MAX)
tokens = int_in(1, CONTEXT_MAX)
seed = int_in(0, SEED_MAX)
temperature = float_in(0.0)
top_p = float_in(0.0, 1.0, low_open=True)
top_k = int_in(0)
min_p = float_in(0.0, 1.0)
repetition_penalty = float_in(0.0, low_open=True)
