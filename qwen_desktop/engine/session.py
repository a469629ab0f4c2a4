"""ONNX Runtime session and KV cache for one model folder.

``OnnxModel.forward(ids)`` appends tokens to the cache and returns logits for the last positions;
``rewind(n)`` drops cached positions past ``n`` so a new prompt that shares a prefix with the old one
only prefills what differs.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.model_files import ModelFiles

# How long the caller's ``alongside`` work waits after the session loaders have started, so that each is
# inside ONNX Runtime (GIL released) before work that holds the GIL begins.
ALONGSIDE_DELAY_S = 0.01


def default_threads() -> int:
    """Physical-core count is what ORT scales with; without a portable way to read it, use all CPUs."""
    return max(1, os.cpu_count() or 1)


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


# Prompts of at least this many new tokens go through the int8 prefill graph when the folder has one: below
# it the 4-bit decode graph, which reads half the weight bytes, is as fast (docs/engine.md).
PREFILL_MIN_TOKENS = 8


CACHE_SOURCE = "graph.txt"  # in each cache entry: the graph it was made from


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


def _cache_files(cached: Path) -> tuple[Path, ...]:
    """A cached optimized graph and its external weights file (which ONNX Runtime maps)."""
    return (cached, cached.with_name(cached.name + ".data"))


class ContextFullError(ModelError):
    """More tokens than the KV cache was sized for."""


def session_options(ort: Any, threads: int, spinning: bool, optimize: bool = True) -> Any:
    """ONNX Runtime options for one generation session (``optimize=False`` for an already optimized graph)."""
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    opts.add_session_config_entry("session.intra_op.allow_spinning", "1" if spinning else "0")
    # A model runs two or three sessions in turn (decoder, head, prefill); threads one of them leaves
    # spinning after its run would take a core from the next. Decode with a separate head: 0.90x without
    # this, 0.99x with it, against the head inside the decode graph (docs/engine.md).
    opts.add_session_config_entry("session.force_spinning_stop", "1")
    opts.log_severity_level = 3
    return opts


@dataclass
class _Opened:
    """A session as ``OnnxModel._open`` made it."""

    session: Any
    cache_entry: Path | None = None  # the cache entry its graph uses (kept when the cache is tidied)
    made_entry: bool = False  # this load wrote that entry
    files: tuple[Path, ...] = ()  # the files its weights are read or mapped from
    cached: bool = False  # read from the optimized-graph cache (a start after the first)


@dataclass(frozen=True)
class CacheState:
    """A conversation's KV cache put aside (``OnnxModel.save_cache``)."""

    tokens: list[int]
    arrays: dict[str, Any]


