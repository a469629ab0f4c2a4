"""``qwen-desktop bench``'s measuring loop (its JSON output is tested end to end in tests/test_cli.py)."""

from __future__ import annotations

from qwen_desktop.engine.bench import run_bench


def test_bench_measures_every_figure_once_a_round_and_reports_medians_over_rounds(tiny_model_dir):
    said: list[str] = []
    result = run_bench(tiny_model_dir, threads=1, runs=3, decode_tokens=4, say=said.append)
    figures = [m.split(": ", 1)[1] for m in said if m.startswith("round 1 of 3: ")]
    assert len(figures) >= 8  # short, read ahead, long, decode, sampled, lookup, turn 6, long conversation
    # a slow spell of the machine touches one run of several figures, not every run of one: the rounds
    # follow each other, every figure once in each
    assert said == [f"round {r} of 3: {f}" for r in (1, 2, 3) for f in figures]
    assert result.runs == 3
    assert result.ttft_short_s > 0 and result.decode_tps > 0 and result.ttft_long_s > 0
    assert result.sampled_decode_tps > 0
