"""GGUF, llama.cpp's model file format, read from a file the user chose (so from untrusted bytes).

The layout (versions 2 and 3, little- or big-endian): ``GGUF``, a u32 version, u64 tensor and metadata
counts; the metadata, each a string key, a u32 value type and the value (a scalar, a string: u64 length and
UTF-8 bytes, or an array: u32 item type, u64 count, the items); the tensor infos, each a string name, a u32
dimension count, the u64 dimensions (fastest first), a u32 GGML type and a u64 offset; then the tensor data
from the next multiple of ``general.alignment`` (32 by default), each tensor at its offset from there.

Opening walks the header once and checks every length, count and offset against the file before anything
is built from it; a metadata value becomes Python values only when ``contents()`` asks for it (the package
``gguf`` builds a numpy view per array item up front: ~455k of them, ~5 s, for a Qwen vocabulary). The
tensor data are read-only numpy views of one memory map of the file. Any malformed file raises a
one-line ``ModelError`` naming the file and what is wrong; nothing is allocated from a count the file made up
before the file is known to hold that many bytes, and the limits below cap what a metadata value can cost.
"""

from __future__ import annotations

import itertools
import mmap
import struct
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from qwen_desktop.engine.errors import ModelError, UnsupportedModelError

MAGIC = b"GGUF"
VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS: llama.cpp's tensors have at most four dimensions
# All metadata arrays together: 4,194,304 items, ~9x a Qwen2 file (tokens, merges and token types: 455k).
# Reading an array turns each item into a Python object, so this caps what the largest can cost (~250 MB).
MAX_ARRAY_ITEMS = 1 << 22
MAX_STRING = 1 << 24  # 16 MiB: one metadata string (a chat template is a few kB)
MAX_NAME = 1 << 16  # a metadata key or a tensor name (llama.cpp's tensor names are at most 63 bytes)
MAX_NESTING = 8  # arrays of arrays of ...

# Metadata value types (gguf.GGUFValueType) and the numpy type of each scalar one.
STRING, ARRAY = 8, 9
_SCALARS = {
    0: "u1",
    1: "i1",
    2: "u2",
    3: "i2",
    4: "u4",
    5: "i4",
    6: "f4",
    7: "?",
    10: "u8",
    11: "i8",
    12: "f8",
}
_UINT32 = 4
# Tensor types stored as plain numbers (the gguf package's views of them have these dtypes; the others are bytes).
_PLAIN_TENSORS = {"F16": "f2", "F32": "f4", "F64": "f8", "I8": "i1", "I16": "i2", "I32": "i4", "I64": "i8"}

_MIN_FIELD = 8 + 4 + 1  # an empty key, the value type and a one-byte value
_MIN_TENSOR_INFO = 8 + 4 + 8 + 4 + 8  # an empty name, one dimension, the type and the offset


class _TruncatedError(Exception):
    """The bytes end before the value does."""


class _ShortOrCorruptError(Exception):
    """Too little file for what the header says: cut short, or the header's counts are wrong."""


class _CorruptError(Exception):
    """The bytes are there but do not make sense (the message says how)."""


class GGUFField:
    """One metadata key/value; ``contents()`` reads the value (str, int, float, bool or a list of them)."""

    def __init__(self, name: str, value_type: int, data: _Bytes, offset: int) -> None:
        self.name = name
        self.value_type = value_type
        self._data = data
        self._offset = offset

    def contents(self) -> Any:
        """The value as Python objects. Raises ``UnicodeDecodeError`` for a string that is not UTF-8."""
        value, _ = _value(self._data, self._offset, self.value_type, 0, None, keep=True)
        return value

    def __repr__(self) -> str:
        return f"GGUFField({self.name!r}, type {self.value_type})"


