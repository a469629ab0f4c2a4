"""Installed models: download -> verify -> build -> register, import from disk, delete, default; and the CLI.

The catalogue's real repository and file names are served by the local fake hub (tests/hubserver.py), with
the tiny GGUF model as their content, so ``qwen-desktop download qwen2.5-0.5b-instruct`` runs unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import huggingface_hub
import pytest

import qwen_desktop
from qwen_desktop.cli import main
from qwen_desktop.convert.builder import build_model
from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.generate import GREEDY, SamplingParams
from qwen_desktop.engine.manifest import read_manifest
from qwen_desktop.engine.model_files import load_model_files
from qwen_desktop.library import registry
from qwen_desktop.library.catalog import find_entry, load_catalog
from qwen_desktop.library.download import (
    ChecksumError,
    DownloadCancelledError,
    RetryPolicy,
    offline_message,
    part_path,
)
from qwen_desktop.library.registry import DOWNLOADS, INSTALL_FILE, REGISTRY_FILE, STAGING, Registry
from tests.hubserver import HubServer, serve_catalog

NAME = "qwen2.5-0.5b-instruct"
ENTRY = find_entry(NAME)
PART = Path(DOWNLOADS) / NAME / (ENTRY.files[0] + ".part")
FAST = RetryPolicy(attempts=3, first_wait=0.01, max_wait=0.05)
ROOT = Path(qwen_desktop.__file__).resolve().parent.parent


@pytest.fixture
def hub(tiny_gguf):
    server = HubServer()
    serve_catalog(server, tiny_gguf)
    with server:
        yield server
    huggingface_hub.close_session()


@pytest.fixture
def models(tmp_path) -> Registry:
    return Registry(tmp_path / "models")


def say_hello(folder: Path) -> str:
    """The model answers a chat message (the tiny model's words are random, but they are words)."""
    engine = ChatEngine(folder, threads=1, context_limit=256, warm_up=False)
    text, finished = engine.complete("hello", SamplingParams(**{**GREEDY.__dict__, "max_tokens": 6}))
    assert finished.stats.generated_tokens > 0
    return text


def leftovers(models: Registry) -> list[str]:
    """Anything but finished model folders and registry.json (staging folders, partial files)."""
    root = models.models_dir
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*") if STAGING in p.parts or p.name.endswith(".partial")
    )


# ------------------------------------------------------------------- install from the hub


def test_install_downloads_verifies_builds_registers_and_the_model_chats(hub, models, tiny_gguf):
    downloads, stages = [], []
    model = models.install_from_download(
        NAME,
        endpoint=hub.endpoint,
        retry=FAST,
        on_download=downloads.append,
        on_build=lambda stage, done, total: stages.append(stage),
    )

    gguf = tiny_gguf.read_bytes()
    assert model.name == NAME and model.display_name == f"{ENTRY.display_name} · int4"
    assert load_model_files(model.folder).display_name == model.display_name  # the window says the same
    assert model.precision == "int4" and model.is_default
    assert model.checksum == hashlib.sha256(gguf).hexdigest()
    assert model.source["commit"] == hub.repos[ENTRY.repo].commit
    assert model.source_text.startswith(f"{ENTRY.repo}/{ENTRY.files[0]} @ ")
    assert downloads[-1].done == downloads[-1].total == len(gguf)
    assert stages[0] == "reading" and stages[-1] == "done"
    assert models.list_models() == [model]
    assert models.get_default() == model
    assert read_manifest(model.folder)["source"]["files"][0]["sha256"] == model.checksum
    record = json.loads((model.folder / INSTALL_FILE).read_text())
    assert record["source"]["repo"] == ENTRY.repo and record["license"] == "Apache-2.0"
    index = json.loads((models.models_dir / REGISTRY_FILE).read_text())
    assert index["default"] == NAME and index["models"][0]["checksum"] == model.checksum
    # The GGUF is not needed once built; no staging or partial files are left behind.
    assert not (models.models_dir / DOWNLOADS).exists() and leftovers(models) == []
    assert say_hello(model.folder)


def test_a_checksum_mismatch_installs_nothing(hub, models):
    hub.corrupt = True
    with pytest.raises(ChecksumError):
        models.install_from_download(NAME, endpoint=hub.endpoint, retry=FAST)
    assert models.list_models() == [] and models.get_default() is None
    assert not (models.models_dir / NAME).exists()
    assert not (models.models_dir / PART).exists() and leftovers(models) == []


