"""``qwen-desktop bench``'s measuring loop (its JSON output is tested end to end in tests/test_cli.py)."""

from __future__ import annotations

import sys

import pytest

from qwen_desktop.engine.bench import run_bench


def test_bench_measures_every_figure_once_a_round_and_reports_medians_over_rounds(tiny_model_dir):
    said: list[str] = []
    result = run_bench(tiny_model_dir, threads=1, runs=3, decode_tokens=4, say=said.append)
    figures = [m.split(": ", 1)[1] for m in said if m.startswith("round 1 of 3: ")]
    assert len(figures) >= 8  # short, read ahead, long, decode, sampled, lookup, turn 6, long conversation
    # a slow spell of the machine touches one run of several figures, not every run of one: the rounds
    # follow each other, every figure once in each
    assert said[:-1] == [f"round {r} of 3: {f}" for r in (1, 2, 3) for f in figures]
    assert "ceiling" in said[-1]  # measured once, after the rounds
    assert result.read_gb_s and result.decode_mb and result.ceiling_tps
    assert result.runs == 3
    assert result.ttft_short_s > 0 and result.decode_tps > 0 and result.ttft_long_s > 0
    assert result.sampled_decode_tps > 0


@pytest.mark.skipif(sys.platform != "linux", reason="/proc is Linux only")
@pytest.mark.usefixtures("int8_prefill_on")
def test_bench_reports_anonymous_and_file_backed_memory_and_each_graphs_share(tiny_model_dir, tmp_path):
    # with the optimized-graph cache, as the app and `qwen-desktop bench` run: the weights are mapped
    result = run_bench(
        tiny_model_dir, threads=1, runs=1, decode_tokens=4, cache_root=tmp_path / "ort"
    )  # first load
    result = run_bench(tiny_model_dir, threads=1, runs=1, decode_tokens=4, cache_root=tmp_path / "ort")
    for mem in (result.memory_loaded, result.memory_long_prompt, result.memory_chat, result.memory_end):
        assert mem is not None
        assert 0 < mem["anon_mb"] <= mem["rss_mb"] and 0 < mem["file_mb"] <= mem["rss_mb"]
        assert mem["rss_mb"] <= result.peak_rss_mb + 1
        assert set(mem["graphs_mb"]) == {"decode", "prefill", "head"}
        assert 0 < sum(mem["graphs_mb"].values()) <= mem["file_mb"]
    assert result.memory_chat["rss_mb"] <= result.chat_peak_rss_mb + 1  # read where that peak is read
    # the long prompt went through the prefill graph, so its weights are resident
    assert result.memory_long_prompt["graphs_mb"]["prefill"] > 0


def test_bench_with_less_memory_maps_no_prefill_graph_and_says_it_started_from_the_cache(
    tiny_model_dir, tmp_path
):
    first = run_bench(tiny_model_dir, threads=1, runs=1, decode_tokens=4, cache_root=tmp_path / "ort")
    assert not first.from_cache and not first.low_memory
    lean = run_bench(
        tiny_model_dir, threads=1, runs=1, decode_tokens=4, cache_root=tmp_path / "ort", low_memory=True
    )
    assert lean.from_cache and lean.low_memory
    assert lean.memory_long_prompt is None or "prefill" not in lean.memory_long_prompt["graphs_mb"]
    assert 0 < lean.chat_peak_rss_mb <= lean.peak_rss_mb
    if sys.platform == "linux":  # launch to ready covers this test process's whole life so far
        assert lean.ready_s is not None and lean.ready_s > lean.load_s