class GGUFTensor(NamedTuple):
    """A tensor's info and its bytes; ``shape`` is in GGML order (the fastest dimension first)."""

    name: str
    tensor_type: Any  # gguf.GGMLQuantizationType
    shape: tuple[int, ...]
    n_elements: int
    n_bytes: int
    data_offset: int  # from the start of the file
    data: np.ndarray  # read-only: the numbers for F16 ... I64, else uint8 rows (the gguf package's layout)


class GGUFFile:
    """A GGUF file's metadata (``fields``, in file order) and tensors (``tensors``, in file order)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.fields: dict[str, GGUFField] = {}
        self.tensors: list[GGUFTensor] = []
        self.version = 0
        self.alignment = DEFAULT_ALIGNMENT
        self.data_offset = 0
        self.byte_order = "<"


class _Bytes:
    """The mapped file, its size and byte order, and the struct readers for that order."""

    def __init__(self, buf: mmap.mmap, order: str) -> None:
        self.buf = buf
        self.size = len(buf)
        self.order = order
        self.u32 = struct.Struct(order + "I").unpack_from
        self.u64 = struct.Struct(order + "Q").unpack_from

    def dtype(self, code: str) -> np.dtype[Any]:
        return np.dtype(self.order + code)


def read_gguf(path: Path) -> GGUFFile:
    """Open ``path`` and read its header; raises ``ModelError`` (one line) for anything but a sound GGUF."""
    path = Path(path)
    try:
        with path.open("rb") as fh:
            size = path.stat().st_size
            magic = fh.read(4)
            buf = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if size >= 4 and magic == MAGIC else None
    except FileNotFoundError:
        raise ModelError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a folder, expected a .gguf file") from None
    except (OSError, ValueError) as exc:  # ValueError: mmap of a file that shrank to nothing meanwhile
        raise ModelError(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    if buf is None:
        raise ModelError(f"{path.name}: not a GGUF file (it does not start with the GGUF signature)")
    out = GGUFFile(path)
    where = ["the header"]  # what is being read, for the message
    try:
        _read(out, buf, where)
    except _TruncatedError:
        raise ModelError(f"{path.name}: the GGUF file is truncated ({where[0]} runs past the end)") from None
    except _CorruptError as exc:
        raise ModelError(f"{path.name}: the GGUF file is corrupt ({exc})") from None
    except _ShortOrCorruptError as exc:
        raise ModelError(f"{path.name}: the GGUF file is truncated or corrupt ({exc})") from None
    except UnsupportedModelError as exc:
        raise UnsupportedModelError(f"{path.name}: {exc}") from None
    return out


def _read(out: GGUFFile, buf: mmap.mmap, where: list[str]) -> None:
    if len(buf) < 24:
        raise _TruncatedError
    (version,) = struct.unpack_from("<I", buf, 4)
    order = "<"
    if version & 0xFFFF == 0:  # what a version of 2 or 3 looks like when written big-endian
        order, version = ">", struct.unpack_from(">I", buf, 4)[0]
    if version not in VERSIONS:
        raise UnsupportedModelError(
            f"GGUF version {version} is not supported (Qwen Desktop reads GGUF versions 2 and 3)"
        )
    data = _Bytes(buf, order)
    out.version, out.byte_order = version, order
    (n_tensors,) = data.u64(buf, 8)
    (n_fields,) = data.u64(buf, 16)
    rest = data.size - 24
    if n_fields > rest // _MIN_FIELD or n_tensors > rest // _MIN_TENSOR_INFO:
        raise _ShortOrCorruptError(
            f"the header lists {n_fields:,} metadata fields and {n_tensors:,} tensors, "
            f"more than its {data.size:,} bytes can hold"
        )
    # The gguf package lists the header's numbers as fields too; so do we (its readers and ours agree).
    for name, value_type, at in (
        ("GGUF.version", 4, 4),
        ("GGUF.tensor_count", 10, 8),
        ("GGUF.kv_count", 10, 16),
    ):
        out.fields[name] = GGUFField(name, value_type, data, at)

    budget = [MAX_ARRAY_ITEMS]
    pos = 24
    for index in range(n_fields):
        where[0] = f"metadata field {index + 1} of {n_fields}"
        name, pos = _name(data, pos, "metadata key")
        where[0] = f"metadata field {name}"
        if name in out.fields:
            raise _CorruptError(f"metadata field {name} appears twice")
        value_type = _u32(data, pos)
        pos += 4
        try:
            _, end = _value(data, pos, value_type, 0, budget, keep=False)
        except _CorruptError as exc:
            raise _CorruptError(f"metadata field {name}: {exc}") from None
        out.fields[name] = GGUFField(name, value_type, data, pos)
        pos = end

    infos = []
    for index in range(n_tensors):
        where[0] = f"tensor info {index + 1} of {n_tensors}"
        name, pos = _name(data, pos, "tensor name")
        where[0] = f"the info of tensor {name}"
        n_dims = _u32(data, pos)
        pos += 4
        if not 1 <= n_dims <= MAX_DIMS:
            raise _CorruptError(f"tensor {name} has {n_dims} dimensions (GGUF allows 1 to {MAX_DIMS})")
        _need(data, pos, 8 * n_dims + 12)
        dims = tuple(data.u64(data.buf, pos + 8 * i)[0] for i in range(n_dims))
        pos += 8 * n_dims
        raw_type = _u32(data, pos)
        (offset,) = data.u64(data.buf, pos + 4)
        pos += 12
        infos.append((name, dims, raw_type, offset))

    where[0] = "the tensor data"
    alignment = out.fields.get("general.alignment")
    if alignment is not None:
        if alignment.value_type != _UINT32:
            raise _CorruptError("general.alignment is not a u32")
        out.alignment = int(alignment.contents())
        if out.alignment == 0 or out.alignment & (out.alignment - 1):
            raise _CorruptError(f"general.alignment is {out.alignment}, not a power of two")
    out.data_offset = -(-pos // out.alignment) * out.alignment
    out.tensors = _tensors(data, infos, out.data_offset, where)


def _tensors(data: _Bytes, infos: list[Any], start: int, where: list[str]) -> list[GGUFTensor]:
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    tensors: list[GGUFTensor] = []
    names: set[str] = set()
    for name, dims, raw_type, offset in infos:
        where[0] = f"tensor {name}"
        if name in names:
            raise _CorruptError(f"tensor {name} appears twice")
        names.add(name)
        try:
            kind = GGMLQuantizationType(raw_type)
            block, type_size = GGML_QUANT_SIZES[kind]
        except (ValueError, KeyError):
            raise UnsupportedModelError(f"unknown tensor type {raw_type} (tensor {name})") from None
        if dims[0] % block:
            raise _CorruptError(
                f"tensor {name}: a row of {dims[0]} values is not a whole number of {kind.name} blocks of {block}"
            )
        n_elements = 1
        for d in dims:
            n_elements *= d
        n_bytes = n_elements // block * type_size
        if n_bytes > data.size:
            raise _CorruptError(
                f"tensor {name} of shape {list(dims)} needs {n_bytes:,} bytes, more than the file has"
            )
        begin = start + offset
        if begin + n_bytes > data.size:
            raise _TruncatedError
        shape = tuple(reversed(dims))  # numpy order: the fastest dimension last
        plain = _PLAIN_TENSORS.get(kind.name)
        if plain is not None:
            view = np.frombuffer(data.buf, data.dtype(plain), n_elements, begin).reshape(shape)
        else:
            rows = (*shape[:-1], shape[-1] // block * type_size)
            view = np.frombuffer(data.buf, np.uint8, n_bytes, begin).reshape(rows)
        tensors.append(GGUFTensor(name, kind, dims, n_elements, n_bytes, begin, view))
    placed = sorted((t for t in tensors if t.n_bytes), key=lambda t: t.data_offset)
    for before, after in itertools.pairwise(placed):
        if after.data_offset < before.data_offset + before.n_bytes:
            raise _CorruptError(f"tensors {before.name} and {after.name} overlap")
    return tensors


def _need(data: _Bytes, pos: int, n: int) -> None:
    if n > data.size - pos:
        raise _TruncatedError


def _u32(data: _Bytes, pos: int) -> int:
    _need(data, pos, 4)
    return int(data.u32(data.buf, pos)[0])


def _sized(data: _Bytes, pos: int, limit: int, what: str) -> tuple[int, int]:
    """The bytes of a u64-length-prefixed value at ``pos`` (a key, a name, a string): their (start, end),
    checked against ``limit`` and against the end of the file."""
    _need(data, pos, 8)
    (length,) = data.u64(data.buf, pos)
    pos += 8
    if length > limit:
        raise _CorruptError(f"a {what} of {length:,} bytes")
    _need(data, pos, length)
    return pos, pos + length


def _name(data: _Bytes, pos: int, what: str) -> tuple[str, int]:
    start, end = _sized(data, pos, MAX_NAME, what)
    try:
        return str(data.buf[start:end], "utf-8"), end
    except UnicodeDecodeError:
        raise _CorruptError(f"a {what} is not UTF-8 text") from None


def _value(
    data: _Bytes, pos: int, value_type: int, depth: int, budget: list[int] | None, *, keep: bool
) -> tuple[Any, int]:
    """The value of ``value_type`` at ``pos`` (None unless ``keep``) and the position after it.

    ``budget`` holds the array items still allowed (None once the header has been checked)."""
    code = _SCALARS.get(value_type)
    if code is not None:
        dtype = data.dtype(code)
        _need(data, pos, dtype.itemsize)
        value = np.frombuffer(data.buf, dtype, 1, pos).item() if keep else None
        return value, pos + dtype.itemsize
    if value_type == STRING:
        start, end = _sized(data, pos, MAX_STRING, "string")
        return (str(data.buf[start:end], "utf-8") if keep else None), end
    if value_type != ARRAY:
        raise _CorruptError(f"unknown value type {value_type}")
    if depth >= MAX_NESTING:
        raise _CorruptError(f"arrays nested more than {MAX_NESTING} deep")
    item_type = _u32(data, pos)
    _need(data, pos + 4, 8)
    (count,) = data.u64(data.buf, pos + 4)
    pos += 12
    if budget is not None:
        if count > budget[0]:
            raise _CorruptError(
                f"an array of {count:,} items (all arrays together may hold {MAX_ARRAY_ITEMS:,})"
            )
        budget[0] -= count
    code = _SCALARS.get(item_type)
    if code is not None:
        dtype = data.dtype(code)
        _need(data, pos, count * dtype.itemsize)
        items = np.frombuffer(data.buf, dtype, count, pos).tolist() if keep else None
        return items, pos + count * dtype.itemsize
    if item_type == STRING:
        return _strings(data, pos, count, keep)
    if item_type != ARRAY:
        raise _CorruptError(f"unknown value type {item_type}")
    out: list[Any] | None = [] if keep else None
    for _ in range(count):
        item, pos = _value(data, pos, ARRAY, depth + 1, budget, keep=keep)
        if out is not None:
            out.append(item)
    return out, pos


def _strings(data: _Bytes, pos: int, count: int, keep: bool) -> tuple[list[str] | None, int]:
    """``count`` strings from ``pos``: the one loop over a vocabulary, so kept to plain local operations."""
    buf, size, u64 = data.buf, data.size, data.u64
    _need(data, pos, 8 * count)
    out: list[str] = []
    append = out.append
    try:
        for _ in range(count):
            (length,) = u64(buf, pos)
            pos += 8
            if length > size - pos or length > MAX_STRING:
                if length > MAX_STRING:
                    raise _CorruptError(f"a string of {length:,} bytes")
                raise _TruncatedError
            if keep:
                append(buf[pos : pos + length].decode())
            pos += length
    except struct.error:  # the length itself runs past the end
        raise _TruncatedError from None
    return (out if keep else None), pos
