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
    # read in text mode, so "\r" arrives as "\n" (universal newlines), as a terminal would show it
    assert r.stdout == want.replace("\r\n", "\n").replace("\r", "\n") + "\n"
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
    r = cli("build-model", str(src), str(tmp_path / "m"), "--timings")
    assert r.returncode == 0, r.stderr
    assert "Built" in r.stdout and "int4" in r.stdout
    # --timings: one line per phase, in the order they ran, with seconds and a share of the whole
    phases = [line.split()[0] for line in r.stdout.splitlines()[1:]]
    assert phases[:3] == ["reading", "calibration", "decode"] and "prefill" in phases and "output" in phases
    r = cli("chat", "--model", str(tmp_path / "m"), "--prompt", "hi", "--max-tokens", "4", "--seed", "1")
    assert r.returncode == 0 and r.stdout.strip()


# Bad input on the command line (issue 25, defect 10): one line on stderr, the right exit status, and no
# traceback, whatever the flag, file or settings.


def _one_error_line(r):
    lines = r.stderr.strip().splitlines()
    assert "Traceback" not in r.stderr
    assert lines, "the error is said"
    return lines[-1]


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--context", "-100", "-100 is out of range"),
        ("--context", "200000", "out of range"),
        ("--threads", "100000", "100000 is out of range"),
        ("--threads", "-1", "out of range"),
        ("--repetition-penalty", "0", "out of range"),
        ("--temperature", "nan", "nan is out of range"),
        ("--temperature", "-1", "out of range"),
        ("--temperature", "inf", "out of range"),
        ("--top-p", "0", "out of range"),
        ("--top-p", "1.5", "out of range"),
        ("--min-p", "2", "out of range"),
        ("--seed", "-1", "-1 is out of range"),
        ("--max-tokens", "0", "out of range"),
        ("--top-k", "lots", "'lots' is not a whole number"),
    ],
)
def test_out_of_range_flags_are_usage_errors(tiny_model_dir, tmp_path, flag, value, says):
    r = cli(
        "chat",
        "--model",
        str(tiny_model_dir),
        "--prompt",
        "hi",
        f"{flag}={value}",
        env={"QWEN_DESKTOP_HOME": str(tmp_path)},
        timeout=60,
    )
    assert r.returncode == 2, r.stderr
    line = _one_error_line(r)
    assert line.startswith("qwen-desktop chat: error: argument")
    assert flag in line and says in line
    assert r.stdout == ""


def test_flags_at_the_edges_of_their_ranges_are_accepted(tiny_model_dir, tmp_path):
    r = cli(
        "chat",
        "--model",
        str(tiny_model_dir),
        "--prompt",
        "hi",
        "--threads",
        str(os.cpu_count() or 1),
        "--top-p=1",
        "--seed=0",
        "--temperature=0",
        "--repetition-penalty=0.5",
        "--max-tokens=3",
        env={"QWEN_DESKTOP_HOME": str(tmp_path)},
    )
    assert r.returncode == 0, r.stderr


def test_a_chat_template_that_fails_is_one_line_and_status_1(tiny_model_dir, tmp_path):
    import shutil

    folder = tmp_path / "bad-template"
    shutil.copytree(tiny_model_dir, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["chat_template"] = "{{ raise_exception('this template refuses every chat') }}"
    (folder / "manifest.json").write_text(json.dumps(manifest))
    r = cli(
        "chat", "--model", str(folder), "--prompt", "hi", env={"QWEN_DESKTOP_HOME": str(tmp_path / "home")}
    )
    assert r.returncode == 1
    line = _one_error_line(r)
    assert line.startswith("qwen-desktop:")
    assert "this template refuses every chat" in line


def test_make_tiny_model_where_files_cannot_go_is_one_line(tmp_path):
    r = cli("make-tiny-model", "/proc/x.gguf", env={"QWEN_DESKTOP_HOME": str(tmp_path)})
    assert r.returncode == 1
    line = _one_error_line(r)
    assert line.startswith("qwen-desktop: error: ")
    assert "/proc" in line


def test_a_models_folder_that_is_a_file_is_one_line(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    not_a_folder = tmp_path / "passwd"
    not_a_folder.write_text("root:x:0:0\n")
    (home / "settings.json").write_text(json.dumps({"models_dir": str(not_a_folder)}))
    r = cli("models", env={"QWEN_DESKTOP_HOME": str(home)})
    assert r.returncode == 1
    line = _one_error_line(r)
    assert line.startswith("qwen-desktop: error: ") and str(not_a_folder) in line


def test_settings_nested_too_deep_do_not_stop_the_models_command(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    (home / "settings.json").write_text("[" * 100_000)
    r = cli("models", "--catalog", str(tmp_path / "none.json"), env={"QWEN_DESKTOP_HOME": str(home)})
    assert "Traceback" not in r.stderr
    assert "Models in" in r.stdout
    assert list(home.glob("settings.json.corrupt-*")), "the unreadable file was kept aside"


def test_an_unexpected_error_is_one_line_with_a_log(tmp_path, monkeypatch, capsys):
    from qwen_desktop.cli import run_command

    monkeypatch.setenv("QWEN_DESKTOP_HOME", str(tmp_path))

    def buggy() -> int:
        return {}["no such key"]

    assert run_command(buggy) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("qwen-desktop: unexpected error (KeyError: 'no such key'); details are in ")
    log = tmp_path / "logs" / "cli-error.log"
    assert str(log) in err
    assert "Traceback" in log.read_text() and "buggy" in log.read_text()
