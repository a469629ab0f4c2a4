"""The manifest of a model folder: what the builder wrote and the engine reads.

Kept apart from the builder so that reading a manifest (listing models, starting the app) does not import
onnx.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from qwen_desktop.engine.errors import ModelError

MANIFEST = "manifest.json"
MODEL_FILE = "model.onnx"
PREFILL_FILE = "prefill.onnx"
HEAD_FILE = "head.onnx"  # the output head that model.onnx and prefill.onnx both feed (format 2)
TOKENIZER_FILE = "tokenizer.json"
MANIFEST_FORMAT = "qwen-desktop-model"
MANIFEST_VERSION = 3  # 3: the fast graphs read the KV cache through views (kv_layout "views")
# How a fast-style folder's graphs read the KV cache: "views" (format 3) or "shared" (GroupQueryAttention's
# one past/present buffer, format 2; a manifest without the key). See convert/onnx_writer.py.
KV_LAYOUTS = ("views", "shared")


def read_manifest(folder: Path) -> dict[str, Any]:
    """Read and check a model folder's manifest."""
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise ModelError(f"{folder}: no {MANIFEST} (not a model folder built by Qwen Desktop)")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise ModelError(f"{path}: the manifest is corrupt") from None
    except OSError as exc:
        raise ModelError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise ModelError(f"{path}: not a Qwen Desktop model manifest")
    version = doc.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelError(f"{path}: the manifest's format_version is not a number")
    if version > MANIFEST_VERSION:
        raise ModelError(f"{path}: made by a newer Qwen Desktop (format {version}); please update")
    return doc


def source_checksum(manifest: dict[str, Any]) -> str:
    """The SHA-256 of the source file, or for several files the SHA-256 of their ``name sha256`` lines; ""
    when the manifest names no source files. Never raises: a hand-edited manifest whose source list is
    malformed must not break the list of models that reads this for every folder."""
    source = manifest.get("source")
    listed = source.get("files") if isinstance(source, dict) else None
    files = [f for f in listed if isinstance(f, dict)] if isinstance(listed, list) else []
    if len(files) == 1:
        return str(files[0].get("sha256", ""))
    lines = "".join(
        f"{f.get('name')} {f.get('sha256')}\n" for f in sorted(files, key=lambda f: str(f.get("name")))
    )
    return hashlib.sha256(lines.encode()).hexdigest() if files else ""
