"""Fuzzing the manifest reader: any manifest.json (arbitrary JSON, mutated bytes of a real one) gives a
manifest or a one-line ModelError, from read_manifest and from the engine's load_model_files alike.
tests/corpus/manifests/ holds manifests that once crashed it (issue 25 defect 9: `[]`, a text version)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.manifest import MANIFEST_FORMAT, read_manifest
from qwen_desktop.engine.model_files import load_model_files

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "manifests"
DEEP = int(os.environ.get("QWEN_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=DEEP or 100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=not DEEP,
    database=None,
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)


def check(raw: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "manifest.json").write_bytes(raw)
        for read in (read_manifest, load_model_files):
            try:
                read(Path(tmp))
            except ModelError as exc:
                assert str(exc) and "\n" not in str(exc)


@pytest.fixture(scope="module")
def real_manifest(tiny_model_dir) -> bytes:
    return (tiny_model_dir / "manifest.json").read_bytes()


@FUZZ
@given(doc=json_values)
@pytest.mark.timeout(300)
def test_any_json_manifest(doc):
    check(json.dumps(doc).encode())


@FUZZ
@given(
    changes=st.dictionaries(
        st.sampled_from(
            ["format_version", "config", "files", "max_context", "eos_token_ids", "style", "name"]
        ),
        json_values,
        max_size=3,
    )
)
@pytest.mark.timeout(300)
def test_manifest_with_odd_fields(real_manifest, changes):
    doc = json.loads(real_manifest)
    doc.update(changes, format=MANIFEST_FORMAT)
    check(json.dumps(doc).encode())


@FUZZ
@given(flips=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), min_size=1, max_size=6))
@pytest.mark.timeout(300)
def test_manifest_with_flipped_bytes(real_manifest, flips):
    raw = bytearray(real_manifest)
    for at, value in flips:
        raw[at % len(raw)] = value
    check(bytes(raw))


@pytest.mark.parametrize("case", sorted(p.name for p in CORPUS.glob("*.json")))
def test_manifest_corpus(case):
    check((CORPUS / case).read_bytes())
