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
