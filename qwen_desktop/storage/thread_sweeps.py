"""What "Auto" threads measured: decode tokens/s per thread count, kept per machine and model.

The window measures once (at idle, never in front of the user) and reuses the figures on every later load of
the same model on the same machine. The file is a rebuildable measurement, so it lives in the cache folder
(``paths.cache_dir()/thread-sweeps.json``): deleting it only means measuring again. A damaged file reads as
empty; writes are atomic.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import time
from pathlib import Path
from typing import Any

from qwen_desktop.storage.errors import StorageError
from qwen_desktop.storage.files import atomic_write_bytes, read_json

FILE_NAME = "thread-sweeps.json"
FORMAT = "qwen-desktop-thread-sweeps"
MAX_ENTRIES = 64  # models measured; the oldest go first


def machine_id() -> str:
    """This CPU as the figures depend on it: its model name and logical core count."""
    name = ""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    return f"{name or platform.processor() or platform.machine() or 'cpu'} × {os.cpu_count() or 1}"


class ThreadSweeps:
    """The measured speeds in one file, by ``key`` (the caller's name for a model; the machine is added)."""

    def __init__(self, path: Path, machine: str | None = None) -> None:
        self.path = Path(path)
        self.machine = machine_id() if machine is None else machine

    def get(self, key: str) -> dict[int, float] | None:
        """Tokens/s by thread count measured for ``key`` on this machine, or None if never measured."""
        entry = self._entries().get(self._full(key))
        if not isinstance(entry, dict):
            return None
        speeds = _speeds(entry.get("speeds"))
        return speeds or None

    def put(self, key: str, speeds: dict[int, float]) -> None:
        """Keep ``speeds`` for ``key`` on this machine.

        Raises:
            StorageError: the file cannot be written (the measurement is then only kept in memory).
        """
        entries = self._entries()
        entries.pop(self._full(key), None)
        entries[self._full(key)] = {
            "speeds": {str(n): round(float(v), 2) for n, v in sorted(speeds.items())},
            "measured": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        while len(entries) > MAX_ENTRIES:
            entries.pop(next(iter(entries)))
        doc = {"format": FORMAT, "format_version": 1, "entries": entries}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
        atomic_write_bytes(self.path, text.encode("utf-8"), what="save the thread measurements to")

    def _full(self, key: str) -> str:
        return f"{self.machine} | {key}"

    def _entries(self) -> dict[str, Any]:
        try:
            doc = read_json(self.path.read_bytes())
        except (OSError, StorageError):
            return {}
        if (
            not isinstance(doc, dict)
            or doc.get("format") != FORMAT
            or not isinstance(doc.get("entries"), dict)
        ):
            return {}
        return dict(doc["entries"])


def _speeds(raw: object) -> dict[int, float]:
    """``{"1": 41.2, "2": 63.0}`` as ``{1: 41.2, 2: 63.0}``; anything malformed is dropped."""
    if not isinstance(raw, dict):
        return {}
    out: dict[int, float] = {}
    for count, speed in raw.items():
        try:
            n, tps = int(count), float(speed)
        except (TypeError, ValueError, OverflowError):
            continue
        if 0 < n <= 4096 and math.isfinite(tps) and tps > 0:
            out[n] = tps
    return out
