"""engine/manifest.py: reading a model folder's manifest, and the source checksum that names a build."""

from __future__ import annotations

import hashlib
import json

import pytest

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.manifest import (
    MANIFEST,
    MANIFEST_FORMAT,
    MANIFEST_VERSION,
    read_manifest,
    source_checksum,
)


def _write(folder, doc):
    text = doc if isinstance(doc, str) else json.dumps(doc)
    (folder / MANIFEST).write_text(text, encoding="utf-8")
    return folder


def test_a_current_manifest_is_read_as_written(tmp_path):
    doc = {"format": MANIFEST_FORMAT, "format_version": MANIFEST_VERSION, "precision": "int4"}
    assert read_manifest(_write(tmp_path, doc)) == doc


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        (None, "no manifest.json"),
        ("{not json", "corrupt"),
        ("[]", "not a Qwen Desktop model manifest"),
        ({"format": "something-else"}, "not a Qwen Desktop model manifest"),
        ({"format": MANIFEST_FORMAT, "format_version": "3"}, "format_version is not a number"),
        ({"format": MANIFEST_FORMAT, "format_version": True}, "format_version is not a number"),
        ({"format": MANIFEST_FORMAT, "format_version": MANIFEST_VERSION + 1}, "newer Qwen Desktop"),
    ],
)
def test_a_bad_manifest_is_one_model_error_line(tmp_path, doc, says):
    if doc is not None:
        _write(tmp_path, doc)
    with pytest.raises(ModelError, match=says) as info:
        read_manifest(tmp_path)
    assert "\n" not in str(info.value)


def test_one_source_file_is_named_by_its_own_sha256():
    manifest = {"source": {"files": [{"name": "m.gguf", "sha256": "ab" * 32}]}}
    assert source_checksum(manifest) == "ab" * 32


def test_several_source_files_hash_their_sorted_name_lines():
    files = [{"name": "b.safetensors", "sha256": "2"}, {"name": "a.safetensors", "sha256": "1"}]
    expected = hashlib.sha256(b"a.safetensors 1\nb.safetensors 2\n").hexdigest()
    assert source_checksum({"source": {"files": files}}) == expected
    assert source_checksum({"source": {"files": files[::-1]}}) == expected, "the order must not matter"


@pytest.mark.parametrize(
    "manifest",
    [
        {},
        {"source": None},
        {"source": "model.gguf"},
        {"source": {"files": None}},
        {"source": {"files": "model.gguf"}},
        {"source": {"files": ["model.gguf"]}},
        {"source": {"files": [None, 3]}},
    ],
)
def test_a_malformed_source_list_gives_no_checksum_rather_than_an_exception(manifest):
    # The models list reads this for every folder: one hand-edited manifest must not break the list.
    assert source_checksum(manifest) == ""
