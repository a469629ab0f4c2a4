"""Our GGUF parser (convert/gguf_format.py): it reads what the gguf package reads, value for value and tensor
for tensor, and any other bytes give one clear ModelError line; nothing escapes, hangs or allocates much."""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from qwen_desktop.convert import gguf_reader
from qwen_desktop.convert.gguf_format import MAX_ARRAY_ITEMS, MAX_NESTING, GGUFFile, read_gguf
from qwen_desktop.convert.gguf_reader import GGUFSource
from qwen_desktop.convert.tiny import write_gguf
from qwen_desktop.engine.errors import ModelError, UnsupportedModelError
from tests.convert.folders import assert_same_bytes
from tests.convert.hostile import GGUF_ARRAY, GGUF_STRING, gguf_raw, gguf_string
from tests.convert.test_fuzz_readers import FUZZ

F32, F16, Q8_0, I8 = 0, 1, 8, 24  # GGML tensor types
U8, I8V, U16, I16, U32, I32, F32V, BOOL, U64, I64, F64V = 0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12  # value types

SCALARS = [
    ("v.u8", U8, 255),
    ("v.i8", I8V, -128),
    ("v.u16", U16, 65535),
    ("v.i16", I16, -32768),
    ("v.u32", U32, 2**32 - 1),
    ("v.i32", I32, -(2**31)),
    ("v.f32", F32V, 1e-6),
    ("v.bool", BOOL, True),
    ("v.u64", U64, 2**64 - 1),
    ("v.i64", I64, -(2**63)),
    ("v.f64", F64V, -1e300),
]
RICH_FIELDS = [
    ("general.architecture", GGUF_STRING, "qwen2"),
    *SCALARS,
    ("v.text", GGUF_STRING, "中文, emoji 😀 and a\nnewline"),
    ("v.empty", GGUF_STRING, ""),
    *[(f"a.{key[2:]}", GGUF_ARRAY, (kind, [value, 0, value])) for key, kind, value in SCALARS],
    ("a.strings", GGUF_ARRAY, (GGUF_STRING, ["Ġthe", "", "中", "<|im_end|>"])),
    ("a.empty", GGUF_ARRAY, (U32, [])),
    ("general.alignment", U32, 64),
]
_rng = np.random.default_rng(0)
_F32_DATA = _rng.standard_normal(8).astype(np.float32)  # dims (4, 2)
_F16_DATA = _rng.standard_normal(8).astype(np.float16)  # dims (8,)
_Q8_DATA = gguf.quants.quantize(
    _rng.standard_normal((2, 32)).astype(np.float32), gguf.GGMLQuantizationType.Q8_0
)
RICH_TENSORS = [
    ("t.f32", (4, 2), F32, 0),
    ("t.f16", (8,), F16, 64),
    ("t.q8", (32, 2), Q8_0, 128),
    ("t.i8", (3,), I8, 256),
]


def rich_data(order: str = "<") -> bytes:
    """The tensor data of RICH_TENSORS, each at its offset (64-byte aligned)."""
    parts = [
        (0, _F32_DATA.astype(order + "f4").tobytes()),
        (64, _F16_DATA.astype(order + "f2").tobytes()),
        (128, _Q8_DATA.tobytes()),
        (256, bytes([1, 255, 7])),
    ]
    out = bytearray(259)
    for at, blob in parts:
        out[at : at + len(blob)] = blob
    return bytes(out)


def rich_gguf(order: str = "<") -> bytes:
    return gguf_raw(RICH_FIELDS, RICH_TENSORS, rich_data(order), order=order, alignment=64)


class Blob(bytes):
    def __repr__(self) -> str:
        return f"<{len(self)} bytes of a GGUF>"


RICH = Blob(rich_gguf())


