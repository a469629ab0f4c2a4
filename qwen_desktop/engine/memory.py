"""What the process's memory is made of: anonymous (the heap, ONNX Runtime's arenas, the KV cache) against
file-backed (weights mapped from the graph files, shared libraries), and how much of it each graph's files hold.

Linux only: read from ``/proc/self/smaps_rollup`` (kernel 4.14+), else ``/proc/self/status``; elsewhere
``memory_use`` returns None and ``qwen-desktop bench`` reports peak RSS alone.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROLLUP = Path("/proc/self/smaps_rollup")
SMAPS = Path("/proc/self/smaps")
STATUS = Path("/proc/self/status")

_KB = 1024.0  # kB per MB (the kernel's kB are KiB; MB here are MiB, like ru_maxrss / 1024)


@dataclass(frozen=True)
class MemoryUse:
    """Resident memory of the process, in MB.

    Attributes:
        rss_mb: all resident pages.
        anon_mb: anonymous pages: the heap, ONNX Runtime's arenas and copies of weights, the KV cache.
        file_mb: file-backed pages: weights mapped from the graph files, libraries; the kernel can drop
            them under pressure and read them back, so they cost less than anonymous memory.
        graphs_mb: file-backed resident pages of each graph's files (role -> MB), where known.
    """

    rss_mb: float
    anon_mb: float
    file_mb: float
    graphs_mb: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _kb_fields(text: str) -> dict[str, int]:
    """``Name:   123 kB`` lines -> {name: kB}; anything else is skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if not sep or not name or " " in name:
            continue
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isascii() and parts[0].isdigit():
            out[name] = int(parts[0])
    return out


def parse_smaps_rollup(text: str) -> MemoryUse | None:
    """Resident, anonymous and file-backed memory from ``/proc/PID/smaps_rollup`` text (or from
    ``/proc/PID/status``'s VmRSS/RssAnon/RssFile lines); None when the text has neither."""
    f = _kb_fields(text)
    if "Rss" in f and "Anonymous" in f:
        rss, anon = f["Rss"], min(f["Anonymous"], f["Rss"])
        shmem = f.get("Pss_Shmem", 0)  # shared memory is neither ours alone nor a file we read
        return MemoryUse(rss / _KB, anon / _KB, max(0, rss - anon - shmem) / _KB)
    if "VmRSS" in f and "RssAnon" in f:
        rss = f["VmRSS"]
        anon = min(f["RssAnon"], rss)
        return MemoryUse(rss / _KB, anon / _KB, min(f.get("RssFile", rss - anon), rss - anon) / _KB)
    return None


def _is_header(line: str) -> bool:
    """``7f0a...-7f0b... rw-p 00000000 fe:00 123  /path`` starts a mapping in smaps."""
    head = line.split(" ", 1)[0]
    lo, sep, hi = head.partition("-")
    if not sep or not lo or not hi:
        return False
    try:
        int(lo, 16)
        int(hi, 16)
    except ValueError:
        return False
    return True


def parse_smaps_by_path(text: str) -> dict[str, float]:
    """Resident MB per mapped path in ``/proc/PID/smaps`` text (anonymous mappings left out)."""
    out: dict[str, float] = {}
    path: str | None = None
    for line in text.splitlines():
        if _is_header(line):
            parts = line.split(None, 5)
            path = parts[5].strip() if len(parts) == 6 and parts[5].startswith("/") else None
            continue
        if path is not None and line.startswith("Rss:"):
            kb = _kb_fields(line).get("Rss", 0)
            out[path] = out.get(path, 0.0) + kb / _KB
    return out


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def memory_use(graph_files: Mapping[str, Sequence[Path]] | None = None) -> MemoryUse | None:
    """This process's memory now; with ``graph_files`` (role -> the files its session maps, as
    ``OnnxModel.graph_files`` gives them), the resident part of each. None where /proc is not there."""
    use = None
    text = _read(ROLLUP)
    if text is not None:
        use = parse_smaps_rollup(text)
    if use is None:
        text = _read(STATUS)
        use = parse_smaps_rollup(text) if text is not None else None
    if use is None:
        return None
    if graph_files:
        smaps = _read(SMAPS)
        if smaps is not None:
            by_path = parse_smaps_by_path(smaps)
            graphs = {
                role: sum(by_path.get(str(Path(p).resolve()), 0.0) for p in files)
                for role, files in graph_files.items()
            }
            use = MemoryUse(use.rss_mb, use.anon_mb, use.file_mb, graphs)
    return use


def return_freed_memory() -> None:
    """Give the heap's free pages back to the system; glibc keeps them otherwise (after a load: ~18 MB the
    tokenizer's loading freed). A no-op where the C library has no ``malloc_trim``."""
    gc.collect()
    with contextlib.suppress(AttributeError, OSError):  # not glibc
        ctypes.CDLL(None).malloc_trim(0)


__all__ = ["MemoryUse", "memory_use", "parse_smaps_by_path", "parse_smaps_rollup", "return_freed_memory"]