def test_cancel_during_the_download_then_install_again_resumes(hub, models):
    cancel = threading.Event()

    def stop_midway(p):
        if p.done >= 100_000:
            cancel.set()

    with pytest.raises(DownloadCancelledError):
        models.install_from_download(NAME, endpoint=hub.endpoint, on_download=stop_midway, cancel=cancel)
    kept = (models.models_dir / PART).stat().st_size
    assert kept >= 100_000 and models.list_models() == []

    model = models.install_from_download(NAME, endpoint=hub.endpoint)
    assert hub.file_requests()[-1].range == f"bytes={kept}-"
    assert models.get_default() == model


def test_cancel_during_the_build_keeps_the_verified_download(hub, models):
    cancel = threading.Event()

    def stop_in_build(stage, done, total):
        if stage.startswith("layer"):
            cancel.set()

    with pytest.raises(DownloadCancelledError, match="building"):
        models.install_from_download(NAME, endpoint=hub.endpoint, on_build=stop_in_build, cancel=cancel)
    assert models.list_models() == [] and leftovers(models) == []
    assert (models.models_dir / DOWNLOADS / NAME / ENTRY.files[0]).is_file()
    gets = len(hub.file_requests())

    models.install_from_download(NAME, endpoint=hub.endpoint)
    assert len(hub.file_requests()) == gets  # verified on disk, not downloaded again
    assert models.is_installed(NAME)


def test_another_precision_installs_beside_the_first_and_a_second_install_is_refused(hub, models):
    models.install_from_download(NAME, endpoint=hub.endpoint)
    int8 = models.install_from_download(NAME, endpoint=hub.endpoint, precision="int8")
    assert int8.name == f"{NAME}-int8" and int8.precision == "int8" and not int8.is_default
    requests = len(hub.requests)
    with pytest.raises(ModelError, match="already installed"):
        models.install_from_download(NAME, endpoint=hub.endpoint)
    assert len(hub.requests) == requests  # refused before any request


def test_a_prebuilt_onnx_export_installs_as_it_is_and_chats(hub, models, tmp_path, tiny_hf):
    plain = build_model(tiny_hf, tmp_path / "plain", style="plain").folder
    files = {
        "onnx/model_q4.onnx": (plain / "model.onnx").read_bytes(),
        "config.json": (tiny_hf / "config.json").read_bytes(),
        "generation_config.json": b"{}",
        "tokenizer.json": (tiny_hf / "tokenizer.json").read_bytes(),
        "tokenizer_config.json": (tiny_hf / "tokenizer_config.json").read_bytes(),
    }
    entry = find_entry("qwen2.5-0.5b-instruct-onnx")
    hub.add_repo(entry.repo, files)
    seen = []
    model = models.install_from_download(entry.name, endpoint=hub.endpoint, on_download=seen.append)

    assert seen[-1].done == seen[-1].total == sum(len(b) for b in files.values())
    manifest = read_manifest(model.folder)
    assert manifest["style"] == "plain" and manifest["files"]["model"] == "onnx/model_q4.onnx"
    assert model.source["commit"] == hub.repos[entry.repo].commit
    assert model.checksum == hashlib.sha256(files["onnx/model_q4.onnx"]).hexdigest()
    # Every file was fetched at the commit the listing named, so they all belong together.
    commit = hub.repos[entry.repo].commit
    assert all(f"/resolve/{commit}/" in r.path for r in hub.requests if r.method == "HEAD")
    assert say_hello(model.folder)


def _export_files(tmp_path, tiny_hf, **config_changes) -> dict[str, bytes]:
    plain = tmp_path / "plain"
    if not plain.exists():
        build_model(tiny_hf, plain, style="plain")
    config = json.loads((tiny_hf / "config.json").read_text()) | config_changes
    return {
        "onnx/model_q4.onnx": (plain / "model.onnx").read_bytes(),
        "config.json": json.dumps(config).encode(),
        "generation_config.json": b"{}",
        "tokenizer.json": (tiny_hf / "tokenizer.json").read_bytes(),
        "tokenizer_config.json": (tiny_hf / "tokenizer_config.json").read_bytes(),
    }


def _graph_gets(hub) -> int:
    return sum(r.path.endswith("model_q4.onnx") for r in hub.file_requests())