def write(tmp_path: Path, data: bytes, name: str = "case.gguf") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def one_line_error(path: Path) -> str:
    with pytest.raises(ModelError) as caught:
        read_gguf(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{path.name}: "), message
    return message


# -- agreement with the gguf package --------------------------------------------------------------------------


def contents(field: Any) -> Any:
    try:
        return repr(field.contents())  # repr: 1 and True, 0.0 and -0.0, nan and nan compare as they should
    except UnicodeDecodeError:
        return "not UTF-8"


def assert_agrees(ours: GGUFFile, path: Path) -> None:
    """Every field and tensor of ``ours`` is what ``gguf.GGUFReader`` reads from ``path``."""
    theirs = gguf.GGUFReader(str(path), "r")
    assert list(ours.fields) == list(theirs.fields)
    for key, field in ours.fields.items():
        if theirs.fields[key].types.count(gguf.GGUFValueType.ARRAY) > 1:
            continue  # arrays of arrays: the package flattens them, we keep them nested (test below)
        assert contents(field) == contents(theirs.fields[key]), key
    assert ours.data_offset == theirs.data_offset and ours.alignment == theirs.alignment
    assert len(ours.tensors) == len(theirs.tensors)
    for a, b in zip(ours.tensors, theirs.tensors, strict=True):
        assert (a.name, a.tensor_type, a.shape, a.n_elements, a.n_bytes, a.data_offset) == (
            b.name,
            b.tensor_type,
            tuple(int(d) for d in b.shape),
            b.n_elements,
            b.n_bytes,
            b.data_offset,
        )
        assert (a.data.shape, a.data.dtype) == (b.data.shape, b.data.dtype), a.name
        assert a.data.tobytes() == b.data.tobytes() and not a.data.flags.writeable


@pytest.mark.parametrize("order", ["<", ">"])
def test_every_value_type_reads_as_the_gguf_package_reads_it(tmp_path, order):
    path = write(tmp_path, rich_gguf(order))
    ours = read_gguf(path)
    assert_agrees(ours, path)
    assert ours.byte_order == order and ours.alignment == 64 and ours.data_offset % 64 == 0
    assert ours.fields["v.text"].contents() == "中文, emoji 😀 and a\nnewline"
    assert ours.fields["a.strings"].contents() == ["Ġthe", "", "中", "<|im_end|>"]
    assert ours.fields["v.f32"].contents() == float(np.float32(1e-6))
    assert ours.fields["a.u64"].contents() == [2**64 - 1, 0, 2**64 - 1]
    tensors = {t.name: t.data for t in ours.tensors}
    np.testing.assert_array_equal(tensors["t.f32"], _F32_DATA.reshape(2, 4))
    np.testing.assert_array_equal(tensors["t.f16"], _F16_DATA)
    assert tensors["t.q8"].shape == (2, 34) and tensors["t.i8"].tolist() == [1, -1, 7]


def test_the_tiny_model_reads_as_the_gguf_package_reads_it(tiny_gguf):
    assert_agrees(read_gguf(tiny_gguf), tiny_gguf)


def test_arrays_of_arrays_stay_nested(tmp_path):
    nested = (GGUF_ARRAY, [(U8, [1, 2]), (U8, []), (GGUF_STRING, ["a", "b"])])
    path = write(tmp_path, gguf_raw([("n", GGUF_ARRAY, nested)]))
    assert read_gguf(path).fields["n"].contents() == [[1, 2], [], ["a", "b"]]


def test_a_string_that_is_not_utf8_fails_only_when_read(tmp_path, tiny_gguf):
    path = write(tmp_path, gguf_raw([("general.architecture", GGUF_STRING, b"qw\xffen2"), ("ok", U8, 1)]))
    ours = read_gguf(path)
    assert ours.fields["ok"].contents() == 1
    with pytest.raises(UnicodeDecodeError):
        ours.fields["general.architecture"].contents()
    with pytest.raises(ModelError, match=r"^case.gguf: metadata field general.architecture is unreadable"):
        GGUFSource(path)


def _source_summary(source: GGUFSource) -> dict[str, Any]:
    return {
        "config": source.config,
        "tokenizer": source.tokenizer,
        "tensors": {n: (source.tensor_info(n), source.tensor(n).tobytes()) for n in source.tensor_names()},
    }


def package_reader(path: Path) -> Any:
    """What GGUFSource read through before convert/gguf_format.py: the gguf package's reader."""
    return gguf.GGUFReader(str(path), "r")


@pytest.mark.parametrize("kind", ["F32", "F16", "BF16", "Q8_0", "Q5_0", "Q4_0", "Q4_K"])
def test_the_source_reads_the_same_through_either_reader(
    tmp_path, monkeypatch, tiny_cfg, tiny_weights, tiny_tokenizer, kind
):
    cfg, weights, raw = tiny_cfg, tiny_weights, None
    if kind == "Q4_K":  # the gguf package cannot write K-quants: random well-formed blocks, 256-value rows
        from qwen_desktop.convert.tiny import make_weights, tiny_config
        from tests.convert.test_readers import _k_quant_bytes

        cfg = tiny_config(
            len(tiny_tokenizer[0]), hidden_size=256, intermediate_size=256, num_heads=4, num_kv_heads=2
        )
        weights, q = make_weights(cfg), gguf.GGMLQuantizationType.Q4_K
        raw = {
            n: (_k_quant_bytes(*w.shape, q, seed=i), q)
            for i, (n, w) in enumerate(weights.items())
            if "down" in n
        }
        kind = "F32"
    path = write_gguf(tmp_path / "m.gguf", cfg, weights, tiny_tokenizer, matrix_type=kind, raw=raw)
    new = _source_summary(GGUFSource(path))
    monkeypatch.setattr(gguf_reader, "read_gguf", package_reader)
    assert _source_summary(GGUFSource(path)) == new


@pytest.mark.slow
@pytest.mark.parametrize("fit", ["gptq", "plain"])
def test_the_built_model_is_byte_identical_through_either_reader(tmp_path, monkeypatch, tiny_gguf, fit):
    """The default build through our parser and through the package's gives the same bytes."""
    from qwen_desktop.convert.builder import build_model

    new = build_model(tiny_gguf, tmp_path / "new", fit=fit).folder
    monkeypatch.setattr(gguf_reader, "read_gguf", package_reader)
    old = build_model(tiny_gguf, tmp_path / "old", fit=fit).folder
    assert_same_bytes(old, new)


@pytest.mark.real_model
@pytest.mark.slow
def test_the_real_model_reads_as_the_gguf_package_reads_it(real_gguf):
    assert_agrees(read_gguf(real_gguf), real_gguf)


# -- malformed files ------------------------------------------------------------------------------------------


def _header(n_tensors: int = 0, n_fields: int = 1, version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_fields)


def _field(key: str | bytes, value_type: int, body: bytes) -> bytes:
    return gguf_string(key) + struct.pack("<I", value_type) + body


def _tensor_file(*tensors: tuple[str, tuple[int, ...], int, int], data: bytes = b"") -> bytes:
    return gguf_raw([], list(tensors), data)


MALFORMED = {
    "version 1": (_header(version=1), "GGUF version 1 is not supported"),
    "version 4": (_header(version=4), "GGUF version 4 is not supported"),
    "absurd counts": (_header(2**63, 2**64 - 1) + bytes(64), "more than its 88 bytes can hold"),
    "string past the end": (
        _header() + _field("k", GGUF_STRING, struct.pack("<Q", 1000) + b"abc"),
        "truncated (metadata field k runs past the end)",
    ),
    "key past the end": (
        _header() + struct.pack("<Q", 50) + b"abc" + bytes(10),
        "truncated (metadata field 1 of 1 runs past the end)",
    ),
    "absurd key length": (
        _header() + struct.pack("<Q", 2**63) + bytes(20),
        "a metadata key of 9,223,372,036,854,775,808 bytes",
    ),
    "key not UTF-8": (_header() + _field(b"\xff\xfe", U8, b"\x01"), "a metadata key is not UTF-8 text"),
    "unknown value type": (
        _header() + _field("k", 13, b"\x00" * 8),
        "metadata field k: unknown value type 13",
    ),
    "unknown item type": (
        _header() + _field("k", GGUF_ARRAY, struct.pack("<IQ", 77, 1) + bytes(8)),
        "unknown value type 77",
    ),
    "absurd array count": (
        _header() + _field("k", GGUF_ARRAY, struct.pack("<IQ", U8, 2**62) + bytes(8)),
        "an array of 4,611,686,018,427,387,904 items",
    ),
    "too many array items": (
        _header() + _field("k", GGUF_ARRAY, struct.pack("<IQ", U8, MAX_ARRAY_ITEMS + 1) + bytes(8)),
        f"all arrays together may hold {MAX_ARRAY_ITEMS:,}",
    ),
    "array past the end": (
        _header() + _field("k", GGUF_ARRAY, struct.pack("<IQ", U32, 1000) + bytes(8)),
        "truncated (metadata field k runs past the end)",
    ),
    "strings past the end": (
        _header()
        + _field(
            "k", GGUF_ARRAY, struct.pack("<IQ", GGUF_STRING, 3) + gguf_string("ab") + struct.pack("<Q", 99)
        ),
        "truncated (metadata field k runs past the end)",
    ),
    "arrays nested too deep": (
        _header()
        + _field(
            "k", GGUF_ARRAY, struct.pack("<IQ", GGUF_ARRAY, 1) * MAX_NESTING + struct.pack("<IQ", U8, 0)
        ),
        f"arrays nested more than {MAX_NESTING} deep",
    ),
    "duplicate key": (gguf_raw([("k", U8, 1), ("k", U8, 2)]), "metadata field k appears twice"),
    "a pseudo field as key": (
        gguf_raw([("GGUF.version", U32, 3)]),
        "metadata field GGUF.version appears twice",
    ),
    "alignment of the wrong type": (
        gguf_raw([("general.alignment", U64, 32)]),
        "general.alignment is not a u32",
    ),
    "alignment not a power of two": (
        gguf_raw([("general.alignment", U32, 48)]),
        "general.alignment is 48, not a power of two",
    ),
    "alignment zero": (
        gguf_raw([("general.alignment", U32, 0)]),
        "general.alignment is 0, not a power of two",
    ),
    "no dimensions": (_tensor_file(("t", (), F32, 0)), "tensor t has 0 dimensions (GGUF allows 1 to 4)"),
    "five dimensions": (
        _tensor_file(("t", (1, 1, 1, 1, 1), F32, 0), data=bytes(4)),
        "tensor t has 5 dimensions",
    ),
    "dimensions past the end": (
        gguf_raw([], [("t", (4, 4, 4, 4), F32, 0)], alignment=1)[:-12],
        "truncated (the info of tensor t runs past the end)",
    ),
    "duplicate tensor": (
        _tensor_file(("t", (1,), F32, 0), ("t", (1,), F32, 32), data=bytes(36)),
        "tensor t appears twice",
    ),
    "unknown tensor type": (
        _tensor_file(("t", (1,), 200, 0), data=bytes(4)),
        "unknown tensor type 200 (tensor t)",
    ),
    "partial block": (
        _tensor_file(("t", (33,), Q8_0, 0), data=bytes(68)),
        "a row of 33 values is not a whole number of Q8_0 blocks of 32",
    ),
    "absurd shape": (
        _tensor_file(("t", (2**40, 2**40), F32, 0), data=bytes(4)),
        "needs 4,835,703,278,458,516,698,824,704 bytes, more than the file has",
    ),
    "offset past the end": (
        _tensor_file(("t", (4,), F32, 2**63), data=bytes(16)),
        "truncated (tensor t runs past the end)",
    ),
    "data cut short": (
        _tensor_file(("t", (4,), F32, 0), data=bytes(15)),
        "truncated (tensor t runs past the end)",
    ),
    "overlapping tensors": (
        _tensor_file(("a", (4,), F32, 0), ("b", (4,), F32, 8), data=bytes(24)),
        "tensors a and b overlap",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_file_gets_one_clear_line(tmp_path, case):
    data, expected = MALFORMED[case]
    message = one_line_error(write(tmp_path, data))
    assert expected in message, message


def test_unsupported_versions_and_tensor_types_are_unsupported_not_corrupt(tmp_path):
    for data in (MALFORMED["version 4"][0], MALFORMED["unknown tensor type"][0]):
        with pytest.raises(UnsupportedModelError):
            read_gguf(write(tmp_path, data))


@pytest.mark.parametrize("data", [b"", b"GGU", b"GGML" + bytes(40), b"this is not a model" * 10])
def test_files_that_are_not_gguf(tmp_path, data):
    assert "not a GGUF file (it does not start with the GGUF signature)" in one_line_error(
        write(tmp_path, data)
    )


def test_missing_files_and_folders(tmp_path):
    with pytest.raises(ModelError, match="file not found"):
        read_gguf(tmp_path / "nope.gguf")
    with pytest.raises(ModelError, match="is a folder"):
        read_gguf(tmp_path)


def test_every_cut_of_a_file_is_truncated(tmp_path):
    for length in range(4, len(RICH)):
        message = one_line_error(write(tmp_path, RICH[:length]))
        assert "the GGUF file is truncated" in message, (length, message)
    read_gguf(write(tmp_path, RICH))


# -- fuzzing --------------------------------------------------------------------------------------------------

MEMORY_LIMIT = 16 << 20  # Python allocations while reading a file of a few kB (or the 0.5 MB tiny model)


def reads_or_fails_cleanly(path: Path) -> None:
    """Ours reads ``path`` or gives one line; when it reads, every value reads too and the package agrees."""
    tracemalloc.start()
    try:
        try:
            ours = read_gguf(path)
        except ModelError as exc:
            assert "\n" not in str(exc) and str(exc).startswith(path.name)
            return
        values = [contents(f) for f in ours.fields.values()]
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert peak < MEMORY_LIMIT, f"reading allocated {peak >> 20} MB"
    assert len(values) == len(ours.fields)
    assert_agrees(ours, path)  # only now: the package loops over a count the file made up without checking it


def mutate(data: bytes, mutation: dict[str, Any]) -> bytes:
    out = bytearray(data)
    for at, value in mutation.get("set", []):
        out[at % len(out)] = value
    for at, blob in mutation.get("insert", []):
        out[at:at] = blob
    if "truncate" in mutation:
        del out[mutation["truncate"] :]
    return bytes(out)


def mutations(span: int) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "set": st.lists(st.tuples(st.integers(0, span), st.integers(0, 255)), min_size=1, max_size=8),
            "insert": st.lists(
                st.tuples(st.integers(0, span), st.binary(min_size=1, max_size=16)), max_size=2
            ),
            "truncate": st.integers(0, span),
        },
    )


@FUZZ
@given(
    data=st.binary(max_size=600), version=st.sampled_from([b"", b"\x02\0\0\0", b"\x03\0\0\0", b"\0\0\0\x03"])
)
@example(data=bytes(20), version=b"\x03\0\0\0")
def test_random_bytes_read_or_fail_cleanly(tmp_path, data, version):
    reads_or_fails_cleanly(write(tmp_path, b"GGUF" + version + data))


@FUZZ
@given(mutation=mutations(len(RICH)), order=st.sampled_from(["<", ">"]))
def test_a_mutated_small_gguf_reads_or_fails_cleanly(tmp_path, mutation, order):
    base = RICH if order == "<" else rich_gguf(">")
    reads_or_fails_cleanly(write(tmp_path, mutate(base, mutation)))


@pytest.fixture(scope="module")
def tiny_bytes(tiny_gguf) -> bytes:
    return Blob(tiny_gguf.read_bytes())


@FUZZ
@given(mutation=mutations(8192))  # the tiny model's metadata and tensor index
def test_a_mutated_tiny_model_reads_or_fails_cleanly(tmp_path, tiny_bytes, mutation):
    reads_or_fails_cleanly(write(tmp_path, mutate(tiny_bytes, mutation)))
