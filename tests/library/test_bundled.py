"""Models that come with the app (library.bundled): found with no setting, listed after the user's own, the
default while the user has none, never written to or deleted."""

from __future__ import annotations

import os
import shutil
import sys

import pytest

from qwen_desktop.cli import main
from qwen_desktop.engine.errors import ModelError
from qwen_desktop.library import bundled
from qwen_desktop.library.bundled import BUNDLED_ENV, bundled_dirs
from qwen_desktop.library.registry import REGISTRY_FILE, Registry
from tests.conftest import snapshot


def test_the_folders_are_the_variable_then_beside_the_frozen_executable(tmp_path, monkeypatch):
    first, second, exe_dir = tmp_path / "a", tmp_path / "b", tmp_path / "app"
    for folder in (first, second, exe_dir / "models"):
        folder.mkdir(parents=True)
    monkeypatch.setenv(BUNDLED_ENV, os.pathsep.join([str(first), str(tmp_path / "missing"), str(second)]))
    monkeypatch.setattr(bundled, "DEB_MODELS", tmp_path / "no-deb")
    assert bundled_dirs() == [first, second]  # from source: only the variable (folders that exist)

    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "executable", str(exe_dir / "qwen-desktop"))
    assert bundled_dirs() == [first, second, (exe_dir / "models").resolve()]

    monkeypatch.setattr(bundled, "DEB_MODELS", exe_dir / "models")  # the .deb: the same folder, once
    monkeypatch.setenv(BUNDLED_ENV, "")
    assert bundled_dirs() == [(exe_dir / "models").resolve()]


def test_the_deb_folder_is_read_from_source_too(tmp_path, monkeypatch):
    monkeypatch.delenv(BUNDLED_ENV, raising=False)
    monkeypatch.setattr(bundled, "DEB_MODELS", tmp_path)
    assert bundled_dirs() == ([tmp_path] if sys.platform.startswith("linux") else [])


def test_a_bundled_model_is_listed_and_is_the_default_while_the_user_has_none(
    shipped, tmp_path, tiny_model_dir
):
    registry = Registry(tmp_path / "user-models")
    [model] = registry.list_models()
    assert (model.name, model.bundled, model.is_default) == ("tiny-bundled", True, True)
    assert model.folder == shipped / "tiny-bundled"
    assert "included with the app" in model.source_text
    assert registry.get_default() == model

    mine = registry.import_model(tiny_model_dir, name="mine")
    assert [(m.name, m.bundled) for m in registry.list_models()] == [("mine", False), ("tiny-bundled", True)]
    assert registry.get_default().name == "mine"  # the user's own model comes first
    registry.set_default("tiny-bundled")  # unless the user chooses the bundled one
    assert registry.get_default().name == "tiny-bundled"
    assert mine.folder.is_dir()


def test_a_bundled_model_is_never_written_to_or_deleted(shipped, tmp_path, tiny_model_dir):
    before = snapshot(shipped)
    registry = Registry(tmp_path / "user-models")
    with pytest.raises(ModelError, match=r"included with the app.*cannot be deleted"):
        registry.delete_model("tiny-bundled")
    registry.set_default("tiny-bundled")
    registry.import_model(tiny_model_dir, name="mine")
    registry.delete_model("mine")
    assert snapshot(shipped) == before
    assert not (shipped / REGISTRY_FILE).exists()
    assert (tmp_path / "user-models" / REGISTRY_FILE).is_file()


def test_a_user_model_of_the_same_name_hides_the_bundled_one(shipped, tmp_path, tiny_model_dir):
    registry = Registry(tmp_path / "user-models")
    registry.import_model(tiny_model_dir, name="tiny-bundled")
    [model] = registry.list_models()
    assert not model.bundled and model.folder.parent == tmp_path / "user-models"
    registry.delete_model("tiny-bundled")  # deletes the user's copy only
    [model] = registry.list_models()
    assert model.bundled and (shipped / "tiny-bundled").is_dir()


def test_the_variable_may_name_one_model_folder_and_a_broken_one_is_listed_as_broken(
    tmp_path, tiny_model_dir, monkeypatch
):
    single = tmp_path / "one-model"
    shutil.copytree(tiny_model_dir, single)
    damaged = tmp_path / "shelf"
    shutil.copytree(tiny_model_dir, damaged / "damaged")
    (damaged / "damaged" / "manifest.json").write_text("{not json")
    monkeypatch.setenv(BUNDLED_ENV, os.pathsep.join([str(single), str(damaged)]))
    registry = Registry(tmp_path / "user-models")
    models = registry.list_models()
    assert [(m.name, m.bundled, m.broken) for m in models] == [
        ("one-model", True, False),
        ("damaged", True, True),
    ]
    assert registry.get_default().name == "one-model"
    with pytest.raises(ModelError, match="cannot be deleted"):
        registry.delete_model("damaged")
    assert (damaged / "damaged").is_dir()


def test_an_explicit_empty_list_leaves_bundled_models_out(shipped, tmp_path):
    assert Registry(tmp_path / "user-models", bundled=[]).list_models() == []


def test_the_cli_chats_with_the_bundled_model_on_a_fresh_home_with_no_import(
    shipped, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("QWEN_DESKTOP_HOME", str(tmp_path / "fresh-home"))
    before = snapshot(shipped)
    assert main(["chat", "--prompt", "hi", "--temperature", "0", "--max-tokens", "4", "--threads", "1"]) == 0
    assert capsys.readouterr().out.strip()
    assert main(["models"]) == 0
    out = capsys.readouterr().out
    assert "tiny-bundled" in out and "included with the app" in out
    assert not list((tmp_path / "fresh-home" / "models").iterdir())  # nothing was imported
    assert snapshot(shipped) == before
