"""Turn Qwen2 weights (a GGUF file or a Hugging Face folder) into a model folder the engine runs.

The folder holds ``model.onnx`` (plus ``model.onnx.data`` when the weights pass 2 GB), ``tokenizer.json``
and ``manifest.json``; quantized fast builds also hold ``prefill.onnx``, the same decoder with int8 weights
and int8 activations, which the engine runs for prompts (2-4x faster than 4-bit weights for many tokens at
once) while ``model.onnx`` decodes the reply; both then end at the final norm and feed ``head.onnx``, the
output head, which is stored and loaded once. The folder is written under a temporary name beside OUT and
renamed at the end, so an interrupted build leaves nothing half-made behind.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from threadpoolctl import threadpool_limits

from qwen_desktop import __version__
from qwen_desktop.convert.onnx_writer import (
    BLOCK_SIZE,
    FAST_BLOCK_SIZES,
    HEAD_CANDIDATES,
    KV_LAYOUTS,
    PRECISIONS,
    STYLES,
    build_graph,
    build_head_graph,
    fast_block_size,
)
from qwen_desktop.convert.tokenizer_files import with_string_merges
from qwen_desktop.convert.weights import WeightSource, check_tensors
from qwen_desktop.engine.errors import ModelError, OutputError
from qwen_desktop.engine.manifest import (
    HEAD_FILE,
    MANIFEST,
    MANIFEST_FORMAT,
    MANIFEST_VERSION,
    MODEL_FILE,
    PREFILL_FILE,
    TOKENIZER_FILE,
)
from qwen_desktop.engine.model_files import pretty_model_name

if TYPE_CHECKING:
    from qwen_desktop.convert.calibration import StreamedInputs

PROTOBUF_LIMIT = 2_000_000_000  # one protobuf message cannot pass 2 GiB; leave headroom for the graph itself

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class BuildResult:
    """What a finished build produced."""

    folder: Path
    seconds: float
    bytes_on_disk: int
    precision: str
    head_precision: str
    style: str
    prefill_precision: str | None = None
    fit: str = "plain"
    # seconds per phase, in the order they ran: reading, calibration, decode graph, prefill graph, …
    phases: tuple[tuple[str, float], ...] = ()


class _PhaseClock:
    """Seconds spent in each phase of a build (``build-model --timings``); a phase entered twice (writing
    each graph) adds up."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._name = ""
        self._since = time.monotonic()

    def start(self, name: str) -> None:
        now = time.monotonic()
        if self._name:
            self.seconds[self._name] = self.seconds.get(self._name, 0.0) + now - self._since
        self._name, self._since = name, now

    def stop(self) -> tuple[tuple[str, float], ...]:
        self.start("")
        return tuple(self.seconds.items())


PREFILL_PRECISIONS = ("w8a8", "none")
# How 4-bit weights are chosen: "gptq" fits them to calibration activations (data/calibration.txt through
# the float model), "plain" rounds each block on its own. docs/models.md, "Fitting the 4-bit weights".
FITS = ("gptq", "plain")
# How much a gptq build fits: "default" fits the matrices where the fit measurably helps (qkv, o, gate_up and
# the head); "best" also fits down_proj, which costs ~70% of the fitting time and moved neither figure of
# docs/models.md beyond its noise (91.17% agreement, KL 0.0393 with it; 91.03%, 0.0395 without).
QUALITIES = ("default", "best")
DEFAULT_FITTED = ("qkv_proj", "o_proj", "gate_up_proj", "lm_head")


def open_source(path: Path) -> WeightSource:
    """Open a GGUF file or a Hugging Face folder, whichever ``path`` is."""
    from qwen_desktop.convert.gguf_reader import GGUFSource
    from qwen_desktop.convert.hf_reader import HFFolderSource

    path = Path(path)
    if path.is_dir():
        return HFFolderSource(path)
    if not path.exists():
        raise ModelError(f"{path}: no such file or folder")
    return GGUFSource(path)


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def _disk_error(exc: OSError, out: Path) -> OutputError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return OutputError(f"not enough disk space to write the model to {out.parent} ({exc.strerror})")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return OutputError(f"cannot write to {out.parent}: {exc.strerror}")
    return OutputError(f"cannot write the model to {out}: {exc.strerror or exc}")


def _prepare_output(out: Path) -> Path:
    if out.exists():
        raise OutputError(f"{out} already exists; choose a new folder name (nothing was overwritten)")
    parent = out.parent
    if not parent.exists():
        try:
            parent.mkdir(parents=True)
        except OSError as exc:
            raise _disk_error(exc, out) from None
    if not parent.is_dir():
        raise OutputError(f"cannot write to {parent}: it is not a folder")
    tmp = parent / f".{out.name}.partial"
    if tmp.exists():
        shutil.rmtree(tmp, ignore_errors=True)  # left by a build that was killed
    try:
        tmp.mkdir()
    except OSError as exc:
        raise _disk_error(exc, out) from None
    return tmp


