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


def test_the_page_has_an_openvino_row_with_its_versions_and_turn6_note(tmp_path):
    compare = _compare()
    info = {
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
