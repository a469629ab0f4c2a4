"""Sizes and durations read the same in the CLI and the window (``qwen_desktop.units``)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from qwen_desktop.units import human_bytes, human_seconds

SCALE = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def value(text: str) -> float:
    """The bytes a ``human_bytes`` text stands for."""
    number, unit = text.split()
    return float(number) * SCALE[unit]


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (1000, "1 KB"),
        (512_000, "512 KB"),
        (12_345_678, "12.3 MB"),
        (676_000_000, "676.0 MB"),
        (1_890_000_000, "1.89 GB"),
        (-5, "0 B"),
    ],
)
def test_bytes_in_decimal_units(n, text):
    assert human_bytes(n) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (999, "999 B"),
        (200_000, "200 KB"),
        (200_001, "201 KB"),
        (12_300_000, "12.3 MB"),
        (12_300_001, "12.4 MB"),
        (1_890_000_000, "1.89 GB"),
        (1_890_000_001, "1.90 GB"),
        (200_000_000_001, "200.01 GB"),
    ],
)
def test_round_up_never_shows_less_than_the_size(n, text):
    assert human_bytes(n, round_up=True) == text


@given(st.integers(min_value=0, max_value=10**13))
def test_round_up_reads_at_least_the_size_and_less_than_one_shown_step_more(n):
    up = human_bytes(n, round_up=True)
    number, unit = up.split()
    step = 10 ** -len(number.partition(".")[2]) * SCALE[unit]  # the last shown digit's worth
    assert n <= value(up) < n + step + 1e-6 * n
    assert unit == human_bytes(n).split()[1]


@pytest.mark.parametrize(
    ("s", "text"),
    [(0, "0 s"), (44.6, "45 s"), (185, "3 min 05 s"), (4320, "1 h 12 min"), (-3, "0 s")],
)
def test_durations_in_the_largest_units_that_fit(s, text):
    assert human_seconds(s) == text


@given(st.floats(min_value=0, max_value=1e15, allow_nan=False))
def test_bigger_never_reads_smaller(n):
    assert value(human_bytes(n)) <= value(human_bytes(n * 1.01 + 1)) or math.isclose(n, 0)
