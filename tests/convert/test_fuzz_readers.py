"""Fuzzing the model readers: a GGUF file or a safetensors folder, mutated in any way, either reads (and its
tensors check out against its config) or fails with the project's one-line ModelError; nothing else escapes,
nothing hangs, and nothing is allocated from a number the file made up.

Inputs that once broke a reader are kept in tests/corpus/ and replayed on every run.
"""

from __future__ import annotations

import json
import os
import tempfile
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qwen_desktop.convert.gguf_reader import GGUFSource
from qwen_desktop.convert.hf_reader import HFFolderSource
from qwen_desktop.convert.weights import EMBED, check_tensors
from qwen_desktop.engine.errors import ModelError
from tests.convert.hostile import hf_copy, safetensors_parts, write_safetensors_raw

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
# QWEN_FUZZ_EXAMPLES=2000 runs a longer, random search (CI runs the fixed, quick one).
DEEP = int(os.environ.get("QWEN_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=DEEP or 60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    derandomize=not DEEP,
    database=None,
)
MEMORY_LIMIT = 64 << 20  # Python allocations while reading a 0.5 MB file stay far below this


def read_fully(open_source, path: Path) -> None:
    """What the builder does before any slow work: open, check every tensor, read the embedding."""
    tracemalloc.start()
    try:
        try:
            source = open_source(path)
        except ModelError as exc:
            assert "\n" not in str(exc) and str(exc)
            return
        try:
            check_tensors(source)
            source.tensor(EMBED)
        except ModelError as exc:
            assert "\n" not in str(exc) and str(exc)
        finally:
            source.close()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < MEMORY_LIMIT, f"reading allocated {peak >> 20} MB"


# -- GGUF -----------------------------------------------------------------------------------------------------


class Blob(bytes):
    def __repr__(self) -> str:
        return f"<{len(self)} bytes of the tiny GGUF>"


@pytest.fixture(scope="module")
def gguf_bytes(tiny_gguf) -> bytes:
    return Blob(tiny_gguf.read_bytes())


HEADER_BYTES = 8192  # metadata and tensor index of the tiny GGUF (the data follows)


def apply_gguf_mutation(data: bytes, mutation: dict) -> bytes:
    out = bytearray(data)
    for at, value in mutation.get("set", []):
        if at < len(out):
            out[at] = value
    for at, blob in mutation.get("insert", []):
        out[at:at] = bytes.fromhex(blob)
    if "truncate" in mutation:
        del out[mutation["truncate"] :]
    return bytes(out)


gguf_mutations = st.fixed_dictionaries(
    {},
    optional={
        "set": st.lists(st.tuples(st.integers(0, HEADER_BYTES), st.integers(0, 255)), min_size=1, max_size=8),
        "insert": st.lists(
            st.tuples(st.integers(0, HEADER_BYTES), st.binary(min_size=1, max_size=16).map(bytes.hex)),
            max_size=2,
        ),
        "truncate": st.integers(0, 480_000),
    },
)


@FUZZ
@given(mutation=gguf_mutations)
@pytest.mark.timeout(300)
def test_mutated_gguf_reads_or_fails_cleanly(gguf_bytes, mutation):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.gguf"
        path.write_bytes(apply_gguf_mutation(gguf_bytes, mutation))
        read_fully(GGUFSource, path)


@pytest.mark.parametrize("case", sorted(p.name for p in (CORPUS / "gguf").glob("*.json")))
def test_gguf_corpus(gguf_bytes, tmp_path, case):
    mutation = json.loads((CORPUS / "gguf" / case).read_text())
    path = tmp_path / "case.gguf"
    path.write_bytes(apply_gguf_mutation(gguf_bytes, mutation))
    read_fully(GGUFSource, path)


# -- safetensors ----------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True)
    | st.text(max_size=8)
    | st.sampled_from(["F32", "F16", "BF16", "I32", "F64", "U8"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=10,
)


class Parts(tuple):
    def __repr__(self) -> str:  # hypothesis prints the arguments of a failing example
        return "<tiny safetensors header and data>"


@pytest.fixture(scope="module")
def hf_parts(tiny_hf):
    return Parts(safetensors_parts(tiny_hf / "model.safetensors"))


@pytest.fixture(scope="module")
def hf_folder(tmp_path_factory, tiny_hf) -> Path:
    return hf_copy(tiny_hf, tmp_path_factory.mktemp("fuzz") / "m")


def write_mutated_safetensors(folder: Path, parts, mutation: dict) -> None:
    header, data = parts
    header = json.loads(json.dumps(header))
    names = sorted(n for n in header if n != "__metadata__")
    for index, key, value in mutation.get("fields", []):
        name = names[index % len(names)]
        if key == "entry":
            header[name] = value
        elif isinstance(header[name], dict):
            header[name][key] = value
        else:  # an earlier mutation made the entry a non-table: this one gives it a single field
            header[name] = {key: value}
    if "header" in mutation:
        header = mutation["header"]
    text = json.dumps(header).encode()
    for at, value in mutation.get("bytes", []):
        if at < len(text):
            text = text[:at] + bytes([value]) + text[at + 1 :]
    data = data[: mutation.get("data_length", len(data))]
    write_safetensors_raw(folder / "model.safetensors", text, data, mutation.get("header_length"))


safetensors_mutations = st.fixed_dictionaries(
    {},
    optional={
        "fields": st.lists(
            st.tuples(
                st.integers(0, 40),
                st.sampled_from(["dtype", "shape", "data_offsets", "entry"]),
                json_values
                | st.lists(st.integers(-(2**64), 2**64), max_size=3)
                | st.tuples(st.integers(-(2**33), 2**33), st.integers(-(2**33), 2**33)).map(list),
            ),
            max_size=3,
        ),
        "header": json_values,
        "bytes": st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), max_size=4),
        "header_length": st.integers(0, 2**64 - 1),
        "data_length": st.integers(0, 400_000),
    },
)


@FUZZ
@given(mutation=safetensors_mutations)
@example(mutation={"fields": [(0, "entry", []), (0, "dtype", [])]})  # a field set on an entry made a list
@pytest.mark.timeout(300)
def test_mutated_safetensors_reads_or_fails_cleanly(hf_folder, hf_parts, mutation):
    write_mutated_safetensors(hf_folder, hf_parts, mutation)
    read_fully(HFFolderSource, hf_folder)


@pytest.mark.parametrize("case", sorted(p.name for p in (CORPUS / "safetensors").glob("*.json")))
def test_safetensors_corpus(hf_folder, hf_parts, case):
    write_mutated_safetensors(hf_folder, hf_parts, json.loads((CORPUS / "safetensors" / case).read_text()))
    read_fully(HFFolderSource, hf_folder)


config_mutations = st.dictionaries(
    st.sampled_from(
        [
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "rope_theta",
            "rms_norm_eps",
            "max_position_embeddings",
            "head_dim",
            "tie_word_embeddings",
            "eos_token_id",
            "bos_token_id",
        ]
    ),
    json_values | st.integers(-(2**64), 2**64),
    max_size=3,
)


@FUZZ
@given(change=config_mutations)
@pytest.mark.timeout(300)
def test_mutated_config_reads_or_fails_cleanly(tiny_hf, change):
    with tempfile.TemporaryDirectory() as tmp:
        folder = hf_copy(tiny_hf, Path(tmp) / "m", change)
        read_fully(HFFolderSource, folder)
