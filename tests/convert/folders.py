"""Byte-for-byte comparison of two built model folders (the builds must not depend on when or how they ran)."""

from __future__ import annotations

import json
from pathlib import Path


def folder_bytes(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its relative path, with the manifest's "created" time blanked: the only
    difference two builds of one source may have."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            if path.name == "manifest.json":
                data = json.dumps(json.loads(data) | {"created": None}).encode()
            out[str(path.relative_to(folder))] = data
    return out


def assert_same_bytes(first: Path, second: Path) -> None:
    """The two folders hold the same files with the same bytes (the manifest's "created" time aside)."""
    a, b = folder_bytes(first), folder_bytes(second)
    assert sorted(a) == sorted(b)
    assert [name for name in a if a[name] != b[name]] == []