def test_an_export_with_impossible_sizes_is_refused_before_its_files_move(hub, models, tmp_path, tiny_hf):
    entry = find_entry("qwen2.5-0.5b-instruct-onnx")
    hub.add_repo(entry.repo, _export_files(tmp_path, tiny_hf, num_attention_heads=0))
    with pytest.raises(ModelError, match=r"impossible sizes.*num_heads"):
        models.install_from_download(entry.name, endpoint=hub.endpoint)
    kept = models.models_dir / DOWNLOADS / entry.name
    assert (kept / "onnx" / "model_q4.onnx").is_file()  # the verified download stays for the next try
    assert leftovers(models) == [] and models.list_models() == []

    hub.add_repo(entry.repo, _export_files(tmp_path, tiny_hf))  # the repository is fixed
    gets = _graph_gets(hub)
    model = models.install_from_download(entry.name, endpoint=hub.endpoint)
    assert _graph_gets(hub) == gets  # the graph was not fetched again
    assert read_manifest(model.folder)["config"]["num_heads"] > 0 and say_hello(model.folder)


def test_a_failure_after_the_move_puts_the_downloads_back(hub, models, tmp_path, tiny_hf):
    entry = find_entry("qwen2.5-0.5b-instruct-onnx")
    files = _export_files(tmp_path, tiny_hf)
    hub.add_repo(entry.repo, files)
    total = sum(len(b) for b in files.values())

    def squat(p):  # when the last byte arrives, something else takes the model's folder name
        if p.done == total:
            (models.models_dir / entry.name).mkdir(exist_ok=True)

    with pytest.raises(ModelError, match="appeared while installing"):
        models.install_from_download(entry.name, endpoint=hub.endpoint, on_download=squat)
    kept = models.models_dir / DOWNLOADS / entry.name
    assert sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file()) == sorted(files)
    assert leftovers(models) == []


def test_an_install_killed_after_the_move_reuses_the_staged_files(hub, models, tmp_path, tiny_hf):
    entry = find_entry("qwen2.5-0.5b-instruct-onnx")
    hub.add_repo(entry.repo, _export_files(tmp_path, tiny_hf, num_attention_heads=0))
    with pytest.raises(ModelError):
        models.install_from_download(entry.name, endpoint=hub.endpoint)
    # What a kill between the move and the rename into place leaves: the files in staging.
    kept = models.models_dir / DOWNLOADS / entry.name
    staged = models.models_dir / STAGING / entry.name
    staged.parent.mkdir(parents=True)
    shutil.move(kept, staged)
    hub.add_repo(entry.repo, _export_files(tmp_path, tiny_hf))
    gets = _graph_gets(hub)
    model = models.install_from_download(entry.name, endpoint=hub.endpoint)
    assert _graph_gets(hub) == gets
    assert model.name == entry.name and leftovers(models) == []


# ------------------------------------------------------------------- import, delete, default


def test_import_a_gguf_file_a_hugging_face_folder_and_a_built_folder(
    models, tiny_gguf, tiny_hf, tiny_model_dir
):
    from_gguf = models.import_model(tiny_gguf)
    from_hf = models.import_model(tiny_hf, precision="int8")
    copied = models.import_model(tiny_model_dir, name="copied")

    assert (from_gguf.name, from_gguf.precision) == ("tiny", "int4")
    assert from_gguf.display_name == "Tiny · int4" == load_model_files(from_gguf.folder).display_name
    assert copied.display_name == load_model_files(copied.folder).display_name  # its own manifest's name
    assert (from_hf.name, from_hf.precision) == ("tiny-hf", "int8")
    assert copied.checksum == read_manifest(tiny_model_dir)["source"]["files"][0]["sha256"]
    assert from_gguf.checksum == hashlib.sha256(tiny_gguf.read_bytes()).hexdigest()
    assert from_gguf.source == {"kind": "import", "path": str(tiny_gguf.resolve())}
    assert [m.name for m in models.list_models()] == ["copied", "tiny", "tiny-hf"]
    assert models.get_default().name == "tiny"  # the first one installed
    assert say_hello(copied.folder)
    assert leftovers(models) == []


def test_import_a_hub_onnx_export_folder(models, tmp_path, tiny_hf):
    export = tmp_path / "Qwen2.5-Tiny-ONNX"
    (export / "onnx").mkdir(parents=True)
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny_hf / name, export / name)
    plain = build_model(tiny_hf, tmp_path / "plain", style="plain").folder
    shutil.copy(plain / "model.onnx", export / "onnx" / "model_q4.onnx")

    model = models.import_model(export)
    assert model.name == "qwen2.5-tiny-onnx" and model.precision == "int4" and model.style == "plain"
    assert say_hello(model.folder)


