"""What both ONNX graph styles are written with: the graph collector, the linear layers, the inputs and outputs.

``LayerWriter`` holds a model's config and its tensor source (``fetch``) and writes quantized linear
layers (MatMulNBits, w8a8 integer matmuls, or blocked ``DequantizeLinear`` for the plain style), row
lookups (``GatherBlockQuantized``) and the graph's inputs and outputs. ``onnx_fast.FastWriter`` and
``onnx_plain.PlainWriter`` add each style's layers on top; ``onnx_writer.build_graph`` picks one.
"""

from __future__ import annotations

import functools
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from qwen_desktop.convert.quant import BlockQuantized, quantize_blockwise, quantize_gptq
from qwen_desktop.convert.weights import EMBED, LM_HEAD, QwenConfig
from qwen_desktop.engine.manifest import KV_LAYOUTS

STYLES = ("fast", "plain")
PRECISIONS = ("int4", "int8", "w8a8", "fp32")
BLOCK_SIZE = 32  # the embedding, the plain style, and any fast-style tensor not named below
# Fast-style 4-bit block size per fused linear layer. Larger blocks read fewer scales per token (decode is
# memory bound) but fit the weights more coarsely; measured with the numpy reference against fp32
# (docs/experiments.md, "Block sizes per matrix"), down_proj keeps its quality at 128 and o_proj at 64, while qkv, gate_up and the head
# lose the most when their blocks grow. gate_up (half of all layer weights) is at 64 when it is fitted to
# calibration activations (quant.quantize_gptq), which keeps its error below the plain fit's at 32.
FAST_BLOCK_SIZES = {
    "qkv_proj": 32,
    "o_proj": 64,
    "gate_up_proj": 64,
    "down_proj": 128,
    "lm_head": 32,  # the head's exact rows (and the whole head where there is no preview)
    "lm_head_preview": 256,  # the int4 head's first, coarse pass over the whole vocabulary
}
# Where a build has no calibration activations (the plain fit), these matrices keep smaller blocks.
PLAIN_FIT_BLOCK_SIZES = {"gate_up_proj": 32}
ACCURACY_LEVEL_INT8 = 4  # MatMulNBits: run activations in int8 (VNNI/AMX/AVX2 integer kernels)
OPSET = 21
MS_DOMAIN = "com.microsoft"

Fetch = Callable[[str], np.ndarray]
Progress = Callable[[str, int, int], None]


@dataclass
class Graph:
    """Collects nodes and initializers; ``op`` returns the output names so the code reads as data flow."""

    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    _count: dict[str, int] = field(default_factory=dict)
    # initializers still being computed (on the build's worker threads): (index in inits, name, value getter)
    _later: list[tuple[int, str, Callable[[], np.ndarray]]] = field(default_factory=list)

    def name(self, base: str) -> str:
        n = self._count.get(base, 0)
        self._count[base] = n + 1
        return f"{base}_{n}" if n else base

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def init_later(self, name: str, value: Callable[[], np.ndarray]) -> str:
        """An initializer whose value ``value()`` gives once ``resolve`` runs; it keeps its place in order."""
        self._later.append((len(self.inits), name, value))
        self.inits.append(onnx.TensorProto(name=name))
        return name

    def resolve(self) -> None:
        """Fill in every ``init_later`` value (waiting for the ones still being computed)."""
        for index, name, value in self._later:
            self.inits[index] = numpy_helper.from_array(np.ascontiguousarray(value()), name)
        self._later.clear()

    def const(self, base: str, values: Any, dtype: type = np.int64) -> str:
        return self.init(self.name(base), np.asarray(values, dtype=dtype))

    def op(
        self,
        op_type: str,
        inputs: list[str],
        base: str,
        n_out: int = 1,
        domain: str = "",
        outputs: list[str] | None = None,
        **attrs: Any,
    ) -> list[str]:
        node_name = self.name(base)
        outs = outputs or [f"{node_name}/out{i}" if n_out > 1 else f"{node_name}/out" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, inputs, outs, name=node_name, domain=domain, **attrs))
        return outs

    def op1(self, op_type: str, inputs: list[str], base: str, domain: str = "", **attrs: Any) -> str:
        return self.op(op_type, inputs, base, 1, domain, None, **attrs)[0]


