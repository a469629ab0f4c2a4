"""Every bad input to ``qwen-desktop build-model`` gets one clear line and a non-zero exit, never a traceback,
and leaves nothing half-made behind."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from qwen_desktop.cli import main
from qwen_desktop.convert.tiny import write_gguf


def build(capsys, src, out, *extra) -> tuple[int, str]:
    code = main(["build-model", str(src), str(out), *extra])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("qwen-desktop: error:")]
    assert "Traceback" not in err
    assert len(lines) == 1, err
    return code, lines[0]


def assert_nothing_left(out: Path) -> None:
    assert not out.exists()
    assert not any(p.name.startswith(f".{out.name}") for p in out.parent.iterdir())


def test_truncated_gguf(tmp_path, capsys, tiny_gguf):
    bad = tmp_path / "half.gguf"
    data = tiny_gguf.read_bytes()
    bad.write_bytes(data[: len(data) // 2])
    code, msg = build(capsys, bad, tmp_path / "out")
    assert code == 1 and "truncated" in msg and "half.gguf" in msg
    assert_nothing_left(tmp_path / "out")


def test_file_that_is_not_gguf(tmp_path, capsys):
    bad = tmp_path / "notes.gguf"
    bad.write_bytes(b"this is not a model at all" * 100)
    code, msg = build(capsys, bad, tmp_path / "out")
    assert code == 1 and "not a GGUF file" in msg


def test_corrupt_gguf_header(tmp_path, capsys, tiny_gguf):
    bad = tmp_path / "garbled.gguf"
    data = bytearray(tiny_gguf.read_bytes())
    data[8:24] = b"\xff" * 16  # tensor and metadata counts become absurd
    bad.write_bytes(bytes(data))
    code, msg = build(capsys, bad, tmp_path / "out")
    assert code == 1 and ("corrupt" in msg or "truncated" in msg)


def test_unknown_tensor_type(tmp_path, capsys, tiny_gguf):
    data = bytearray(tiny_gguf.read_bytes())
    name = b"blk.0.attn_q.weight"
    at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)
    n_dims = struct.unpack_from("<I", data, at)[0]
    struct.pack_into("<I", data, at + 4 + 8 * n_dims, 200)  # a tensor type id no GGUF version defines
    bad = tmp_path / "newtype.gguf"
    bad.write_bytes(bytes(data))
    code, msg = build(capsys, bad, tmp_path / "out")
    assert code == 1 and "unknown tensor type" in msg and "200" in msg


def test_unsupported_architecture_is_named(tmp_path, capsys, tiny_cfg, tiny_weights, tiny_tokenizer, tiny_hf):
    g = write_gguf(tmp_path / "llama.gguf", tiny_cfg, tiny_weights, tiny_tokenizer, architecture="llama")
    code, msg = build(capsys, g, tmp_path / "out")
    assert code == 1 and "'llama'" in msg and "not supported" in msg
    folder = tmp_path / "mistral"
    shutil.copytree(tiny_hf, folder)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["model_type"] = "mistral"
    (folder / "config.json").write_text(json.dumps(cfg))
    code, msg = build(capsys, folder, tmp_path / "out2")
    assert code == 1 and "'mistral'" in msg


def test_gguf_without_tokenizer(tmp_path, capsys, tiny_cfg, tiny_weights, tiny_tokenizer):
    g = write_gguf(tmp_path / "notok.gguf", tiny_cfg, tiny_weights, tiny_tokenizer, with_tokenizer=False)
    code, msg = build(capsys, g, tmp_path / "out")
    assert code == 1 and "no tokenizer" in msg


@pytest.mark.parametrize("missing", ["config.json", "tokenizer.json", "model.safetensors"])
def test_hf_folder_missing_a_file(tmp_path, capsys, tiny_hf, missing):
    folder = tmp_path / "m"
    shutil.copytree(tiny_hf, folder)
    (folder / missing).unlink()
    code, msg = build(capsys, folder, tmp_path / "out")
    assert code == 1
    assert {"config.json": "config.json is missing", "tokenizer.json": "tokenizer.json is missing"}.get(
        missing, "no *.safetensors"
    ) in msg


def test_missing_tensor(tmp_path, capsys, tiny_cfg, tiny_weights, tiny_tokenizer):
    weights = dict(tiny_weights)
    del weights["model.layers.1.mlp.up_proj.weight"]
    g = write_gguf(tmp_path / "holes.gguf", tiny_cfg, weights, tiny_tokenizer)
    code, msg = build(capsys, g, tmp_path / "out")
    assert code == 1 and "model.layers.1.mlp.up_proj.weight is missing" in msg


def test_source_that_does_not_exist(tmp_path, capsys):
    code, msg = build(capsys, tmp_path / "nope.gguf", tmp_path / "out")
    assert code == 1 and "no such file" in msg


def test_output_that_exists_is_not_touched(tmp_path, capsys, tiny_gguf):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    code, msg = build(capsys, tiny_gguf, out)
    assert code == 1 and "already exists" in msg
    assert (out / "keep.txt").read_text() == "mine"


def test_output_under_a_file(tmp_path, capsys, tiny_gguf):
    (tmp_path / "afile").write_text("x")
    code, msg = build(capsys, tiny_gguf, tmp_path / "afile" / "out")
    assert code == 1 and "cannot write" in msg


@contextlib.contextmanager
def tmpfs(path: Path, options: str):
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    path.mkdir()
    r = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, check=False
    )
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def test_disk_full(tmp_path, capsys, tiny_gguf):
    with tmpfs(tmp_path / "small", "size=96k") as small:
        out = small / "model"
        code, msg = build(capsys, tiny_gguf, out, "--precision", "fp32")
        assert code == 1 and "not enough disk space" in msg
        assert list(small.iterdir()) == []  # the partial folder was removed


def test_read_only_output(tmp_path, capsys, tiny_gguf):
    with tmpfs(tmp_path / "ro", "size=1m,ro") as ro:
        code, msg = build(capsys, tiny_gguf, ro / "model")
        assert code == 1 and "cannot write" in msg and "Read-only" in msg


def test_cli_exits_non_zero_without_traceback_in_a_real_process(tmp_path):
    bad = tmp_path / "x.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 3)
    r = subprocess.run(
        [sys.executable, "-m", "qwen_desktop", "build-model", str(bad), str(tmp_path / "o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 1
    assert r.stderr.strip().splitlines()[-1].startswith("qwen-desktop: error: x.gguf:")
    assert "Traceback" not in r.stderr
