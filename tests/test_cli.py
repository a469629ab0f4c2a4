"""The command line as a user runs it: one-shot chat, interactive chat, bench, build-model."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.generate import SamplingParams, TextPiece


def cli(*args, input_text=None, env=None, timeout=180):
    return subprocess.run(
        [sys.executable, "-m", "qwen_desktop", *args],
        capture_output=True,
        text=True,
        input=input_text,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def expected_answer(folder, messages, max_tokens):
    engine = ChatEngine(folder, threads=1)
    params = SamplingParams(temperature=0.0, max_tokens=max_tokens)
    return "".join(ev.text for ev in engine.chat(messages, params) if isinstance(ev, TextPiece))


def test_one_shot_prints_only_the_answer(tiny_model_dir):
    r = cli(
        "chat",
        "--model",
        str(tiny_model_dir),
        "--prompt",
        "Hello there",
        "--temperature",
        "0",
        "--max-tokens",
        "12",
    )
    assert r.returncode == 0, r.stderr
    want = expected_answer(
        tiny_model_dir,
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Hello there"},
        ],
        12,
    )
    assert want
    assert r.stdout == want + "\n"
    assert "Traceback" not in r.stderr


def test_one_shot_with_a_missing_model_is_one_clear_line(tmp_path):
    r = cli("chat", "--model", str(tmp_path / "nope"), "--prompt", "hi")
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"qwen-desktop: error: model folder {tmp_path / 'nope'} does not exist"
    ]
    assert r.stdout == ""


def test_interactive_chat_keeps_history_and_commands(tiny_model_dir):
    script = "Hello\n/reset\nSecond question\n/quit\n"
    r = cli(
        "chat", "--model", str(tiny_model_dir), "--temperature", "0", "--max-tokens", "6", input_text=script
    )
    assert r.returncode == 0, r.stderr
    assert "[conversation cleared]" in r.stderr
    assert r.stderr.count("tokens/s]") == 2  # one stats line per answer
    # after /reset, the second answer is the same as a fresh conversation's
    fresh = expected_answer(
        tiny_model_dir,
        [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Second question"},
        ],
        6,
    )
    assert fresh in r.stdout


@pytest.mark.slow
def test_bench_json_reports_every_figure(tiny_model_dir):
    r = cli(
        "bench",
        "--model",
        str(tiny_model_dir),
        "--runs",
        "1",
        "--decode-tokens",
        "8",
        "--json",
        "--threads",
        "1",
    )
    assert r.returncode == 0, r.stderr
    figures = json.loads(r.stdout)
    for key in (
        "load_s",
        "ttft_short_s",
        "ttft_typed_s",
        "ttft_long_s",
        "decode_tps",
        "sampled_decode_tps",
        "turn6_ttft_s",
        "peak_rss_mb",
        "prefill_tps",
        "long_context_decode_tps",
    ):
        assert figures[key] > 0, key
    # the tiny model holds 512 tokens: the long conversation fills what the reply leaves
    assert 300 < figures["long_context_tokens"] <= 512 - 8
    assert figures["turn6_reused_tokens"] > 0  # turn 6 reused the earlier turns' cache
    # the short question read ahead up to its last word: only the rest was prefilled
    assert (
        figures["short_prompt_tokens"] // 2 < figures["typed_reused_tokens"] < figures["short_prompt_tokens"]
    )
    assert figures["long_prompt_tokens"] > 400


def test_sweep_threads_names_the_fastest(tiny_model_dir):
    r = cli("bench", "--model", str(tiny_model_dir), "--sweep-threads", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    speeds = {int(k): v for k, v in doc["decode_tps_by_threads"].items()}
    assert set(speeds) == set(range(1, (os.cpu_count() or 1) + 1))
    assert all(v > 0 for v in speeds.values())
    assert speeds[doc["fastest"]] >= max(speeds.values()) - 0.05  # ties (to 0.1 tok/s) go to fewer threads


def test_build_model_then_chat_end_to_end(tmp_path):
    src = tmp_path / "t.gguf"
    assert cli("make-tiny-model", str(src)).returncode == 0
    r = cli("build-model", str(src), str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert "Built" in r.stdout and "int4" in r.stdout
    r = cli("chat", "--model", str(tmp_path / "m"), "--prompt", "hi", "--max-tokens", "4", "--seed", "1")
    assert r.returncode == 0 and r.stdout.strip()
