import json
import os
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

import qwen_desktop
from qwen_desktop.storage.errors import StorageError
from qwen_desktop.storage.settings import Settings, load_settings, save_settings

REPO = Path(qwen_desktop.__file__).parent.parent


def _aside_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("settings.json.corrupt-*"))


def test_missing_file_gives_defaults_without_warning(tmp_path):
    assert load_settings(tmp_path / "settings.json") == (Settings(), None)


def test_default_path_is_in_the_data_dir(qwen_home):
    custom = replace(Settings(), temperature=0.3)
    save_settings(custom)
    assert (qwen_home / "settings.json").is_file()
    assert load_settings() == (custom, None)


def test_round_trip_keeps_every_field(tmp_path):
    path = tmp_path / "nested" / "settings.json"
    custom = Settings(
        threads=1,
        context_limit=8192,
        max_tokens=256,
        temperature=0.0,
        top_p=0.95,
        top_k=0,
        min_p=0.05,
        repetition_penalty=1.1,
        seed=1234,
        system_prompt="你是一个乐于助人的助手。\nBe brief.",
        theme="dark",
        model_path="/models/qwen2.5-0.5b",
        models_dir="/models",
        auto_threads=1,
        language="zh_CN",
    )
    save_settings(custom, path)
    assert load_settings(path) == (custom, None)
    assert [p.name for p in path.parent.iterdir()] == ["settings.json"]  # no temp file left behind


def test_unknown_keys_are_ignored(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"top_k": 5, "from_a_newer_version": {"x": 1}}), encoding="utf-8")
    settings, warning = load_settings(path)
    assert warning is None
    assert settings == replace(Settings(), top_k=5)
    assert not _aside_files(tmp_path)


def test_out_of_range_values_are_clamped_silently(tmp_path):
    path = tmp_path / "settings.json"
    values = {
        "threads": 10_000,
        "context_limit": 10,
        "max_tokens": 0,
        "temperature": 9.5,
        "top_p": -1,
        "top_k": -3,
        "min_p": 2,
        "repetition_penalty": 0.5,
        "seed": -1,
        "theme": "purple",
        "model_path": "",
        "auto_threads": 0,
        "language": "  ",
    }
    path.write_text(json.dumps(values), encoding="utf-8")
    settings, warning = load_settings(path)
    assert warning is None
    assert settings == Settings(
        threads=os.cpu_count() or 1,
        context_limit=256,
        max_tokens=1,
        temperature=2.0,
        top_p=0.0,
        top_k=0,
        min_p=1.0,
        repetition_penalty=1.0,
        seed=0,
        theme="system",
        model_path=None,
        auto_threads=None,
        language="system",
    )
    assert isinstance(settings.top_p, float)  # JSON 0 or -1 still gives a float field a float


def test_wrong_types_reset_only_the_bad_fields(tmp_path):
    path = tmp_path / "settings.json"
    original = {
        "threads": "four",  # bad
        "context_limit": 2048,
        "temperature": True,  # bad: a bool is not a number here
        "top_p": 0.9,
        "top_k": 1.5,  # bad
        "seed": None,
        "system_prompt": ["not", "text"],  # bad
        "theme": "light",
        "model_path": "/m",
        "min_p": 1,  # fine: an int is a valid float
    }
    path.write_text(json.dumps(original), encoding="utf-8")
    settings, warning = load_settings(path)
    assert settings == replace(
        Settings(), context_limit=2048, top_p=0.9, theme="light", model_path="/m", min_p=1.0
    )
    assert warning is not None
    assert "\n" not in warning
    for name in ("threads", "temperature", "top_k", "system_prompt"):
        assert name in warning
    (aside,) = _aside_files(tmp_path)
    assert aside.name in warning
    assert json.loads(aside.read_text(encoding="utf-8")) == original
    # The repaired settings were written back, so the good values survive the next start.
    assert load_settings(path) == (settings, None)


@pytest.mark.parametrize(
    "content",
    [b'{"threads": 2, "top_k": ', b"\xff\xfe not utf-8", b"[1, 2, 3]", b"NaN"],
    ids=["truncated", "binary", "list", "nan"],
)
def test_corrupt_file_gives_defaults_and_is_moved_aside(tmp_path, content):
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    settings, warning = load_settings(path)
    assert settings == Settings()
    assert warning is not None
    assert "damaged" in warning
    assert "\n" not in warning
    (aside,) = _aside_files(tmp_path)
    assert aside.read_bytes() == content
    assert aside.name in warning
    assert load_settings(path) == (Settings(), None)


def test_non_finite_float_is_a_bad_field(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"temperature": Infinity, "top_k": 7}', encoding="utf-8")
    settings, warning = load_settings(path)
    assert settings == replace(Settings(), top_k=7)
    assert warning is not None
    assert "temperature" in warning


