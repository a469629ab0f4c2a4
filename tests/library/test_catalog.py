"""The model catalogue: the packaged one is complete, a mirror's file replaces it (``--catalog``,
then ``$QWEN_DESKTOP_CATALOG``), and a broken catalogue file is one line naming the file, never a crash."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.library.catalog import (
    CATALOG_ENV,
    CATALOG_FORMAT,
    default_entry,
    find_entry,
    load_app_catalog,
    load_catalog,
)


def write(path, doc):
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def mirror(name="mirror-model", **extra):
    entry = {"name": name, "repo": "me/mirror", "files": ["m.gguf"], "approx_bytes": 1000} | extra
    return {"format": CATALOG_FORMAT, "format_version": 1, "default": name, "models": [entry]}


def test_the_packaged_catalogue_offers_the_default_model_with_sizes_and_licenses():
    entries = load_catalog()
    names = [e.name for e in entries]
    assert len(names) == len(set(names)) >= 2
    default = default_entry(entries)
    assert default.name == "qwen2.5-0.5b-instruct" and default.is_default
    assert all(e.approx_bytes and e.license for e in entries)
    assert find_entry(default.name, entries) is default


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(ModelError, match=r"unknown model 'nope'.*qwen2\.5-0\.5b-instruct"):
        find_entry("nope")


def test_the_flag_beats_the_environment_which_beats_the_packaged_file(tmp_path, monkeypatch):
    flag = write(tmp_path / "flag.json", mirror("from-flag"))
    env = write(tmp_path / "env.json", mirror("from-env"))
    monkeypatch.delenv(CATALOG_ENV, raising=False)
    assert "qwen2.5-0.5b-instruct" in [e.name for e in load_app_catalog()]
    monkeypatch.setenv(CATALOG_ENV, str(env))
    assert [e.name for e in load_app_catalog()] == ["from-env"]
    assert [e.name for e in load_app_catalog(flag)] == ["from-flag"]
    assert [e.name for e in load_app_catalog(str(flag))] == ["from-flag"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("not json at all", "not valid JSON"),
        ([], "not a Qwen Desktop catalogue"),
        ({"format": "something-else"}, "not a Qwen Desktop catalogue"),
        (mirror() | {"format_version": 2}, "newer Qwen Desktop"),
        (mirror() | {"format_version": "abc"}, "format_version"),
        ({**mirror(), "models": [mirror()["models"][0]] * 2}, "appears twice"),
        (mirror(files=[]), "no files"),
        (mirror(kind="exe"), "unknown kind 'exe'"),
        (mirror(kind="onnx", model_file="other.onnx"), "model_file must be one of its files"),
        ({**mirror(), "models": [{"name": "x"}]}, "incomplete"),
        ({**mirror(), "models": "all of them"}, "models"),
        (mirror(approx_bytes="big"), "incomplete"),
        (mirror(files="m.gguf"), "files is not a list"),
    ],
)
def test_a_broken_catalogue_is_one_line_naming_the_file(tmp_path, doc, message):
    path = tmp_path / "bad.json"
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc), encoding="utf-8")
    with pytest.raises(ModelError, match=message) as caught:
        load_catalog(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_catalogue_file_says_so(tmp_path):
    with pytest.raises(ModelError, match="cannot read the catalogue"):
        load_catalog(tmp_path / "absent.json")


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    entry=st.dictionaries(
        st.sampled_from(
            ["name", "repo", "files", "kind", "model_file", "approx_bytes", "revision", "display_name"]
        ),
        JSONISH,
        max_size=8,
    ),
    version=JSONISH,
)
def test_any_mutated_catalogue_loads_or_is_a_model_error(tmp_path, entry, version):
    doc = {"format": CATALOG_FORMAT, "format_version": version, "models": [entry]}
    path = write(tmp_path / "fuzz.json", doc)
    try:
        entries = load_catalog(path)
    except ModelError as exc:
        assert "\n" not in str(exc)
    else:
        assert all(e.files and e.kind in ("gguf", "onnx") for e in entries)