def uint4_tensor(name: str, codes: np.ndarray) -> onnx.TensorProto:
    """A UINT4 initializer from unpacked codes (ONNX packs two per byte, low nibble first)."""
    flat = codes.reshape(-1)
    if flat.size % 2:
        flat = np.concatenate([flat, np.zeros(1, np.uint8)])
    packed = (flat[0::2] | (flat[1::2] << 4)).astype(np.uint8)
    t = onnx.TensorProto()
    t.name = name
    t.data_type = TensorProto.UINT4
    t.dims.extend(codes.shape)
    t.raw_data = packed.tobytes()
    return t


# A quantized matrix as its graph stores it: packed codes, scales, zero points (quant.BlockQuantized's).
Packed = tuple[np.ndarray, np.ndarray, np.ndarray]


def rope_cache(cfg: QwenConfig, max_len: int) -> tuple[np.ndarray, np.ndarray]:
    inv_freq = 1.0 / (cfg.rope_theta ** (np.arange(0, cfg.head_dim, 2, dtype=np.float64) / cfg.head_dim))
    angles = np.arange(max_len, dtype=np.float64)[:, None] * inv_freq[None, :]  # [max_len, head_dim / 2]
    return np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)


def fast_block_size(base: str, fitted: bool = True) -> int:
    """The 4-bit block size of the fast-style linear layer named ``base`` (``layers.3.down_proj``, ``lm_head``).

    ``fitted``: the build fits its 4-bit weights to calibration activations (``calibration``).
    """
    kind = base.rsplit(".", 1)[-1]
    if not fitted and kind in PLAIN_FIT_BLOCK_SIZES:
        return PLAIN_FIT_BLOCK_SIZES[kind]
    return FAST_BLOCK_SIZES.get(kind, BLOCK_SIZE)


# Rows per part of a tall matrix's fit (LayerWriter._packed): the output head's 151,936 rows go in 4.
SPLIT_ROWS = 40_000