def test_two_corrupt_files_in_one_second_both_survive(tmp_path):
    path = tmp_path / "settings.json"
    for content in ("{", "}"):
        path.write_text(content, encoding="utf-8")
        load_settings(path)
    assert sorted(p.read_text(encoding="utf-8") for p in _aside_files(tmp_path)) == ["{", "}"]


def test_failed_save_leaves_the_old_file_whole(tmp_path):
    """A write that fails half-way (here: the file size limit) must not touch settings.json."""
    path = tmp_path / "settings.json"
    old = replace(Settings(), temperature=0.2, system_prompt="old")
    save_settings(old, path)
    # RLIMIT_FSIZE makes write() fail with EFBIG once the temp file passes 4 KiB: a real failed write,
    # without root. It is set in a child process so this one keeps writing normally.
    code = (
        "import resource, signal, sys\n"
        "from dataclasses import replace\n"
        "from qwen_desktop.storage.errors import StorageError\n"
        "from qwen_desktop.storage.settings import Settings, save_settings\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "try:\n"
        "    save_settings(replace(Settings(), system_prompt='x' * 100_000), sys.argv[1])\n"
        "except StorageError as e:\n"
        "    print(e)\n"
        "    sys.exit(3)\n"
    )
    if sys.platform != "linux":
        pytest.skip("RLIMIT_FSIZE/SIGXFSZ behaviour is only relied on for Linux")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env, check=False
    )
    assert result.returncode == 3, result.stderr
    assert str(path) in result.stdout
    assert load_settings(path) == (old, None)
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]


def test_save_on_a_full_disk_says_so_and_keeps_the_old_file(small_disk):
    path = small_disk / "settings.json"
    old = replace(Settings(), top_k=3)
    save_settings(old, path)
    with pytest.raises(StorageError, match="disk is full"):
        save_settings(replace(Settings(), system_prompt="y" * 400_000), path)
    assert load_settings(path) == (old, None)
    assert [p.name for p in small_disk.iterdir()] == ["settings.json"]


def test_saved_file_is_readable_json_with_every_field(tmp_path):
    path = tmp_path / "settings.json"
    save_settings(Settings(), path)
    assert json.loads(path.read_text(encoding="utf-8")) == json.loads(json.dumps(asdict(Settings())))


def test_save_clamps(tmp_path):
    path = tmp_path / "settings.json"
    save_settings(replace(Settings(), temperature=50.0), path)
    assert load_settings(path)[0].temperature == 2.0


def test_save_into_an_unwritable_place_raises_storage_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(StorageError, match="Cannot save the settings"):
        save_settings(Settings(), blocker / "settings.json")


def test_custom_presets_round_trip_and_old_files_load_without_them(tmp_path):
    from qwen_desktop.storage.settings import CustomPreset

    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"temperature": 0.3, "system_prompt": "old"}), encoding="utf-8")
    old, warning = load_settings(path)  # a file from before presets
    assert warning is None and old.presets == () and old.preset == "assistant"
    mine = (
        CustomPreset("custom-1", "Reviewer", "Review the code."),
        CustomPreset("custom-2", "诗人", "写诗。"),
    )
    save_settings(replace(old, presets=mine, preset="custom-2"), path)
    again, warning = load_settings(path)
    assert warning is None and again.presets == mine and again.preset == "custom-2"


def test_a_bad_preset_entry_is_dropped_and_the_others_kept(tmp_path):
    path = tmp_path / "settings.json"
    good = {"id": "custom-ok", "name": "Kept", "prompt": "Fine."}
    entries = [
        good,
        {"id": "custom-x", "name": 3, "prompt": "name is not text"},
        "not an object",
        {"id": "", "name": "no id", "prompt": ""},
        {"id": "custom-y", "name": "   ", "prompt": "blank name"},
        {"id": "custom-z", "name": "too long", "prompt": "x" * 40_000},
        {"id": "custom-ok", "name": "Same id again", "prompt": "dropped"},
        {"id": "custom-s", "name": "surrogate \ud800", "prompt": ""},
        None,
    ]
    path.write_text(json.dumps({"presets": entries, "top_k": 7}), encoding="utf-8")
    settings, warning = load_settings(path)
    assert [p.name for p in settings.presets] == ["Kept"] and settings.top_k == 7
    assert "presets" in warning and len(_aside_files(tmp_path)) == 1
    assert load_settings(path) == (settings, None)  # the repaired file was written back
    path.write_text(json.dumps({"presets": {"not": "a list"}, "top_k": 7}), encoding="utf-8")
    settings, warning = load_settings(path)
    assert settings.presets == () and settings.top_k == 7 and "presets" in warning
