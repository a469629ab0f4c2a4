"""The ONNX Runtime sessions of one model folder over its KV cache.

``OnnxModel.forward(ids)`` appends tokens to the cache and returns logits for the last positions;
``rewind(n)`` drops cached positions past ``n`` so a new prompt that shares a prefix with the old one
only prefills what differs. The cache layouts are in kv_cache.py, the optimized-graph cache in ort_cache.py.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.int8_check import int8_products_clip
from qwen_desktop.engine.kv_cache import CacheShapeError, CacheState, KVCache, make_kv_cache
from qwen_desktop.engine.model_files import ModelFiles
from qwen_desktop.engine.ort_cache import OpenedGraph, drop_stale_cache_entries, open_graph

# How long the caller's ``alongside`` work waits after the session loaders have started, so that each is
# inside ONNX Runtime (GIL released) before work that holds the GIL begins.
ALONGSIDE_DELAY_S = 0.01

# Prompts of at least this many new tokens go through the int8 prefill graph when the folder has one: below
# it the 4-bit decode graph, which reads half the weight bytes, is as fast (docs/engine.md).
PREFILL_MIN_TOKENS = 8
# A run of at least this many new tokens (a prompt) hands the arena's free chunks back when it ends. Its
# intermediates ([tokens, intermediate] activations, [heads, tokens, past] scores) are tens of MB that
# decoding never needs again; kept, they stayed resident for the rest of the session (docs/benchmarks.md,
# "Our memory, broken down"). Decode steps and prompt-lookup checks are shorter and keep the arena as it is.
SHRINK_MIN_TOKENS = 64
# "on" opens the int8 prefill graph even where this CPU's int8 kernel clips (int8_check.py): for tests and
# measurements of the two-graph path on such a CPU; the prompts' logits are then off.
INT8_PREFILL_ENV = "QWEN_DESKTOP_INT8_PREFILL"


def default_threads() -> int:
    """Physical-core count is what ORT scales with; without a portable way to read it, use all CPUs."""
    return max(1, os.cpu_count() or 1)


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


class OnnxModel:
    """A loaded graph plus its KV cache. Not thread-safe: one generation at a time.

    Args:
        files: the model folder.
        threads: ONNX Runtime intra-op threads (0 = all cores).
        max_len: KV cache capacity in tokens (prompt + reply).
        spinning: let idle ORT threads spin between ops (lower latency, more CPU).
        cache_root: keep an optimized, pre-packed copy of the graph here (ort_cache.py); None to skip.
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
        self._shrink = ort.RunOptions()
        self._shrink.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        started = time.perf_counter()
        # The prefill graph shares the KV buffers (fast style only: plain graphs hand the cache back). A
        # format-2 folder's head graph turns either graph's hidden states into logits. All sessions spin
        # alike: each stops its threads spinning at the end of its run (session_options), so none takes a
        # core from the next; a short prefill pass (a new question after 342 cached tokens) then ran 0.87-0.91x
        # the time of one that never spins. ONNX Runtime releases the GIL while it creates a session, so the
        # sessions load side by side, each on its own thread (two graphs: 0.95 s -> 0.55 s for the 0.5B
        # model from the cache), and the caller's thread is free for ``alongside``.
        graphs = {"decode": files.graph}  # role -> graph
        # Why the folder's prefill graph stays closed, if it does: None when it is open or there is none.
        self.prefill_skipped: str | None = None
        if files.style == "fast":
            if files.prefill_graph is not None and prefill:
                if int8_products_clip() and os.environ.get(INT8_PREFILL_ENV) != "on":
                    # its int8 products would clip on this CPU (int8_check.py): the 4-bit graph is exact
                    self.prefill_skipped = (
                        "this CPU's int8 kernel clips (no VNNI): prompts use the 4-bit graph"
                    )
                else:
                    graphs["prefill"] = files.prefill_graph
            elif files.prefill_graph is not None:
                self.prefill_skipped = "Use less memory"
            if files.head_graph is not None:
                graphs["head"] = files.head_graph
        opened: dict[str, OpenedGraph] = {}
        failed: list[BaseException] = []
        entering = [threading.Event() for _ in graphs]

        def open_one(role: str, graph: Path, entered: threading.Event) -> None:
            try:
                opened[role] = open_graph(
                    graph,
                    cache_root,
                    lambda optimize: session_options(ort, self.threads, spinning, optimize),
                    self._create,
                    entered,
                )
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
        self.kv_cache: KVCache = make_kv_cache(files, self.max_len, self.kv_dtype, ort)
        try:
            for session in (self.session, self.prefill_session):
                if session is not None:
                    self.kv_cache.check_graph(session)
        except CacheShapeError as exc:  # the manifest and the graphs disagree: say which folder
            raise CacheShapeError(f"{files.folder.name}: {exc}") from None
        self._binding: Any = None
        self._prefill_binding: Any = None
        if files.style == "fast":
            self._logits: dict[int, Any] = {}  # [1, keep, vocab] output buffers, by keep
            self._hidden: dict[int, Any] = {}  # [1, keep, hidden] buffers between the decoder and the head
            self._head_binding = self.head_session.io_binding() if self.head_session else None
            self._binding = self._bind_cache(self.session)
            self._prefill_binding = self._bind_cache(self.prefill_session) if self.prefill_session else None
        else:
            self._output_names = [o.name for o in self.session.get_outputs()]

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

    def _bind_cache(self, session: Any) -> Any:
        """A binding of ``session`` with what the cache keeps bound for its lifetime."""
        binding = session.io_binding()
        self.kv_cache.attach(binding)
        return binding

    def save_cache(self) -> CacheState:
        """A copy of the cached conversation (its tokens and their keys and values), to ``restore_cache``
        after other work has used the cache. Copies only the positions in use."""
        return CacheState(list(self.tokens), self.kv_cache.save(self.length))

    def restore_cache(self, state: CacheState) -> None:
        """Put back a conversation saved by ``save_cache`` (of this same session)."""
        self.kv_cache.restore(state.arrays, len(state.tokens))
        self.tokens[:] = state.tokens

    def reset(self) -> None:
        """Forget the cached conversation."""
        self.rewind(0)

    def rewind(self, n: int) -> None:
        """Keep only the first ``n`` cached positions."""
        if n >= self.length:
            return
        del self.tokens[n:]
        self.kv_cache.rewind(n)

    # -- forward ----------------------------------------------------------------------------------------------
    def forward(self, ids: Sequence[int], keep: int = 1) -> np.ndarray:
        """Append ``ids`` to the cache and return logits ``[keep, vocab]`` for the last ``keep`` of them."""
        if not ids:
            raise ValueError("forward needs at least one token")
        keep = min(keep, len(ids))
        total = self.length + len(ids)
        self.kv_cache.check_room(self.length, len(ids))
        run = self._shrink if len(ids) >= SHRINK_MIN_TOKENS else None  # a long run gives its arena back
        if self.files.style == "fast":
            logits = self._forward_fast(ids, keep, run)
        else:
            logits = self._forward_plain(ids, keep, total, run)
        self.tokens.extend(int(t) for t in ids)
        return logits

    def _forward_fast(self, ids: Sequence[int], keep: int, run: Any) -> np.ndarray:
        session, b = self.session, self._binding
        if self._prefill_binding is not None and len(ids) >= PREFILL_MIN_TOKENS:
            session, b = self.prefill_session, self._prefill_binding
        b.bind_cpu_input("input_ids", np.asarray([ids], dtype=np.int64))  # [1, seq]
        self.kv_cache.bind(b, self.length, len(ids))
        b.bind_cpu_input("num_logits_to_keep", np.array(keep, dtype=np.int64))
        out = self._logits.get(keep)
        if out is None:
            out = self._ort.OrtValue.ortvalue_from_numpy(
                np.zeros((1, keep, self.files.vocab_size), np.float32)
            )
            self._logits[keep] = out
        if self._head_binding is None:
            b.bind_ortvalue_output("logits", out)
            session.run_with_iobinding(b, run)
        else:
            hidden = self._hidden.get(keep)
            if hidden is None:
                hidden = self._ort.OrtValue.ortvalue_from_numpy(
                    np.zeros((1, keep, self.files.hidden_size), np.float32)
                )
                self._hidden[keep] = hidden
            b.bind_ortvalue_output("hidden", hidden)
            session.run_with_iobinding(b, run)
            h = self._head_binding
            h.bind_ortvalue_input("hidden", hidden)
            h.bind_ortvalue_output("logits", out)
            self.head_session.run_with_iobinding(h, run)
        result: np.ndarray = out.numpy()[0]  # [keep, vocab]
        return result

    def _forward_plain(self, ids: Sequence[int], keep: int, total: int, run: Any) -> np.ndarray:
        b = self.session.io_binding()
        b.bind_cpu_input("input_ids", np.asarray([ids], dtype=np.int64))  # [1, seq]
        b.bind_cpu_input("attention_mask", np.ones((1, total), np.int64))  # [1, past + seq]
        if "position_ids" in self._input_names:
            b.bind_cpu_input("position_ids", np.arange(self.length, total, dtype=np.int64)[None])
        self.kv_cache.bind(b, self.length, len(ids))
        for name in self._output_names:
            b.bind_output(name, "cpu")
        self.session.run_with_iobinding(b, run)
        outs = dict(zip(self._output_names, b.get_outputs(), strict=True))
        self.kv_cache.collect(outs, self.length, len(ids))  # handed back next step, never copied
        logits: np.ndarray = outs["logits"].numpy()[0]  # [seq, vocab]
        return np.asarray(logits[-keep:], dtype=np.float32)
