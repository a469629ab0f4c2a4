"""Helpers that make lying model files from the tiny ones (for the regression and fuzz tests)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Any


def safetensors_parts(path: Path) -> tuple[dict[str, Any], bytes]:
    """The header (as JSON) and the data of a safetensors file."""
    raw = path.read_bytes()
    (n,) = struct.unpack_from("<Q", raw)
    return json.loads(raw[8 : 8 + n]), raw[8 + n :]


def write_safetensors_raw(path: Path, header: Any, data: bytes, header_length: int | None = None) -> Path:
    """A safetensors file with ``header`` (any JSON value, or already-encoded bytes) in front of ``data``."""
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    n = len(text) if header_length is None else header_length
    path.write_bytes(struct.pack("<Q", n) + text + data)
    return path


def hf_copy(tiny_hf: Path, folder: Path, config: dict[str, Any] | None = None) -> Path:
    """A copy of the tiny Hugging Face folder, with ``config`` merged into its config.json."""
    shutil.copytree(tiny_hf, folder)
    if config:
        cfg = json.loads((folder / "config.json").read_text())
        cfg.update(config)
        (folder / "config.json").write_text(json.dumps(cfg))
    return folder


# -- GGUF written byte by byte (for files no writer would make) ------------------------------------------------

GGUF_SCALAR_FORMATS = {
    0: "B",
    1: "b",
    2: "H",
    3: "h",
    4: "I",
    5: "i",
    6: "f",
    7: "?",
    10: "Q",
    11: "q",
    12: "d",
}
GGUF_STRING, GGUF_ARRAY = 8, 9


def gguf_string(text: str | bytes, order: str = "<") -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack(order + "Q", len(raw)) + raw


def gguf_value(value_type: int, value: Any, order: str = "<") -> bytes:
    """A metadata value; an array is (item type, [items])."""
    if value_type in GGUF_SCALAR_FORMATS:
        return struct.pack(order + GGUF_SCALAR_FORMATS[value_type], value)
    if value_type == GGUF_STRING:
        return gguf_string(value, order)
    item_type, items = value
    body = b"".join(gguf_value(item_type, item, order) for item in items)
    return struct.pack(order + "IQ", item_type, len(items)) + body


def gguf_raw(
    fields: list[tuple[str | bytes, int, Any]],
    tensors: list[tuple[str, tuple[int, ...], int, int]] = (),  # type: ignore[assignment]
    data: bytes = b"",
    *,
    version: int = 3,
    order: str = "<",
    alignment: int = 32,
    counts: tuple[int, int] | None = None,
) -> bytes:
    """A GGUF file: ``fields`` (key, value type, value), ``tensors`` (name, GGML dims, type, offset), then
    ``data`` from the next multiple of ``alignment``; ``counts`` (tensors, fields) overrides the header's."""
    n_tensors, n_fields = counts or (len(tensors), len(fields))
    out = b"GGUF" + struct.pack(order + "IQQ", version, n_tensors, n_fields)
    for key, value_type, value in fields:
        out += (
            gguf_string(key, order)
            + struct.pack(order + "I", value_type)
            + gguf_value(value_type, value, order)
        )
    for name, dims, kind, offset in tensors:
        out += gguf_string(name, order) + struct.pack(order + "I", len(dims))
        out += b"".join(struct.pack(order + "Q", d) for d in dims) + struct.pack(order + "IQ", kind, offset)
    return out + b"\0" * (-len(out) % alignment) + data