def build_model(
    src: Path,
    out: Path,
    precision: str = "int4",
    head_precision: str | None = None,
    style: str = "fast",
    progress: Progress | None = None,
    prefill: str = "w8a8",
    kv_layout: str = "views",
    fit: str = "gptq",
    quality: str = "default",
) -> BuildResult:
    """Build the model folder ``out`` from ``src`` (a .gguf file or a Hugging Face folder).

    Args:
        src: the weights.
        out: the folder to create; must not exist.
        precision: ``int4`` (default), ``int8`` or ``fp32`` for the decoder layers.
        head_precision: precision of the embedding and the output head; defaults to ``precision``.
            The head is a quarter of the weights and is read for every token: at int4 it decodes about
            1.5x faster than at int8 on a 2-core AVX2 laptop CPU, for about 1.5 points less next-token
            agreement with fp32 (docs/models.md).
        style: ``fast`` (ONNX Runtime contrib ops) or ``plain`` (standard ops, hub layout).
        progress: called as ``progress(stage, done, total)``.
        prefill: ``w8a8`` (default) also writes ``prefill.onnx`` for int4 and int8 fast builds: int8
            weights per output channel and int8 activations per token (MatMulIntegerToFloat), which
            prefill prompts 2-4x faster than MatMulNBits on CPUs with VNNI, for about 0.5 GB more memory;
            ``none`` leaves it out.
        kv_layout: fast style: ``views`` (default) or ``shared``, the GroupQueryAttention layout of
            format 2 folders, which the engine still runs (kept for the tests that check it does).
        fit: ``gptq`` (default) fits the fast style's 4-bit layer weights to the activations of a
            calibration text, which lets ``gate_up_proj`` use blocks of 64 (fewer bytes per token) at a
            smaller error than the plain fit at 32; it adds about a minute to a build on 2 cores. ``plain``
            rounds each block on its own. A tokenizer that reads too little of the text falls back to
            ``plain``.
        quality: with ``gptq``, ``default`` fits ``DEFAULT_FITTED`` (qkv, o, gate_up and the head) and
            rounds ``down_proj`` plainly; ``best`` fits ``down_proj`` too (about 2.5x the fitting time, no
            measurable gain on the 0.5B model: docs/models.md).

    Raises:
        ModelError: with a one-line message, for any unusable input or output.
    """
    if precision not in PRECISIONS:
        raise ModelError(f"unknown precision '{precision}' (choose {', '.join(PRECISIONS)})")
    if head_precision is None:
        head_precision = precision
    if head_precision not in PRECISIONS or head_precision == "w8a8":
        raise ModelError(f"unknown head precision '{head_precision}' (choose {', '.join(PRECISIONS)})")
    if style not in STYLES:
        raise ModelError(f"unknown graph style '{style}' (choose {', '.join(STYLES)})")
    if kv_layout not in KV_LAYOUTS:
        raise ModelError(f"unknown KV cache layout '{kv_layout}' (choose {', '.join(KV_LAYOUTS)})")
    if prefill not in PREFILL_PRECISIONS:
        raise ModelError(f"unknown prefill graph '{prefill}' (choose {', '.join(PREFILL_PRECISIONS)})")
    if fit not in FITS:
        raise ModelError(f"unknown weight fit '{fit}' (choose {', '.join(FITS)})")
    if quality not in QUALITIES:
        raise ModelError(f"unknown build quality '{quality}' (choose {', '.join(QUALITIES)})")
    # fp32 stays exact and a w8a8 build already is the prefill graph: neither gets a second graph.
    quantized = precision in ("int4", "int8")
    prefill_precision = prefill if style == "fast" and prefill != "none" and quantized else None
    out = Path(out).absolute()
    started = time.monotonic()
    if out.exists():
        raise OutputError(f"{out} already exists; choose a new folder name (nothing was overwritten)")
    if progress:
        progress("reading", 0, 1)
    clock = _PhaseClock()
    clock.start("reading")
    source = open_source(Path(src))
    try:
        check_tensors(source)
        tmp = _prepare_output(out)
        try:
            used_fit = _write_folder(
                source,
                tmp,
                precision,
                head_precision,
                style,
                prefill_precision,
                kv_layout,
                fit,
                quality,
                progress,
                clock,
            )
            tmp.rename(out)
        except OSError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise _disk_error(exc, out) from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    finally:
        source.close()
    size = sum(p.stat().st_size for p in out.iterdir())
    return BuildResult(
        out,
        time.monotonic() - started,
        size,
        precision,
        head_precision,
        style,
        prefill_precision,
        used_fit,
        clock.stop(),
    )


