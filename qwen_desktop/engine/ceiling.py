"""The decode speed this machine's memory allows: read bandwidth over the bytes one token reads.

A decode step reads every weight of the decode graph's matrix products once (``MatMulNBits`` and ``MatMul``
initializers of ``model.onnx``, and of ``head.onnx`` where the head is its own graph: its 4-bit preview over
the whole vocabulary). Rows picked by a gather (one embedding row, the head's 64 exact rows) and the KV cache
are left out, so the ceiling is that of a short context. ``read_bandwidth`` times reductions over a buffer
far larger than the caches, split over the threads the engine uses. ``qwen-desktop bench`` prints the
ceiling and decode as a share of it (docs/benchmarks.md).
"""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from qwen_desktop.engine.manifest import HEAD_FILE, MODEL_FILE

# ops whose weights a decode step reads whole
_READ_WHOLE = {"MatMulNBits", "MatMul", "Gemm", "MatMulInteger", "MatMulIntegerToFloat"}


def decode_bytes(folder: Path | str) -> int:
    """Bytes of weights one decode step reads from the model folder's decode graph (and its head graph).

    Reads the graphs' structure only (not their weights); needs the ``onnx`` package (a bench tool).
    """
    import onnx

    total = 0
    for name in (MODEL_FILE, HEAD_FILE):
        path = Path(folder) / name
        if not path.is_file():
            continue
        graph = onnx.load(str(path), load_external_data=False).graph
        sizes = {
            t.name: math.prod(t.dims) * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
            for t in graph.initializer
        }
        used = {i for n in graph.node if n.op_type in _READ_WHOLE for i in n.input if i in sizes}
        total += sum(sizes[i] for i in used)
    return total


def read_bandwidth(threads: int, megabytes: int = 256, rounds: int = 5) -> float:
    """Bytes per second ``threads`` threads read from memory: the best of ``rounds`` passes over a buffer
    of ``megabytes`` (a reduction each over its own slice; numpy leaves the GIL during it)."""
    buffer = np.ones(megabytes * (1 << 20) // 8, np.uint64)
    parts = np.array_split(buffer, max(1, threads))
    best = float("inf")
    with ThreadPoolExecutor(max_workers=len(parts)) as pool:
        for _ in range(rounds):
            started = time.perf_counter()
            list(pool.map(np.bitwise_or.reduce, parts))
            best = min(best, time.perf_counter() - started)
    return buffer.nbytes / best