def _joined(parts: list[Packed]) -> Packed:
    """The row parts of one matrix's (packed, scales, zero points), as one."""
    if len(parts) == 1:
        return parts[0]
    return (
        np.concatenate([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        np.concatenate([p[2] for p in parts]),
    )


class LayerWriter:
    def __init__(
        self,
        cfg: QwenConfig,
        fetch: Fetch,
        precision: str,
        head_precision: str,
        progress: Progress | None,
        split_head: bool = False,
        kv_layout: str = "views",
        calibration: Mapping[str, np.ndarray] | None = None,
        shared: dict[str, Any] | None = None,
        pool: Executor | None = None,
    ) -> None:
        if precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}")
        if head_precision not in PRECISIONS:
            raise ValueError(f"head precision must be one of {PRECISIONS}")
        if kv_layout not in KV_LAYOUTS:
            raise ValueError(f"kv_layout must be one of {KV_LAYOUTS}")
        self.cfg = cfg
        self.kv_layout = kv_layout
        self.fetch = fetch
        self.precision = precision
        self.head_precision = head_precision
        self.progress = progress
        # fast style: end at the final norm ("hidden"); the head is its own graph (build_head)
        self.split_head = split_head
        # inputs [tokens, K] of the linear layers on the calibration text, by name: 4-bit weights are
        # fitted to them (quant.quantize_gptq); without them, the plain fit and smaller blocks
        self.calibration = calibration
        # quantized tensors that two graphs of one build store alike (the embedding), made once
        self.shared = shared
        # worker threads for the weight fits (one matrix each, results in build order); None: fit inline
        self.pool = pool
        self._fits: deque[Future[Packed]] = deque()
        self.g = Graph()
        self._constants: dict[str, str] = {}
        self._rows = "input_ids"  # what the int8 layers' row count comes from (see _rows_zero_point)
        self.steps_total = cfg.num_layers + 2
        self.steps_done = 0

    def _tick(self, what: str) -> None:
        self.steps_done += 1
        if self.progress:
            self.progress(what, self.steps_done, self.steps_total)

    # -- linear layers ------------------------------------------------------------------------------------
    def _packed(self, w: np.ndarray, bits: int, block_size: int, base: str) -> Callable[[], Packed]:
        """``_quantize`` on the pool (or here without one): a getter of (packed, scales, zero_points).

        At most one more fit than the pool has threads waits or runs at once: each holds its float weights
        (and a fit its calibration inputs' ``XᵀX``), so the graph code waits here rather than hold the whole
        model in memory.
        """

        def fit(rows: np.ndarray) -> Packed:
            q = self._quantize(rows, bits, block_size, base)
            return q.packed, q.scales, q.zero_points  # not q: its unpacked codes would stay in memory

        # Each row is quantized on its own, so a matrix as tall as the output head is cut into parts the
        # pool fits side by side (the same cut with or without a pool: the same bytes)
        parts = [w[first : first + SPLIT_ROWS] for first in range(0, w.shape[0], SPLIT_ROWS)]
        if self.pool is None:
            done = _joined([fit(part) for part in parts])
            return lambda: done
        futures = [self.pool.submit(fit, part) for part in parts]
        self._fits.extend(futures)
        limit = max(1, getattr(self.pool, "_max_workers", 1)) + 1
        while len(self._fits) > limit:
            self._fits.popleft().result()
        return functools.cache(lambda: _joined([f.result() for f in futures]))

    def _quantize(self, w: np.ndarray, bits: int, block_size: int, base: str) -> BlockQuantized:
        # the head's coarse preview sees the same final-norm states as its exact rows
        name = "lm_head" if base.startswith("lm_head") else base
        seen = self.calibration.get(name) if self.calibration is not None and bits < 8 else None
        if seen is None or w.shape[1] % block_size:
            return quantize_blockwise(w, bits, block_size)
        return quantize_gptq(w, seen, bits, block_size)

    def linear_fast(
        self, x: str, w: np.ndarray, b: np.ndarray | None, base: str, precision: str, bits: int = 0
    ) -> str:
        """y = x @ w.T + b with w ``[N, K]``; MatMulNBits when quantized, MatMul (+Add) in fp32.

        ``bits``: for ``int4``, fewer bits than 4 (the head's preview); 0 for the precision's own.
        """
        g = self.g
        n, k = w.shape
        if precision == "fp32":
            y = g.op1("MatMul", [x, g.init(f"{base}.weight_t", w.T.copy())], base + "/MatMul")
            if b is not None:
                y = g.op1("Add", [y, g.init(f"{base}.bias", b.astype(np.float32))], base + "/Add")
            return y
        if precision == "w8a8":
            return self.linear_w8a8(x, w, b, base)
        bits = (bits or 4) if precision == "int4" else 8
        block_size = fast_block_size(base, self.calibration is not None) if bits < 8 else BLOCK_SIZE
        q = self._packed(w, bits, block_size, base)
        inputs = [
            x,
            g.init_later(f"{base}.qweight", lambda: q()[0]),  # [N, n_blocks, block_size * bits / 8]
            g.init_later(f"{base}.scales", lambda: q()[1].reshape(-1)),  # [N * n_blocks]
            g.init_later(f"{base}.zero_points", lambda: q()[2].reshape(-1)),
        ]
        if b is not None:
            inputs += ["", g.init(f"{base}.bias", b.astype(np.float32))]
        return g.op1(
            "MatMulNBits",
            inputs,
            base + "/MatMulNBits",
            domain=MS_DOMAIN,
            K=k,
            N=n,
            bits=bits,
            block_size=block_size,
            accuracy_level=ACCURACY_LEVEL_INT8,
        )

    def _shared(self, name: str, value: Any, dtype: type) -> str:
        """One initializer for a constant every int8 linear layer uses."""
        if name not in self._constants:
            self._constants[name] = self.g.init(name, np.asarray(value, dtype=dtype))
        return self._constants[name]

    def _rows_zero_point(self, zp_128: str) -> str:
        """The ``[rows]`` zero points of 128 that an int8 layer's QuantizeLinear takes, made once per graph
        for each row count: every position (``input_ids``' size), or the kept positions the last layer
        works on after ``_keep_rows`` (``self._rows``)."""
        key = f"rows_zp:{self._rows}"
        if key not in self._constants:
            g = self.g
            if self._rows == "input_ids":
                rows = g.op1(
                    "Reshape",
                    [g.op1("Size", ["input_ids"], "rows/Size"), self._shared("axes_last", [-1], np.int64)],
                    "rows/Count",
                )  # [1]: b * s
            else:
                rows = g.op1("Shape", [self._rows], "rows/Kept", start=1, end=2)  # [1]: kept positions
            self._constants[key] = g.op1("Expand", [zp_128, rows], "rows/ZeroPoint")
        return self._constants[key]

    def linear_w8a8(self, x: str, w: np.ndarray, b: np.ndarray | None, base: str) -> str:
        """int8 weights (one scale per output channel) times int8 activations (one scale per token).

        MLAS' integer GEMM (VNNI) runs this 2-3x faster than MatMulNBits for many tokens at once. Scales per
        token, not per tensor: Qwen's first position carries activations ~100x larger than the rest, and
        a token's result must not depend on which other tokens share its prefill chunk.
        """
        q, x_scale = self.quantize_rows(x, base)
        return self.rescale_rows(self.matmul_int8(q, w, base), x_scale, b, base)

    def quantize_rows(self, x: str, base: str) -> tuple[str, str]:
        """``x`` ``[1, s, K]`` -> (``[s, K]`` uint8 with zero point 128, its ``[1, s, 1]`` per-token scales)."""
        g = self.g
        last = self._shared("axes_last", [-1], np.int64)
        amax = g.op1("ReduceMax", [g.op1("Abs", [x], base + "/Abs"), last], base + "/AbsMax", keepdims=1)
        x_scale = g.op1(
            "Max",
            [
                g.op1("Mul", [amax, self._shared("inv_127", 1.0 / 127.0, np.float32)], base + "/Scale"),
                self._shared("tiny_scale", 1e-12, np.float32),
            ],
            base + "/ScaleFloor",
        )  # [1, s, 1]
        rows_scale = g.op1("Reshape", [x_scale, last], base + "/RowScale")  # [s]
        rows = g.op1("Squeeze", [x, self._shared("axes_first", [0], np.int64)], base + "/Rows")  # [s, K]
        zp_128 = self._shared("zp_128", 128, np.uint8)  # symmetric range, stored as uint8 (VNNI's u8 x s8)
        q = g.op1(
            "QuantizeLinear", [rows, rows_scale, self._rows_zero_point(zp_128)], base + "/Quantize", axis=0
        )
        return q, x_scale

    def matmul_int8(self, q: str, w: np.ndarray, base: str) -> str:
        """``q`` (from ``quantize_rows``) times ``w`` ``[N, K]`` in int8, one scale per output channel:
        ``[s, N]`` float, still to be multiplied by the rows' scales (``rescale_rows``)."""
        g = self.g
        scale = np.maximum(np.abs(w).max(axis=1), 1e-12) / 127.0  # [N]
        wq = np.clip(np.round(w / scale[:, None]), -127, 127).astype(np.int8).T.copy()  # [K, N]
        inputs = [
            q,
            g.init(f"{base}.qweight", wq),
            self._shared("one_f", 1.0, np.float32),
            g.init(f"{base}.scales", scale.astype(np.float32)),
            self._shared("zp_128", 128, np.uint8),
        ]  # no bias here: the op adds it before the per-token rescale
        return g.op1("MatMulIntegerToFloat", inputs, base + "/MatMulIntegerToFloat", domain=MS_DOMAIN)

    def rescale_rows(self, y: str, x_scale: str, b: np.ndarray | None, base: str) -> str:
        """``[s, N]`` times the rows' ``[1, s, 1]`` scales (+ bias): ``[1, s, N]`` (the broadcast restores the
        batch dimension, batch being 1)."""
        g = self.g
        y = g.op1("Mul", [y, x_scale], base + "/RowRescale")
        if b is not None:
            y = g.op1("Add", [y, g.init(f"{base}.bias", b.astype(np.float32))], base + "/Add")
        return y

    def linear_plain(self, x: str, w: np.ndarray, b: np.ndarray | None, base: str, precision: str) -> str:
        """y = x @ w.T + b with standard ops; quantized weights go through blocked DequantizeLinear."""
        g = self.g
        if precision == "fp32":
            wt = g.init(f"{base}.weight_t", w.T.copy())  # [K, N]
        else:
            bits = 4 if precision == "int4" else 8
            q = quantize_blockwise(w, bits, BLOCK_SIZE)
            k = w.shape[1]
            codes = q.codes[:, :k].T.copy()  # [K, N], blocks run along K (axis 0)
            if k % BLOCK_SIZE:
                raise ValueError(
                    f"{base}: in-features {k} must be a multiple of {BLOCK_SIZE} for the plain style"
                )
            scales = q.scales.T.copy()  # [K / block, N]
            zps = q.zp_codes.T.copy()
            if bits == 4:
                g.inits.append(uint4_tensor(f"{base}.qweight", codes))
                g.inits.append(uint4_tensor(f"{base}.zero_points", zps))
            else:
                g.init(f"{base}.qweight", codes)
                g.init(f"{base}.zero_points", zps)
            g.init(f"{base}.scales", scales)
            wt = g.op1(
                "DequantizeLinear",
                [f"{base}.qweight", f"{base}.scales", f"{base}.zero_points"],
                base + "/DequantizeLinear",
                axis=0,
                block_size=BLOCK_SIZE,
            )
        y = g.op1("MatMul", [x, wt], base + "/MatMul")
        if b is not None:
            y = g.op1("Add", [y, g.init(f"{base}.bias", b.astype(np.float32))], base + "/Add")
        return y

    # -- graph ----------------------------------------------------------------------------------------------
    def build(self) -> onnx.ModelProto:
        """The whole decoder graph in this writer's style."""
        raise NotImplementedError

    def _io(self, style: str) -> tuple[list[onnx.ValueInfoProto], list[onnx.ValueInfoProto]]:
        cfg = self.cfg
        kv, d = cfg.num_kv_heads, cfg.head_dim
        views = style == "fast" and self.kv_layout == "views"
        inputs = [
            helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "sequence_length"])
        ]
        if not views:
            inputs.append(
                helper.make_tensor_value_info(
                    "attention_mask", TensorProto.INT64, ["batch_size", "total_sequence_length"]
                )
            )
        if style == "fast":
            inputs.append(helper.make_tensor_value_info("num_logits_to_keep", TensorProto.INT64, []))
        else:
            inputs.append(
                helper.make_tensor_value_info(
                    "position_ids", TensorProto.INT64, ["batch_size", "sequence_length"]
                )
            )
        if style == "fast" and self.split_head:
            first = self._hidden_info()
        else:
            first = helper.make_tensor_value_info(
                "logits",
                TensorProto.FLOAT,
                ["batch_size", "num_logits" if style == "fast" else "sequence_length", cfg.vocab_size],
            )
        outputs = [first]
        in_shape: list[str | int]
        out_shape: list[str | int]
        if views:
            in_name, in_shape = "kv_cache", ["total_sequence_length", kv, d]
            out_name, out_shape = "kv_new", [1, "sequence_length", kv * d]
        else:
            length = "max_length" if style == "fast" else "past_sequence_length"
            in_name, in_shape = "past_key_values", ["batch_size", kv, length, d]
            total = "max_length" if style == "fast" else "total_sequence_length"
            out_name, out_shape = "present", ["batch_size", kv, total, d]
        for i in range(cfg.num_layers):
            for kind in ("key", "value"):
                inputs.append(
                    helper.make_tensor_value_info(f"{in_name}.{i}.{kind}", TensorProto.FLOAT, in_shape)
                )
                outputs.append(
                    helper.make_tensor_value_info(f"{out_name}.{i}.{kind}", TensorProto.FLOAT, out_shape)
                )
        return inputs, outputs

    def _model(self, style: str) -> onnx.ModelProto:
        inputs, outputs = self._io(style)
        return self._wrap(f"qwen2_{style}", inputs, outputs, contrib=style == "fast")

    def _wrap(
        self,
        name: str,
        inputs: list[onnx.ValueInfoProto],
        outputs: list[onnx.ValueInfoProto],
        contrib: bool,
    ) -> onnx.ModelProto:
        """The nodes and initializers written so far as a model (``contrib``: uses com.microsoft ops)."""
        self.g.resolve()
        self._fits.clear()
        graph = helper.make_graph(self.g.nodes, name, inputs, outputs, self.g.inits)
        opsets = [helper.make_opsetid("", OPSET)]
        if contrib:
            opsets.append(helper.make_opsetid(MS_DOMAIN, 1))
        model = helper.make_model(graph, opset_imports=opsets, producer_name="qwen-desktop")
        model.ir_version = 10
        return model

    def _hidden_info(self) -> onnx.ValueInfoProto:
        """``hidden``: final-norm states of the kept positions, between a split decoder and its head."""
        return helper.make_tensor_value_info(
            "hidden", TensorProto.FLOAT, ["batch_size", "num_logits", self.cfg.hidden_size]
        )

    def _gather_rows(self, w: np.ndarray, ids: str, bits: int, block_size: int, base: str, node: str) -> str:
        """Rows ``ids`` of ``w`` ``[rows, K]``, stored blockwise quantized along K (``GatherBlockQuantized``):
        ``[*ids.shape, K]`` floats. The head's rows (``lm_head``) are dot products, so they are fitted to
        the calibration states as a linear layer is; the embedding's are looked up, have no calibration
        inputs, and keep the plain fit."""
        q = self._packed(w, bits, block_size, base)
        return self._gather_quantized(q, w.shape[0], bits, block_size, ids, base, node)

    def _gather_quantized(
        self, q: Callable[[], Packed], rows: int, bits: int, block_size: int, ids: str, base: str, node: str
    ) -> str:
        """``_gather_rows`` of ``rows`` rows being quantized (``_packed``)."""
        g = self.g
        return g.op1(
            "GatherBlockQuantized",
            [
                g.init_later(f"{base}.qweight", lambda: q()[0].reshape(rows, -1)),  # [rows, K * bits / 8]
                ids,
                g.init_later(f"{base}.scales", lambda: q()[1]),  # [rows, K / block]
                g.init_later(f"{base}.zero_points", lambda: q()[2]),
            ],
            node,
            domain=MS_DOMAIN,
            gather_axis=0,
            quantize_axis=1,
            block_size=block_size,
            bits=bits,
        )

    # -- rows ------------------------------------------------------------------------------------------------
    def _keep_rows(self, x: str, keep_from: str, base: str) -> str:
        """``x[:, keep_from:]``: the kept positions of ``[1, s, ...]``."""
        return self.g.op1(
            "Slice",
            [
                x,
                keep_from,
                self._shared("keep_end", [np.iinfo(np.int64).max], np.int64),
                self._shared("keep_axis_1", [1], np.int64),
            ],
            base,
        )

    def _head_weight(self) -> np.ndarray:
        return self.fetch(EMBED if self.cfg.tie_word_embeddings else LM_HEAD)
