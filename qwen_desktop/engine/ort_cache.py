"""The optimized-graph cache: ONNX Runtime's optimized, weight-pre-packed copy of each graph, made on the
first load and read by every later one (about 2 s -> 0.8 s for the 0.5B int4 model).

An entry is a folder under the cache root named by a key of the graph file, the ONNX Runtime version and
the CPU (pre-packed weights are specific to both): ``model.opt.onnx``, its external weights
``model.opt.onnx.data`` (which ONNX Runtime maps) and ``graph.txt``, the graph it was made from. An entry is
written as ``<key>.partial`` and renamed when complete; a damaged one is dropped and made again; one that no
graph will use again is removed (``drop_stale_cache_entries``).
"""

from __future__ import annotations

import contextlib
import hashlib
import platform
import shutil
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.memory import return_freed_memory

CACHE_SOURCE = "graph.txt"  # in each cache entry: the graph it was made from

# (optimize) -> SessionOptions: True for an original graph, False for an optimized copy
OptionsFor = Callable[[bool], Any]
# (graph, options) -> an InferenceSession, or ModelError
CreateSession = Callable[[Path, Any], Any]


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("model name", "flags")):
                return line
    except OSError:
        pass
    return platform.processor() or platform.machine()


def optimized_cache_path(graph: Path, cache_root: Path) -> Path:
    """Where the optimized, pre-packed copy of ``graph`` lives. The key covers the graph file, the ONNX
    Runtime version and the CPU, because pre-packed weights are specific to both."""
    import onnxruntime as ort

    st = graph.stat()
    key = f"{graph.resolve()}|{st.st_size}|{st.st_mtime_ns}|{ort.__version__}|{_cpu_name()}"
    return cache_root / hashlib.sha256(key.encode()).hexdigest()[:20] / "model.opt.onnx"


def cache_files(cached: Path) -> tuple[Path, ...]:
    """A cached optimized graph and its external weights file (which ONNX Runtime maps)."""
    return (cached, cached.with_name(cached.name + ".data"))


def drop_stale_cache_entries(cache_root: Path, keep: Collection[Path]) -> None:
    """Remove optimized copies that no graph will use again: older copies of the graphs that the entries in
    ``keep`` were made from (rebuilt or re-imported models), copies of graphs that no longer exist, and
    entries made before they recorded their graph. Each holds the model's weights twice, so left alone they
    pile up."""
    kept = set(keep)
    sources = set()
    for entry in kept:
        with contextlib.suppress(OSError):
            sources.add((entry / CACHE_SOURCE).read_text(encoding="utf-8"))
    for entry in cache_root.iterdir():
        if entry in kept or not entry.is_dir():
            continue
        try:
            other = (entry / CACHE_SOURCE).read_text(encoding="utf-8")
        except OSError:
            other = ""
        if entry.name.endswith(".partial") or other == "" or other in sources or not Path(other).is_file():
            shutil.rmtree(entry, ignore_errors=True)


@dataclass
class OpenedGraph:
    """A session as ``open_graph`` made it."""

    session: Any
    cache_entry: Path | None = None  # the cache entry its graph uses (kept when the cache is tidied)
    made_entry: bool = False  # this load wrote that entry
    files: tuple[Path, ...] = ()  # the files its weights are read or mapped from
    cached: bool = False  # read from the optimized-graph cache (a start after the first)


def open_graph(
    graph: Path,
    cache_root: Path | None,
    options: OptionsFor,
    create: CreateSession,
    entered: threading.Event | None = None,
) -> OpenedGraph:
    """Open a session on ``graph`` through the cache at ``cache_root`` (None: no cache).

    A cached copy is opened without optimizing again; without one, the session optimizes the graph, saves
    the copy as it is built, and the entry is renamed into place once complete. If the cache cannot be read
    or written (a full disk, a read-only folder) the graph opens without it. ``entered`` is set just before
    the session is built (ONNX Runtime releases the GIL from there on).
    """
    entered = entered or threading.Event()
    plain = (graph,)
    if cache_root is None:
        entered.set()
        return OpenedGraph(create(graph, options(True)), files=plain)
    entry: Path | None = None
    try:
        cached = optimized_cache_path(graph, cache_root)
        entry = cached.parent
        if cached.is_file():
            try:
                opts = options(False)
                entered.set()
                session = create(cached, opts)
                return OpenedGraph(session, entry, files=cache_files(cached), cached=True)
            except Exception:  # a damaged or foreign cache: drop it and rebuild it from the original
                shutil.rmtree(cached.parent, ignore_errors=True)
        tmp = cached.parent.with_name(cached.parent.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    except OSError:
        entered.set()
        return OpenedGraph(create(graph, options(True)), entry, files=plain)
    entered.set()
    opts = options(True)
    opts.optimized_model_filepath = str(tmp / cached.name)
    opts.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", cached.name + ".data"
    )
    opts.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
    opts.add_session_config_entry("session.save_external_prepacked_constant_initializers", "1")
    try:
        session = create(graph, opts)
        (tmp / CACHE_SOURCE).write_text(str(graph.resolve()), encoding="utf-8")
        tmp.rename(cached.parent)
    except (OSError, ModelError):
        # Writing the cache failed (a full disk, say) or the graph itself is bad: try once without the
        # cache, which raises the clear ModelError if the graph is the problem.
        shutil.rmtree(tmp, ignore_errors=True)
        return OpenedGraph(create(graph, options(True)), entry, files=plain)
    # The session that optimized the graph holds its weights in anonymous memory (~1 GB more for the 0.5B
    # model, for as long as the model stays loaded); the copy just written maps them from the file instead,
    # as every later start does. Opening it costs one more session build, on the first start only.
    del session
    return_freed_memory()
    try:
        session = create(cached, options(False))
    except Exception:  # the copy does not open: fall back to a session on the original graph
        shutil.rmtree(cached.parent, ignore_errors=True)
        return OpenedGraph(create(graph, options(True)), entry, files=plain)
    return OpenedGraph(session, entry, made_entry=True, files=cache_files(cached))