@pytest.mark.parametrize("what", ["missing", "empty-folder", "not-a-gguf"])
def test_import_refuses_what_is_not_a_model(models, tmp_path, what):
    path = tmp_path / what
    if what == "empty-folder":
        path.mkdir()
    elif what == "not-a-gguf":
        path = tmp_path / "notes.gguf"
        path.write_text("hello")
    with pytest.raises(ModelError) as info:
        models.import_model(path)
    assert "\n" not in str(info.value)
    assert models.list_models() == [] and leftovers(models) == []


def test_names_must_be_new_and_well_formed(models, tiny_gguf):
    models.import_model(tiny_gguf, name="mine")
    with pytest.raises(ModelError, match="already installed"):
        models.import_model(tiny_gguf, name="mine")
    with pytest.raises(ModelError, match="cannot name a model"):
        models.import_model(tiny_gguf, name="../escape")


def test_set_default_and_delete(models, tiny_gguf):
    models.import_model(tiny_gguf, name="a")
    models.import_model(tiny_gguf, name="b")
    assert models.get_default().name == "a"
    models.set_default("b")
    assert models.get_default().name == "b"
    assert [m.name for m in models.list_models() if m.is_default] == ["b"]
    assert json.loads((models.models_dir / REGISTRY_FILE).read_text())["default"] == "b"

    registry.delete_model(models.models_dir, "b")  # the module-level shorthands work on a folder
    assert not (models.models_dir / "b").exists()
    assert registry.get_default(models.models_dir).name == "a"
    assert models.get_default().name == "a"  # the default falls back to what is left
    assert not any(p.name.startswith(".trash") for p in models.models_dir.iterdir())
    with pytest.raises(ModelError, match="no installed model"):
        models.delete_model("b")
    with pytest.raises(ModelError, match="no installed model"):
        models.set_default("zzz")


def test_only_complete_folders_are_listed(models, tiny_gguf):
    models.import_model(tiny_gguf, name="good")
    (models.models_dir / "half-copied").mkdir()
    (models.models_dir / STAGING / "in-progress").mkdir(parents=True)
    (models.models_dir / "damaged").mkdir()
    (models.models_dir / "damaged" / "manifest.json").write_text("{not json")
    (models.models_dir / REGISTRY_FILE).unlink()  # registry.json lost: the folders are still found
    listed = models.list_models()
    assert [m.name for m in listed] == ["damaged", "good"]
    assert [m.name for m in listed if not m.broken] == ["good"]
    assert "manifest is corrupt" in listed[0].problem
    assert models.get_default().name == "good"  # a broken folder is never the default


def test_a_model_whose_manifest_lists_its_sources_badly_is_still_listed(models, tiny_gguf):
    # A copied-in folder (no install.json) whose hand-edited manifest has a malformed source list: the list
    # of models names it without a checksum instead of failing for every model.
    models.import_model(tiny_gguf, name="good")
    shutil.copytree(models.models_dir / "good", models.models_dir / "edited")
    (models.models_dir / "edited" / "install.json").unlink()
    manifest = json.loads((models.models_dir / "edited" / "manifest.json").read_text())
    manifest["source"] = {"files": "model.gguf"}
    (models.models_dir / "edited" / "manifest.json").write_text(json.dumps(manifest))
    listed = {m.name: m for m in models.list_models()}
    assert not listed["edited"].broken and listed["edited"].checksum == ""
    assert listed["good"].checksum


BAD_MANIFESTS = [
    "[]",
    '{"format": "qwen-desktop-model", "format_version": "abc"}',
    '{"format": "qwen-desktop-model", "format_version": null}',
    '"manifest"',
    "[" * 100_000,
]