def _save_graph(model: Any, path: Path) -> None:
    import onnx

    weight_bytes = sum(len(t.raw_data) for t in model.graph.initializer)
    if weight_bytes > PROTOBUF_LIMIT:
        onnx.save_model(
            model,
            str(path),
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=path.name + ".data",
            size_threshold=1024,
        )
    else:
        onnx.save_model(model, str(path))


def _block_sizes(
    style: str, precision: str, head_precision: str, vocab_size: int, fitted: bool
) -> dict[str, int]:
    """The block size of each blocked (int4 or int8) tensor of the decode graph (and head.onnx), by name."""

    def size(name: str, bits_precision: str) -> int:
        return fast_block_size(name, fitted) if style == "fast" and bits_precision == "int4" else BLOCK_SIZE

    sizes: dict[str, int] = {}
    if precision in ("int4", "int8"):
        fast = tuple(n for n in FAST_BLOCK_SIZES if not n.startswith("lm_head"))  # the fused layer matrices
        plain = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
        for name in fast if style == "fast" else plain:
            sizes[name] = size(name, precision)
    if head_precision in ("int4", "int8"):
        sizes["lm_head"] = size("lm_head", head_precision)
        if style == "fast":
            sizes["embed_tokens"] = BLOCK_SIZE
            if head_precision == "int4" and vocab_size > HEAD_CANDIDATES:
                sizes["lm_head_preview"] = fast_block_size("lm_head_preview")
    return sizes


# Weight fits run side by side on this many threads, each with one BLAS thread: a fit is a long chain of
# small matrix operations, which BLAS's own threads slow down (they wait on each other between operations:
# ~3x the CPU time on 2 cores) where independent fits on separate cores do not. More threads would hold
# more weights and calibration products in memory at once (~250 MB per down_proj fit of the 0.5B model).
MAX_FIT_THREADS = 4


def fit_threads() -> int:
    """How many weight fits a build runs at once: the CPU's cores, at most ``MAX_FIT_THREADS``."""
    return max(1, min(os.cpu_count() or 1, MAX_FIT_THREADS))


def _write_folder(
    source: WeightSource,
    tmp: Path,
    precision: str,
    head_precision: str,
    style: str,
    prefill_precision: str | None,
    kv_layout: str,
    fit: str,
    quality: str,
    progress: Progress | None,
    clock: _PhaseClock,
) -> str:
    """Write the folder's files into ``tmp``; returns the weight fit used (``gptq`` or ``plain``)."""
    cfg = source.config
    fitted_layers = style == "fast" and precision == "int4"  # what a fit applies to
    clock.start("calibration")
    kinds = None if quality == "best" else DEFAULT_FITTED
    # the reference pass and the decode graph read every layer weight: dequantized once for both
    shared_reads = ReadTwice(source.tensor)
    graphs = [(MODEL_FILE, precision)]
    if prefill_precision:
        graphs.append((PREFILL_FILE, prefill_precision))
    # With two decoder graphs the output head is a third graph that both feed, so its packed weights are
    # loaded once (docs/models.md).
    split_head = len(graphs) > 1
    shared: dict[str, Any] = {}  # the embedding, quantized once for both graphs
    # numpy's BLAS on one thread during the fits. The limit is process-wide and is taken before the
    # calibration thread starts, so the reference pass never runs with another thread count (which
    # changes its float sums and made two builds of one file differ).
    blas_limit = threadpool_limits(limits=1, user_api="blas")
    pool = ThreadPoolExecutor(max_workers=fit_threads(), thread_name_prefix="weight-fit")
    calibration: StreamedInputs | None = None
    try:
        if fit == "gptq" and fitted_layers:
            calibration = _calibration(source, progress, kinds, shared_reads)
        used_fit = "gptq" if calibration is not None else "plain"
        for index, (name, layers) in enumerate(graphs):
            step = _graph_progress(progress, index, len(graphs), "prefill graph: " if index else "")
            clock.start("prefill graph" if index else "decode graph")
            model = build_graph(
                cfg,
                shared_reads if index == 0 and calibration is not None else source.tensor,
                style=style,
                precision=layers,
                head_precision=head_precision,
                progress=step,
                split_head=split_head,
                kv_layout=kv_layout,
                calibration=calibration if layers == "int4" else None,
                shared=shared,
                pool=pool,
            )
            if progress:
                progress("writing", 0, 1)
            clock.start("writing")
            shared_reads.clear()  # what the decode graph did not read again is not read twice
            _save_graph(model, tmp / name)
            del model
        if split_head:
            if progress:
                progress("output head", 0, 1)
            clock.start("output head")
            head = build_head_graph(cfg, source.tensor, head_precision, calibration, pool=pool)
            clock.start("writing")
            _save_graph(head, tmp / HEAD_FILE)
            del head
    finally:
        pool.shutdown(wait=True, cancel_futures=True)  # a cancelled build leaves no fit running
        if calibration is not None:
            calibration.close()  # and no reference pass
        blas_limit.restore_original_limits()
    del calibration, shared
    clock.start("tokenizer and manifest")
    (tmp / TOKENIZER_FILE).write_text(with_string_merges(source.tokenizer.tokenizer_json), encoding="utf-8")
    if progress:
        progress("checksum", 0, 1)
    tok = source.tokenizer
    manifest: dict[str, Any] = {
        "format": MANIFEST_FORMAT,
        # format 3 is the views layout; a shared-layout build is what format 2 engines read
        "format_version": MANIFEST_VERSION if style != "fast" or kv_layout == "views" else 2,
        "architecture": source.architecture,
        "style": style,
        "precision": precision,
        "head_precision": head_precision,
        "prefill_precision": prefill_precision,
        "kv_layout": kv_layout if style == "fast" else None,
        "block_sizes": _block_sizes(style, precision, head_precision, cfg.vocab_size, used_fit == "gptq"),
        "fit": used_fit if fitted_layers else None,
        "quality": quality if used_fit == "gptq" else None,
        "config": cfg.to_dict() | {"head_dim": cfg.head_dim},
        "max_context": cfg.max_context,
        "eos_token_ids": list(tok.eos_token_ids),
        "end_of_turn_id": tok.end_of_turn_id,
        "bos_token_id": tok.bos_token_id,
        "pad_token_id": tok.pad_token_id,
        "chat_template": tok.chat_template,
        "files": {"model": MODEL_FILE, "tokenizer": TOKENIZER_FILE}
        | ({"prefill": PREFILL_FILE, "head": HEAD_FILE} if prefill_precision else {}),
        "display_name": pretty_model_name(source.description),
        "source": {
            "name": source.description,
            "files": [
                {"name": p.name, "sha256": sha256_file(p), "bytes": p.stat().st_size}
                for p in source.source_files
            ],
        },
        "builder": {"name": "qwen-desktop", "version": __version__},
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False), encoding="utf-8")
    if progress:
        progress("done", 1, 1)
    return used_fit