class OnnxModel:
    """A loaded graph plus its KV cache. Not thread-safe: one generation at a time.

    Args:
        files: the model folder.
        threads: ONNX Runtime intra-op threads (0 = all cores).
        max_len: KV cache capacity in tokens (prompt + reply).
        spinning: let idle ORT threads spin between ops (lower latency, more CPU).
        cache_root: keep an optimized, pre-packed copy of the graph here (see ``_open``); None to skip.
        alongside: work of the caller's to run on its own thread while the sessions build (the chat
            engine reads the tokenizer); its exception, if any, is raised once the sessions are done.
        prefill: open the folder's prefill graph (when it has one). False ("Use less memory") runs
            prompts on the decode graph too: one weight set resident instead of two (~390 MB less for the
            0.5B model), prompts 1.6-2.4x as long (docs/engine.md, "Use less memory").
    """

    def __init__(
        self,
        files: ModelFiles,
        threads: int = 0,
        max_len: int = 4096,
        spinning: bool = True,
        cache_root: Path | None = None,
        alongside: Callable[[], None] | None = None,
        prefill: bool = True,
    ) -> None:
        import onnxruntime as ort

        self.files = files
        self.threads = threads or default_threads()
        self.max_len = min(max_len, files.max_context)
        self.spinning = spinning
        self._ort = ort
        started = time.perf_counter()
        # The prefill graph shares the KV buffers (fast style only: plain graphs hand the cache back). A
        # format-2 folder's head graph turns either graph's hidden states into logits. All sessions spin
        # alike: each stops its threads spinning at the end of its run (session_options), so none takes a
        # core from the next; a short prefill pass (a new question after 342 cached tokens) then ran 0.87-0.91x
        # the time of one that never spins. ONNX Runtime releases the GIL while it creates a session, so the
        # sessions load side by side, each on its own thread (two graphs: 0.95 s -> 0.55 s for the 0.5B
        # model from the cache), and the caller's thread is free for ``alongside``.
        graphs = {"decode": files.graph}  # role -> graph
        if files.style == "fast":
            if files.prefill_graph is not None and prefill:
                graphs["prefill"] = files.prefill_graph
            if files.head_graph is not None:
                graphs["head"] = files.head_graph
        opened: dict[str, _Opened] = {}
        failed: list[BaseException] = []
        entering = [threading.Event() for _ in graphs]

        def open_one(role: str, graph: Path, entered: threading.Event) -> None:
            try:
                opened[role] = self._open(graph, cache_root, spinning, entered=entered)
            except BaseException as exc:  # handed to the caller's thread below
                failed.append(exc)
            finally:
                entered.set()

        loaders = [
            threading.Thread(target=open_one, args=(role, g, ev), name=f"qwen-{role}-load", daemon=True)
            for (role, g), ev in zip(graphs.items(), entering, strict=True)
        ]
        for t in loaders:
            t.start()
        try:
            if alongside is not None:
                # The caller's own loading (the tokenizer) runs while the sessions build. It may hold the
                # GIL throughout (the tokenizers library does), so it starts only once every loader is
                # about to enter ONNX Runtime, which releases the GIL while it builds a session.
                for ev in entering:
                    ev.wait()
                time.sleep(ALONGSIDE_DELAY_S)
                alongside()
        finally:
            for t in loaders:
                t.join()
        if failed:
            raise failed[0]
        self.session: Any = opened["decode"].session
        self.prefill_session: Any = opened["prefill"].session if "prefill" in opened else None
        self.head_session: Any = opened["head"].session if "head" in opened else None
        # role -> the files each session's weights come from (memory.memory_use counts their resident pages)
        self.graph_files: dict[str, tuple[Path, ...]] = {role: o.files for role, o in opened.items()}
        self.from_cache = all(o.cached for o in opened.values())  # every session skipped optimization
        if cache_root is not None and any(o.made_entry for o in opened.values()):
            # Tidy once all sessions are open: done earlier, it could remove another graph's copy while
            # that copy is still being written.
            with contextlib.suppress(OSError):
                drop_stale_cache_entries(
                    cache_root, [o.cache_entry for o in opened.values() if o.cache_entry]
                )
        self.load_seconds = time.perf_counter() - started
        inputs = {i.name: i for i in self.session.get_inputs()}
        self._input_names = set(inputs)
        first_kv = inputs.get("kv_cache.0.key") or inputs["past_key_values.0.key"]
        self.kv_dtype = np.float16 if "float16" in first_kv.type else np.float32
        self.tokens: list[int] = []  # what the cache holds, position by position
        self._prefill_binding: Any = None
        if files.style == "fast":
            self._init_fast()
        else:
            self._init_plain()

    def _open(
        self, graph: Path, cache_root: Path | None, spinning: bool, entered: threading.Event | None = None
    ) -> _Opened:
        """Open a session on ``graph``. With ``cache_root``, the graph is optimized and its weights
        pre-packed once and saved there; later loads read that copy and skip both steps (about 2 s -> 0.8 s
        for 0.5B int4). ``entered`` is set just before the session is built."""
        ort = self._ort
        entered = entered or threading.Event()
        plain = (graph,)
        if cache_root is None:
            entered.set()
            return _Opened(self._create(graph, session_options(ort, self.threads, spinning)), files=plain)
        entry: Path | None = None
        try:
            cached = optimized_cache_path(graph, cache_root)
            entry = cached.parent
            if cached.is_file():
                try:
                    opts = session_options(ort, self.threads, spinning, optimize=False)
                    entered.set()
                    session = ort.InferenceSession(str(cached), opts, providers=["CPUExecutionProvider"])
                    return _Opened(session, entry, files=_cache_files(cached), cached=True)
                except Exception:  # a damaged or foreign cache: drop it and rebuild it from the original
                    shutil.rmtree(cached.parent, ignore_errors=True)
            tmp = cached.parent.with_name(cached.parent.name + ".partial")
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        except OSError:
            entered.set()
            return _Opened(
                self._create(graph, session_options(ort, self.threads, spinning)), entry, files=plain
            )
        entered.set()
        opts = session_options(ort, self.threads, spinning)
        opts.optimized_model_filepath = str(tmp / cached.name)
        opts.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", cached.name + ".data"
        )
        opts.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        opts.add_session_config_entry("session.save_external_prepacked_constant_initializers", "1")
        try:
            session = self._create(graph, opts)
            source = str(graph.resolve())
            (tmp / CACHE_SOURCE).write_text(source, encoding="utf-8")
            tmp.rename(cached.parent)
        except (OSError, ModelError):
            # Writing the cache failed (a full disk, say) or the graph itself is bad: try once without the
            # cache, which raises the clear ModelError if the graph is the problem.
            shutil.rmtree(tmp, ignore_errors=True)
            return _Opened(
                self._create(graph, session_options(ort, self.threads, spinning)), entry, files=plain
            )
        # This session read the original graph; later loads map the cached copy.
        return _Opened(session, entry, made_entry=True, files=plain)

    def _create(self, graph: Path, opts: Any) -> Any:
        try:
            return self._ort.InferenceSession(str(graph), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:  # ORT raises its own Fail/InvalidGraph/NoSuchFile types
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelError(
                f"{self.files.folder.name}: the model cannot be loaded ({first[:300]})"
            ) from None

    # -- cache ------------------------------------------------------------------------------------------------
    @property
    def length(self) -> int:
        return len(self.tokens)

    def _init_fast(self) -> None:
        f = self.files
        self._logits: dict[int, Any] = {}
        self._hidden: dict[int, Any] = {}  # [1, keep, hidden] buffers between the decoder and the head
        self._head_binding = self.head_session.io_binding() if self.head_session else None
        self._views = f.kv_layout == "views"
        if self._views:
            # One sequence-major buffer per layer and kind, [max_len, kv_heads, head_dim]. A pass of n new
            # tokens binds rows [0, past + n) as the graph's cache view (a contiguous prefix: no copy) and
            # rows [past, past + n) as its new-position outputs, which the graph writes before its
            # attention reads them back through the view.
            rows = (self.max_len, f.num_kv_heads, f.head_dim)
            self._cache = {
                f"{i}.{kind}": np.zeros(rows, self.kv_dtype)
                for i in range(f.num_layers)
                for kind in ("key", "value")
            }
            self._row_bytes = f.num_kv_heads * f.head_dim * np.dtype(self.kv_dtype).itemsize
            self._view_slots = [
                (f"kv_cache.{name}", f"kv_new.{name}", buf.ctypes.data) for name, buf in self._cache.items()
            ]
            # IOBinding's public methods make a device object per call (~7 us a binding); 48 bindings a pass
            # are cheaper through the object they wrap, with one device, where this ONNX Runtime has both.
            try:
                self._device: Any = self._ort.OrtDevice.make("cpu", 0)._get_c_device()
            except AttributeError:
                self._device = None
            self._binding = self.session.io_binding()
            self._prefill_binding = self.prefill_session.io_binding() if self.prefill_session else None
            return
        shape = (1, f.num_kv_heads, self.max_len, f.head_dim)  # [batch, kv_heads, max_len, head_dim]
        self._kv = {
            f"{i}.{kind}": self._ort.OrtValue.ortvalue_from_numpy(np.zeros(shape, self.kv_dtype))
            for i in range(f.num_layers)
            for kind in ("key", "value")
        }
        self._mask = np.ones((1, self.max_len), np.int64)  # attention_mask views are slices of this
        self._binding = self._bind_cache(self.session)
        self._prefill_binding = self._bind_cache(self.prefill_session) if self.prefill_session else None

    def _bind_cache(self, session: Any) -> Any:
        binding = session.io_binding()
        for name, value in self._kv.items():
            # past and present are one buffer: GroupQueryAttention writes the new positions in place.
            binding.bind_ortvalue_input(f"past_key_values.{name}", value)
            binding.bind_ortvalue_output(f"present.{name}", value)
        return binding

    def _bind_views(self, binding: Any, n: int) -> None:
        """Bind the cache view for a pass of ``n`` new tokens and the rows those tokens are written to
        (``forward`` has checked that they fit in the buffers)."""
        past = self.length
        kv, d = self.files.num_kv_heads, self.files.head_dim
        dtype, row = self.kv_dtype, self._row_bytes
        view, new = [past + n, kv, d], [1, n, kv * d]
        raw = getattr(binding, "_iobinding", None)
        if raw is not None and self._device is not None:
            device = self._device
            for view_name, new_name, ptr in self._view_slots:
                raw.bind_input(view_name, device, dtype, view, ptr)
                raw.bind_output(new_name, device, dtype, new, ptr + past * row)
            return
        for view_name, new_name, ptr in self._view_slots:
            binding.bind_input(view_name, "cpu", 0, dtype, view, ptr)
            binding.bind_output(new_name, "cpu", 0, dtype, new, ptr + past * row)

    def _init_plain(self) -> None:
        f = self.files
        empty = np.zeros((1, f.num_kv_heads, 0, f.head_dim), self.kv_dtype)  # [batch, kv_heads, 0, head_dim]
        self._empty = self._ort.OrtValue.ortvalue_from_numpy(empty)
        self._past: dict[str, Any] = {}
        self._output_names = [o.name for o in self.session.get_outputs()]

    def save_cache(self) -> CacheState:
        """A copy of the cached conversation (its tokens and their keys and values), to ``restore_cache``
        after other work has used the cache. Copies only the positions in use."""
        n = self.length
        if self.files.style == "plain":  # each pass makes new arrays: keeping references is a snapshot
            return CacheState(list(self.tokens), dict(self._past))
        if self._views:
            return CacheState(list(self.tokens), {k: buf[:n].copy() for k, buf in self._cache.items()})
        # [batch, kv_heads, max_len, head_dim] -> the first n positions
        return CacheState(list(self.tokens), {k: v.numpy()[:, :, :n].copy() for k, v in self._kv.items()})

    def restore_cache(self, state: CacheState) -> None:
        """Put back a conversation saved by ``save_cache`` (of this same session)."""
        n = len(state.tokens)
        if self.files.style == "plain":
            self._past = dict(state.arrays)
        elif self._views:
            for k, buf in self._cache.items():
                buf[:n] = state.arrays[k]
        else:
            for k, value in self._kv.items():
                full = value.numpy()  # a view of the bound buffer where ONNX Runtime gives one, else a copy
                full[:, :, :n] = state.arrays[k]
                if full.ctypes.data != value.data_ptr():
                    value.update_inplace(full)
        self.tokens[:] = state.tokens

    def reset(self) -> None:
        """Forget the cached conversation."""
        self.rewind(0)

    def rewind(self, n: int) -> None:
        """Keep only the first ``n`` cached positions."""
        if n >= self.length:
            return
        del self.tokens[n:]
        if self.files.style == "plain" and self._past:
            if n == 0:
                self._past = {}
            else:
                self._past = {
                    # [batch, kv_heads, past, head_dim] -> [batch, kv_heads, n, head_dim]
                    k: self._ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(v.numpy()[:, :, :n]))
                    for k, v in self._past.items()
                }
        # fast style: positions past n are simply overwritten later; the mask length tells GQA where to stop.

    # -- forward ----------------------------------------------------------------------------------------------
    def forward(self, ids: Sequence[int], keep: int = 1) -> np.ndarray:
        """Append ``ids`` to the cache and return logits ``[keep, vocab]`` for the last ``keep`` of them."""
        if not ids:
            raise ValueError("forward needs at least one token")
        keep = min(keep, len(ids))
        total = self.length + len(ids)
        if total > self.max_len:  # also keeps the rows a views graph writes inside its buffers
            raise ContextFullError(
                f"the conversation needs {total} tokens but the context holds {self.max_len}"
            )
        if self.files.style == "fast":
            logits = self._forward_fast(ids, keep, total)
        else:
            logits = self._forward_plain(ids, keep, total)
        self.tokens.extend(int(t) for t in ids)
        return logits

    def _forward_fast(self, ids: Sequence[int], keep: int, total: int) -> np.ndarray:
        session, b = self.session, self._binding
        if self._prefill_binding is not None and len(ids) >= PREFILL_MIN_TOKENS:
            session, b = self.prefill_session, self._prefill_binding
        b.bind_cpu_input("input_ids", np.asarray([ids], dtype=np.int64))  # [1, seq]
        if self._views:
            self._bind_views(b, len(ids))
        else:
            b.bind_cpu_input("attention_mask", self._mask[:, :total])  # [1, past + seq]
        b.bind_cpu_input("num_logits_to_keep", np.array(keep, dtype=np.int64))
        out = self._logits.get(keep)
        if out is None:
            out = self._ort.OrtValue.ortvalue_from_numpy(
                np.zeros((1, keep, self.files.vocab_size), np.float32)
            )
            self._logits[keep] = out
        if self._head_binding is None:
            b.bind_ortvalue_output("logits", out)
            session.run_with_iobinding(b)
        else:
            hidden = self._hidden.get(keep)
            if hidden is None:
                hidden = self._ort.OrtValue.ortvalue_from_numpy(
                    np.zeros((1, keep, self.files.hidden_size), np.float32)
                )
                self._hidden[keep] = hidden
            b.bind_ortvalue_output("hidden", hidden)
            session.run_with_iobinding(b)
            h = self._head_binding
            h.bind_ortvalue_input("hidden", hidden)
            h.bind_ortvalue_output("logits", out)
            self.head_session.run_with_iobinding(h)
        result: np.ndarray = out.numpy()[0]  # [keep, vocab]
        return result

    def _forward_plain(self, ids: Sequence[int], keep: int, total: int) -> np.ndarray:
        f = self.files
        b = self.session.io_binding()
        b.bind_cpu_input("input_ids", np.asarray([ids], dtype=np.int64))
        b.bind_cpu_input("attention_mask", np.ones((1, total), np.int64))
        if "position_ids" in self._input_names:
            b.bind_cpu_input("position_ids", np.arange(self.length, total, dtype=np.int64)[None])
        for i in range(f.num_layers):
            for kind in ("key", "value"):
                b.bind_ortvalue_input(
                    f"past_key_values.{i}.{kind}", self._past.get(f"{i}.{kind}", self._empty)
                )
        for name in self._output_names:
            b.bind_output(name, "cpu")
        self.session.run_with_iobinding(b)
        outs = b.get_outputs()
        self._past = {}
        for name, value in zip(self._output_names, outs, strict=True):
            if name.startswith("present."):
                self._past[name.removeprefix("present.")] = value  # handed back next step, never copied
        logits: np.ndarray = outs[self._output_names.index("logits")].numpy()[0]  # [seq, vocab]
        return np.asarray(logits[-keep:], dtype=np.float32)