@pytest.mark.parametrize("text", BAD_MANIFESTS, ids=["list", "version-abc", "version-null", "string", "deep"])
def test_a_bad_manifest_is_listed_as_broken_and_deleted_through_the_cli(tmp_path, capsys, tiny_gguf, text):
    folder = tmp_path / "models"
    assert main(["import", str(tiny_gguf), "--name", "good", "--dir", str(folder)]) == 0
    (folder / "bad").mkdir()
    (folder / "bad" / "manifest.json").write_text(text)
    with pytest.raises(ModelError, match="manifest"):
        read_manifest(folder / "bad")
    capsys.readouterr()

    assert main(["models", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.lstrip("* ").startswith("bad "))
    assert "BROKEN" in row and "qwen-desktop models --delete bad" in row
    assert any(line.startswith("*") and " good " in line for line in out.splitlines())
    assert main(["models", "--set-default", "bad", "--dir", str(folder)]) == 1
    assert "bad cannot be the default" in capsys.readouterr().err

    assert main(["models", "--delete", "bad", "--dir", str(folder)]) == 0
    assert not (folder / "bad").exists()
    assert [m.name for m in Registry(folder).list_models()] == ["good"]


# ------------------------------------------------------------------- the CLI, in process


def test_cli_download_then_models_lists_it(hub, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    folder = tmp_path / "models"
    assert main(["download", NAME, "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"Installed {NAME} (int4" in out and "the default model" in out

    assert main(["models", "--dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert f"Models in {folder}" in out
    row = next(line for line in out.splitlines() if NAME in line and "int4" in line)
    assert row.startswith("*") and hub.repos[ENTRY.repo].commit[:10] in row
    assert "qwen2.5-1.5b-instruct" in out.split("Available to download")[1]


def test_cli_catalog_option_points_a_name_at_another_file(hub, tmp_path, monkeypatch, capsys, tiny_gguf):
    hub.add_repo("test/Tiny-GGUF", {"tiny.gguf": tiny_gguf.read_bytes()})
    catalog = json.loads((ROOT / "qwen_desktop" / "data" / "catalog.json").read_text())
    catalog["models"][0].update(repo="test/Tiny-GGUF", files=["tiny.gguf"])
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog))
    assert load_catalog(path)[0].repo == "test/Tiny-GGUF"

    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    assert main(["download", NAME, "--dir", str(tmp_path / "m"), "--catalog", str(path)]) == 0
    assert "test/Tiny-GGUF/tiny.gguf" in capsys.readouterr().out


def test_cli_models_defaults_to_the_data_folder_and_manages_models(tmp_path, monkeypatch, capsys, tiny_gguf):
    monkeypatch.setenv("QWEN_DESKTOP_HOME", str(tmp_path / "home"))
    assert main(["import", str(tiny_gguf), "--name", "one"]) == 0
    assert main(["import", str(tiny_gguf), "--name", "two"]) == 0
    assert main(["models", "--set-default", "two"]) == 0
    out = capsys.readouterr().out
    assert f"Models in {tmp_path / 'home' / 'models'}" in out
    assert any(line.startswith("*") and " two " in line for line in out.splitlines())
    assert main(["models", "--delete", "two"]) == 0
    assert main(["models", "--delete", "two"]) == 1
    assert "no installed model is called 'two'" in capsys.readouterr().err


def test_cli_offline_message(tmp_path, monkeypatch, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    assert main(["download", NAME, "--dir", str(tmp_path)]) == 1
    assert offline_message() in capsys.readouterr().err


# ------------------------------------------------------------------- the CLI as a process: kill, Ctrl-C, resume


def run_cli(hub, folder, **popen):
    env = {**os.environ, "HF_ENDPOINT": hub.endpoint, "QWEN_DESKTOP_HOME": str(folder.parent / "home")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, "-m", "qwen_desktop", "download", NAME, "--dir", str(folder)]
    return subprocess.Popen(cmd, env=env, cwd=ROOT, **popen)


def wait_for_part(path: Path, size: int, proc) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if path.is_file() and path.stat().st_size >= size:
            return path.stat().st_size
        time.sleep(0.02)
    raise AssertionError(f"{path} never reached {size} bytes (exit {proc.poll()})")


def finish(hub, folder) -> str:
    hub.rate = None
    with run_cli(hub, folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    return out


def test_cli_killed_half_way_then_run_again_resumes(hub, tmp_path):
    folder = tmp_path / "models"
    hub.rate = 100_000  # bytes/s: the tiny file takes ~5 s, time enough to kill the process mid-way
    with run_cli(hub, folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        wait_for_part(folder / PART, 60_000, proc)
        proc.kill()
    kept = (folder / PART).stat().st_size
    assert proc.returncode == -signal.SIGKILL and 60_000 <= kept < len(
        hub.repos[ENTRY.repo].files[ENTRY.files[0]]
    )

    out = finish(hub, folder)
    assert f"Installed {NAME}" in out
    assert hub.file_requests()[-1].range == f"bytes={kept}-"
    assert Registry(folder).get_default().name == NAME


def test_cli_ctrl_c_pauses_and_the_next_run_resumes(hub, tmp_path):
    folder = tmp_path / "models"
    hub.rate = 100_000
    with run_cli(hub, folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        wait_for_part(folder / PART, 30_000, proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert "paused" in err and "Run the same command again to resume" in err
    kept = (folder / PART).stat().st_size
    assert kept >= 30_000

    finish(hub, folder)
    assert hub.file_requests()[-1].range == f"bytes={kept}-"
    assert part_path(folder / DOWNLOADS / NAME / ENTRY.files[0]).exists() is False