def _calibration(
    source: WeightSource,
    progress: Progress | None,
    kinds: tuple[str, ...] | None,
    fetch: Callable[[str], np.ndarray] | None = None,
) -> StreamedInputs | None:
    """The calibration text's activations at every linear layer, computed on their own thread while the
    graphs are built (``calibration.StreamedInputs``), or None where the text does not tokenize."""
    from qwen_desktop.convert.calibration import MIN_TOKENS, StreamedInputs, calibration_ids

    ids = calibration_ids(source.tokenizer.tokenizer_json, source.config)
    if len(ids) < MIN_TOKENS:
        return None
    if progress:
        progress("calibration", 0, 1)
    return StreamedInputs(source.config, fetch or source.tensor, ids, kinds)


# How many bytes of float weights ReadTwice keeps for its second reader: a few layers of the 0.5B model
# (~60 MB each), which covers how far the reference pass and the decode graph drift apart.
READ_TWICE_BYTES = 512 << 20


class ReadTwice:
    """The source's tensors for two readers that go through them in the same order: the reference pass
    of the calibration and the decode graph's writer.

    The first reader of a tensor dequantizes it (7-12 s of the 0.5B model's GGUF in all) and leaves it here;
    the second takes it away. While more than ``limit`` bytes wait, a read is not kept (the other reader
    reads it again), so a reader far ahead costs time, not memory. Kept arrays are read-only, so neither
    reader can change what the other gets.
    """

    def __init__(self, fetch: Callable[[str], np.ndarray], limit: int = READ_TWICE_BYTES) -> None:
        self._fetch = fetch
        self._limit = limit
        self._kept: dict[str, np.ndarray] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def __call__(self, name: str) -> np.ndarray:
        with self._lock:
            kept = self._kept.pop(name, None)
            if kept is not None:
                self._bytes -= kept.nbytes
                return kept
        value = self._fetch(name)
        value.flags.writeable = False
        with self._lock:
            if self._kept.pop(name, None) is not None:  # both read it at once: this was the second read
                self._bytes -= value.nbytes
            elif self._bytes + value.nbytes <= self._limit:
                self._kept[name] = value
                self._bytes += value.nbytes
        return value

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self._bytes = 0


def _graph_progress(progress: Progress | None, index: int, count: int, label: str) -> Progress | None:
    """Report graph ``index`` of ``count`` as its share of one overall bar."""
    if progress is None:
        return None
    report = progress

    def step(stage: str, done: int, total: int) -> None:
        report(label + stage, index * total + done, count * total)

    return step
