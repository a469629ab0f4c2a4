"""Sizes and durations as people read them: one spelling for the command line and the window (no Qt)."""

from __future__ import annotations


def human_bytes(n: float) -> str:
    """``512 B``, ``12 KB``, ``12.3 MB``, ``1.89 GB``: decimal units, as the hub and file managers show them."""
    n = max(float(n), 0.0)
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.0f} KB"
    return f"{n:.0f} B"


def human_seconds(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``1 h 12 min`` (rounded to the second; negative counts as 0)."""
    s = max(round(seconds), 0)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"
