"""benchmarks/compare.py renders its page from a list of result rows (as ``--render`` does from a saved
``--json-out``), with an OpenVINO GenAI row that reports no reused-token count; no peer venv needed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _compare():
    spec = importlib.util.spec_from_file_location("bench_compare", ROOT / "benchmarks" / "compare.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(runtime, **over):
    row = {
        "runtime": runtime,
        "versions": {},
        "load_s": 0.5,
        "warmup_s": 0.05,
        "ttft_short_s": 0.1,
        "short_prompt_tokens": 48,
        "ttft_long_s": 1.5,
        "long_prompt_tokens": 568,
        "decode_tps": 50.0,
        "turn6_ttft_s": 0.08,
        "turn6_prompt_tokens": 362,
        "turn6_reused_tokens": 342,
        "peak_rss_mb": 900.0,
        "command": f"run {runtime}",
        "other_cores": 0.01,
    }
    row.update(over)
    return row


def _info():
    return {
        "command": "python3 benchmarks/compare.py ...",
        "runs": 1,
        "threads": 2,
        "decode_tokens": 128,
        "short_tokens": 48,
        "long_tokens": 568,
        "date": "2026-12-07 17:00 UTC",
        "machine": {
            "cpu": "AMD EPYC",
            "cpu_flags": "avx2",
            "cores": "2",
            "ram": "23.5 GiB",
            "os": "Linux",
            "python": "3.11.7",
        },
        "versions": {"qwen-desktop": "0.1.0"},
        "load_start": "0.10 0.20 0.30",
        "load_end": "0.10 0.20 0.30",
    }


def test_the_page_has_an_openvino_row_with_its_versions_and_turn6_note(tmp_path):
    compare = _compare()
    info = _info()
    rows = [
        _row("ours", decode_tps=75.0),
        _row(
            "openvino",
            versions={"openvino-genai": "2026.4.1.0"},
            decode_tps=30.0,
            turn6_reused_tokens=None,
            turn6_note="ChatHistory, cache reuse not reported; 260 ms from an empty cache",
            raw={"ttft_short_s": [0.1], "ttft_long_s": [1.5], "turn6_ttft_s": [0.08], "decode_tps": [30.0]},
        ),
        {"runtime": "llama", "error": "did not finish in 1800 s", "command": "run llama"},
    ]
    out = tmp_path / "benchmarks.md"
    compare.write_markdown(out, info, rows)
    page = out.read_text()
    row = next(line for line in page.splitlines() if line.startswith(f"| {compare.LABELS['openvino']} |"))
    assert "| 30.0 |" in row
    assert "80 ms (362 tok); ChatHistory, cache reuse not reported" in row  # no "None reused"
    assert "- openvino-genai: 2026.4.1.0" in page
    assert "- openvino: TTFT short 100 ms" in page  # its individual runs
    assert "(342 of 362 tokens reused)" in page  # ours, in the summary
    assert "failed: did not finish" in page


def _mem(anon):
    return {"rss_mb": anon + 400.0, "anon_mb": anon, "file_mb": 400.0, "graphs_mb": {}}


def test_memory_is_compared_over_the_same_steps_with_both_of_our_modes_and_their_warm_start(tmp_path):
    compare = _compare()
    ours = _row(
        "ours",
        peak_rss_mb=1160.0,  # at the end of the bench, after a 2000-token conversation no peer has
        chat_peak_rss_mb=1010.0,
        memory_chat=_mem(150.0),
        warmup_s=0.06,
        ready_s=0.94,
        from_cache=True,
    )
    lean = _row(
        "ours-low",
        peak_rss_mb=780.0,
        chat_peak_rss_mb=647.0,
        memory_chat=_mem(140.0),
        ttft_long_s=0.9,
        warmup_s=0.07,
        ready_s=0.9,
        from_cache=True,
    )
    llama = _row("llama", peak_rss_mb=745.0, memory_end=_mem(310.0))
    out = tmp_path / "benchmarks.md"
    compare.write_markdown(out, _info(), [ours, lean, llama])
    page = out.read_text().splitlines()

    def table_row(runtime):
        return next(line for line in page if line.startswith(f"| {compare.LABELS[runtime]} |"))

    assert "| 1010 MB | 150 MB |" in table_row("ours")  # the chat's peak, not the bench's last one
    assert "| 647 MB | 140 MB |" in table_row("ours-low")
    assert "| 745 MB | 310 MB |" in table_row("llama")
    said = next(line for line in page if line.startswith("Decode: ours"))
    assert 'ours peaks at 1010 MB (647 MB with "Use less memory"), the leanest peer (llama) at 745 MB' in said
    assert "ours 150 MB (140 MB with less memory), the least of the peers 310 MB (llama)" in said
    assert "answers the long prompt in 900 ms against 1.50 s" in said
    assert "Decode: ours 50.0 tok/s, 1.0× the best peer (llama" in said  # our lean row is no peer
    warm = page[page.index("## Our warm start") :]
    assert any(line.startswith("| default | 0.50 s | 0.06 s | 0.56 s | 0.94 s | yes |") for line in warm)
    assert any(
        line.startswith("| use less memory | 0.50 s | 0.07 s | 0.57 s | 0.90 s | yes |") for line in warm
    )


def test_a_peer_reads_its_own_anonymous_and_file_backed_memory_as_the_app_does():
    spec = importlib.util.spec_from_file_location("peer_worker", ROOT / "benchmarks" / "peer_worker.py")
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    from qwen_desktop.engine.memory import memory_use

    mine, app = worker.memory_now(), memory_use()
    if app is None:  # no /proc here
        assert mine is None
        return
    assert mine is not None and 0 < mine["anon_mb"] < mine["rss_mb"] and mine["file_mb"] > 0
    assert abs(mine["anon_mb"] - app.anon_mb) < 20 and abs(mine["file_mb"] - app.file_mb) < 20
