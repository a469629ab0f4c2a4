"""Sizes and durations as people read them: one spelling for the command line and the window (no Qt)."""

from __future__ import annotations

_BYTE_UNITS = ((1e9, "GB", 2), (1e6, "MB", 1), (1e3, "KB", 0), (1.0, "B", 0))  # scale, unit, shown digits


def human_bytes(n: float, *, round_up: bool = False) -> str:
    """``512 B``, ``12 KB``, ``12.3 MB``, ``1.89 GB``: decimal units, as the hub and file managers show them.

    ``round_up`` rounds up to the shown digits instead of to the nearest, so a size over a limit never reads
    as the limit itself (200 001 bytes is ``201 KB``, not ``200 KB``).
    """
    n = max(float(n), 0.0)
    scale, unit, digits = next(u for u in _BYTE_UNITS if n >= u[0] or u[1] == "B")
    if round_up:
        step = 10**digits
        return f"{-(-(n * step) // scale) / step:.{digits}f} {unit}"  # the exact ceiling: float // is exact
    return f"{n / scale:.{digits}f} {unit}"


def human_seconds(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``1 h 12 min`` (rounded to the second; negative counts as 0)."""
    s = max(round(seconds), 0)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
