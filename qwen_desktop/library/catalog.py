"""The catalogue of models Qwen Desktop knows how to download, kept as data in ``qwen_desktop/data/catalog.json``.

Each entry names its source on the Hugging Face hub (repository, revision, files), the approximate download
size, the licence, and the precision the model is built to after the download. ``kind`` is ``gguf`` (one
GGUF file, built into a model folder here) or ``onnx`` (a prebuilt ONNX export, used as it is).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from qwen_desktop.engine.errors import ModelError

CATALOG_FORMAT = "qwen-desktop-catalog"
CATALOG_ENV = "QWEN_DESKTOP_CATALOG"  # a catalogue file to use instead of the packaged one (mirrors, tests)
CATALOG_VERSION = 1
KINDS = ("gguf", "onnx")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class CatalogEntry:
    """One downloadable model."""

    name: str
    display_name: str
    kind: str
    repo: str
    revision: str
    files: tuple[str, ...]
    approx_bytes: int | None
    license: str
    precision: str
    description: str = ""
    license_url: str = ""
    model_file: str | None = None  # kind "onnx": which of ``files`` is the graph
    is_default: bool = False

    @property
    def pinned(self) -> bool:
        """True when ``revision`` is a commit id, so the download can never change under us."""
        return bool(COMMIT_RE.match(self.revision))

    @property
    def source(self) -> str:
        """``repo/file`` for one file, ``repo`` for several."""
        return f"{self.repo}/{self.files[0]}" if len(self.files) == 1 else self.repo


def _entry(raw: dict[str, Any], default: str, where: str) -> CatalogEntry:
    try:
        name = str(raw["name"])
        kind = str(raw.get("kind", "gguf"))
        if not isinstance(raw["files"], list):
            raise TypeError("files is not a list")
        files = tuple(str(f) for f in raw["files"])
        entry = CatalogEntry(
            name=name,
            display_name=str(raw.get("display_name", name)),
            kind=kind,
            repo=str(raw["repo"]),
            revision=str(raw.get("revision", "main")),
            files=files,
            approx_bytes=int(raw["approx_bytes"]) if raw.get("approx_bytes") is not None else None,
            license=str(raw.get("license", "unknown")),
            precision=str(raw.get("precision", "int4")),
            description=str(raw.get("description", "")),
            license_url=str(raw.get("license_url", "")),
            model_file=str(raw["model_file"]) if raw.get("model_file") else None,
            is_default=name == default,
        )
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        raise ModelError(f"{where}: a catalogue entry is incomplete ({exc})") from None
    if kind not in KINDS:
        raise ModelError(f"{where}: {name}: unknown kind '{kind}' (choose {', '.join(KINDS)})")
    if not files:
        raise ModelError(f"{where}: {name}: no files")
    if kind == "onnx" and entry.model_file not in files:
        raise ModelError(f"{where}: {name}: model_file must be one of its files")
    return entry


def load_catalog(path: Path | None = None) -> list[CatalogEntry]:
    """Read the catalogue: the packaged one, or ``path`` (tests and mirrors use their own).

    Raises:
        ModelError: the file is missing, not JSON, or an entry is incomplete.
    """
    if path is None:
        where = "the packaged catalogue"
        text = resources.files("qwen_desktop").joinpath("data/catalog.json").read_text(encoding="utf-8")
    else:
        where = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ModelError(f"{path}: cannot read the catalogue ({exc.strerror or exc})") from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ModelError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != CATALOG_FORMAT:
        raise ModelError(f"{where}: not a Qwen Desktop catalogue")
    version = doc.get("format_version", 0)
    if not isinstance(version, int) or isinstance(version, bool):
        raise ModelError(f"{where}: format_version is not a number")
    if version > CATALOG_VERSION:
        raise ModelError(f"{where}: made for a newer Qwen Desktop; please update")
    default = str(doc.get("default", ""))
    models = doc.get("models", [])
    if not isinstance(models, list) or not all(isinstance(raw, dict) for raw in models):
        raise ModelError(f"{where}: models is not a list of entries")
    entries = [_entry(raw, default, where) for raw in models]
    names = [e.name for e in entries]
    if len(set(names)) != len(names):
        raise ModelError(f"{where}: a model name appears twice")
    return entries


def load_app_catalog(override: str | Path | None = None) -> list[CatalogEntry]:
    """The catalogue the app and the CLI offer: ``override`` (``--catalog``), else ``$QWEN_DESKTOP_CATALOG``,
    else the packaged one."""
    path = override or os.environ.get(CATALOG_ENV)
    return load_catalog(Path(path) if path else None)


def find_entry(name: str, catalog: list[CatalogEntry] | None = None) -> CatalogEntry:
    """The catalogue entry called ``name``.

    Raises:
        ModelError: no such entry (the message lists the known names).
    """
    entries = load_catalog() if catalog is None else catalog
    for entry in entries:
        if entry.name == name:
            return entry
    known = ", ".join(e.name for e in entries)
    raise ModelError(f"unknown model '{name}'; the catalogue has: {known}")


def default_entry(catalog: list[CatalogEntry] | None = None) -> CatalogEntry:
    """The entry offered first (qwen2.5-0.5b-instruct in the packaged catalogue)."""
    entries = load_catalog() if catalog is None else catalog
    return next((e for e in entries if e.is_default), entries[0])
