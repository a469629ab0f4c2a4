"""Write a Qwen2 decoder as an ONNX graph, with ``onnx.helper`` and numpy only (no torch).

Two styles:

``fast``
    ONNX Runtime CPU contrib ops: MatMulNBits for quantized linear layers, one packed QKV matmul, one
    packed gate/up matmul, SkipSimplifiedLayerNormalization, and logits only for the last
    ``num_logits_to_keep`` positions. Attention reads the KV cache through views the caller binds, so no
    pass copies the cache (``kv_layout``):

    - ``views`` (default, manifest format 3): RotaryEmbedding, then FusedMatMul straight over a view of
      the cache. Inputs: ``input_ids`` [1, seq] int64, ``num_logits_to_keep`` [] int64,
      ``kv_cache.N.key/value`` [past + seq, kv_heads, head_dim]: rows 0 .. past + seq of a
      sequence-major cache buffer, the last ``seq`` rows this pass's own. Outputs: ``logits``
      [1, keep, vocab] (or ``hidden``) and ``kv_new.N.key/value`` [1, seq, kv_heads * head_dim], which
      must be bound to those last ``seq`` rows of the same buffer: the graph writes the new positions
      there and its attention reads them back through the view (plain ``run()`` would read stale rows).
    - ``shared`` (format 2 folders): GroupQueryAttention with the rotary embedding fused in. Inputs add
      ``attention_mask`` [batch, total] int64, and ``past_key_values.N.key/value`` are
      [batch, kv_heads, max_len, head_dim] buffers that ``present.N.key/value`` share.

``plain``
    Standard ONNX ops only, with the names hub-published exports use: ``input_ids``, ``attention_mask``,
    ``position_ids``, ``past_key_values.N.key/value`` [batch, kv_heads, past, head_dim] ->
    ``logits`` [batch, seq, vocab], ``present.N.key/value`` [batch, kv_heads, past + seq, head_dim].
    Quantized weights are stored as blocked ``DequantizeLinear`` inputs feeding ``MatMul``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from qwen_desktop.convert.quant import BlockQuantized, quantize_blockwise, quantize_gptq
from qwen_desktop.convert.weights import EMBED, FINAL_NORM, LM_HEAD, QwenConfig, layer_names
from qwen_desktop.engine.manifest import KV_LAYOUTS

STYLES = ("fast", "plain")
PRECISIONS = ("int4", "int8", "w8a8", "fp32")
BLOCK_SIZE = 32  # the embedding, the plain style, and any fast-style tensor not named below
# Fast-style 4-bit block size per fused linear layer. Larger blocks read fewer scales per token (decode is
# memory bound) but fit the weights more coarsely; measured with the numpy reference against fp32
# (docs/engine.md), down_proj keeps its quality at 128 and o_proj at 64, while qkv, gate_up and the head
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
# An int4 fast-style head scores the whole vocabulary with a coarse preview, then recomputes this many
# best-scored tokens exactly from the 4-bit blocks-of-32 rows (docs/models.md). A 2-bit preview (blocks of
# 128, best 128) was measured and not kept: its coarse tail scores cost KL divergence (0.048 against 0.039)
# and it decoded no faster on Zen 4.
HEAD_PREVIEW_BITS = 4
HEAD_CANDIDATES = 64
# Where a build has no calibration activations (the plain fit), these matrices keep smaller blocks.
PLAIN_FIT_BLOCK_SIZES = {"gate_up_proj": 32}
ACCURACY_LEVEL_INT8 = 4  # MatMulNBits: run activations in int8 (VNNI/AMX/AVX2 integer kernels)
OPSET = 21
MS_DOMAIN = "com.microsoft"

Fetch = Callable[[str], np.ndarray]
Progress = Callable[[str, int, int], None]


@dataclass
class _Graph:
    """Collects nodes and initializers; ``op`` returns the output names so the code reads as data flow."""

    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[onnx.TensorProto] = field(default_factory=list)
    _count: dict[str, int] = field(default_factory=dict)

    def name(self, base: str) -> str:
        n = self._count.get(base, 0)
        self._count[base] = n + 1
        return f"{base}_{n}" if n else base

    def init(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

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


def _uint4_tensor(name: str, codes: np.ndarray) -> onnx.TensorProto:
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


def _rope_cache(cfg: QwenConfig, max_len: int) -> tuple[np.ndarray, np.ndarray]:
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


class _Writer:
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
        self.g = _Graph()
        self._constants: dict[str, str] = {}
        self._rows = "input_ids"  # what the int8 layers' row count comes from (see _rows_zero_point)
        self.steps_total = cfg.num_layers + 2
        self.steps_done = 0

    def _tick(self, what: str) -> None:
        self.steps_done += 1
        if self.progress:
            self.progress(what, self.steps_done, self.steps_total)

    # -- linear layers ------------------------------------------------------------------------------------
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
        q = self._quantize(w, bits, block_size, base)
        inputs = [
            x,
            g.init(f"{base}.qweight", q.packed),  # [N, n_blocks, block_size * bits / 8]
            g.init(f"{base}.scales", q.scales.reshape(-1)),  # [N * n_blocks]
            g.init(f"{base}.zero_points", q.zero_points.reshape(-1)),
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
                g.inits.append(_uint4_tensor(f"{base}.qweight", codes))
                g.inits.append(_uint4_tensor(f"{base}.zero_points", zps))
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
    def build(self, style: str) -> onnx.ModelProto:
        if style == "fast":
            return self.build_fast()
        if style == "plain":
            return self.build_plain()
        raise ValueError(f"style must be one of {STYLES}")

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

    def _embedding_fast(self) -> str:
        g = self.g
        emb = self.fetch(EMBED)  # [vocab, hidden]
        if self.head_precision == "fp32":
            return g.op1("Gather", [g.init("embed_tokens.weight", emb), "input_ids"], "embed/Gather")
        bits = 4 if self.head_precision == "int4" else 8
        return self._gather_rows(
            emb, "input_ids", bits, BLOCK_SIZE, "embed_tokens", "embed/GatherBlockQuantized"
        )

    def _gather_rows(self, w: np.ndarray, ids: str, bits: int, block_size: int, base: str, node: str) -> str:
        """Rows ``ids`` of ``w`` ``[rows, K]``, stored blockwise quantized along K (``GatherBlockQuantized``):
        ``[*ids.shape, K]`` floats. The head's rows (``lm_head``) are dot products, so they are fitted to
        the calibration states as a linear layer is; the embedding's are looked up, have no calibration
        inputs, and keep the plain fit."""
        g = self.g
        q = self._quantize(w, bits, block_size, base)
        return g.op1(
            "GatherBlockQuantized",
            [
                g.init(f"{base}.qweight", q.packed.reshape(w.shape[0], -1)),  # [rows, K * bits / 8]
                ids,
                g.init(f"{base}.scales", q.scales),  # [rows, K / block]
                g.init(f"{base}.zero_points", q.zero_points),
            ],
            node,
            domain=MS_DOMAIN,
            gather_axis=0,
            quantize_axis=1,
            block_size=block_size,
            bits=bits,
        )

    # -- attention (fast style) --------------------------------------------------------------------------
    def _attention_inputs(self) -> dict[str, str]:
        """Values every layer's attention uses, computed once per run."""
        g, cfg = self.g, self.cfg
        cos, sin = _rope_cache(cfg, cfg.max_context)
        run = {
            "cos": g.init("cos_cache", cos),
            "sin": g.init("sin_cache", sin),
        }  # [max_context, head_dim / 2]
        if self.kv_layout == "shared":
            # GroupQueryAttention reads the cache length from seqlens_k (valid tokens - 1) and the total length.
            mask_sum = g.op1(
                "ReduceSum", ["attention_mask", g.const("axes_1", [1])], "mask/ReduceSum", keepdims=0
            )
            run["seqlens_k"] = g.op1(
                "Cast",
                [g.op1("Sub", [mask_sum, g.const("one", [1])], "mask/Sub")],
                "mask/Cast",
                to=TensorProto.INT32,
            )  # [batch] int32
            shape = g.op1("Shape", ["attention_mask"], "mask/Shape")
            total = g.op1("Gather", [shape, g.const("idx_1", 1)], "mask/Gather", axis=0)
            run["total_len"] = g.op1("Cast", [total], "mask/CastTotal", to=TensorProto.INT32)  # [] int32
            return run
        # views: the bound cache view holds `total` positions, the last `seq` of them this pass's own (the
        # graph writes them through its new-position outputs, which are bound to those rows).
        total = g.op1("Shape", ["kv_cache.0.key"], "pos/Total", start=0, end=1)  # [1]
        seq = g.op1("Shape", ["input_ids"], "pos/Seq", start=1, end=2)  # [1]
        axis_0 = g.const("axis_0", [0])
        total0 = g.op1("Squeeze", [total, axis_0], "pos/Total0")
        past0 = g.op1("Sub", [total0, g.op1("Squeeze", [seq, axis_0], "pos/Seq0")], "pos/Past0")
        one = g.const("one_scalar", 1)
        positions = g.op1("Range", [past0, total0, one], "pos/Range")  # [seq]: past .. total - 1
        run["positions"] = g.op1("Unsqueeze", [positions, axis_0], "pos/Ids")  # [1, seq]
        # Causal mask: new position `past + s` sees cache rows 0 .. past + s. [seq, total], 0 or -max.
        cols = g.op1("Range", [g.const("zero_scalar", 0), total0, one], "mask/Range")  # [total]
        later = g.op1(
            "Greater",
            [
                g.op1("Unsqueeze", [cols, axis_0], "mask/Cols"),
                g.op1("Unsqueeze", [positions, g.const("axis_1", [1])], "mask/Rows"),
            ],
            "mask/Later",
        )
        run["mask"] = g.op1(
            "Where",
            [
                later,
                g.const("mask_min", np.finfo(np.float32).min, np.float32),
                g.const("mask_zero", 0.0, np.float32),
            ],
            "mask/Where",
        )
        return run

    def _attention(self, qkv: str, i: int, run: dict[str, str], keep_from: str | None = None) -> str:
        """Self-attention of layer ``i`` from its packed ``qkv`` ``[1, s, (h + 2 kv) * d]`` -> ``[1, s, h * d]``.

        With ``keep_from`` (a ``[1]`` start such as ``-keep``; views layout only), every position's key
        and value still goes to the cache, but only the positions from there on are queried: the output is
        ``[1, keep, h * d]``.
        """
        g, cfg = self.g, self.cfg
        h, kvh, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        p = f"layers.{i}"
        if self.kv_layout == "shared":
            return g.op(
                "GroupQueryAttention",
                [
                    qkv,
                    "",
                    "",
                    f"past_key_values.{i}.key",
                    f"past_key_values.{i}.value",
                    run["seqlens_k"],
                    run["total_len"],
                    run["cos"],
                    run["sin"],
                ],
                f"{p}/attn",
                n_out=3,
                domain=MS_DOMAIN,
                outputs=[f"{p}/attn/out", f"present.{i}.key", f"present.{i}.value"],
                num_heads=h,
                kv_num_heads=kvh,
                do_rotary=1,
                rotary_interleaved=0,
                scale=float(1.0 / np.sqrt(d)),
            )[0]
        # views: the new keys and values leave the graph as soon as they exist (the Split outputs, bound to
        # the cache rows after the cached ones), and attention then reads every position, old and new, from
        # the cache view in place. Reading the view only after that write is guaranteed by data flow: the
        # query comes out of the same Split node as the key, and the values' Split feeds everything.
        # Each key/value head serves a group of query heads, so a group is one matrix product,
        # [group * s, d] x [d, total], for the whole pass.
        group = h // kvh
        scale = float(1.0 / np.sqrt(d))
        qk = g.op(
            "Split",
            [qkv, self._shared("split_qk_v", [(h + kvh) * d, kvh * d], np.int64)],
            f"{p}/attn/Split",
            n_out=2,
            axis=-1,
            outputs=[f"{p}/attn/qk", f"kv_new.{i}.value"],  # [1, s, kv * d]
        )[0]
        qk = g.op1(
            "RotaryEmbedding",
            [qk, run["positions"], run["cos"], run["sin"]],
            f"{p}/attn/Rotary",
            domain=MS_DOMAIN,
            num_heads=h + kvh,
            interleaved=0,
        )
        q = g.op(
            "Split",
            [qk, self._shared("split_q_k", [h * d, kvh * d], np.int64)],
            f"{p}/attn/SplitQK",
            n_out=2,
            axis=-1,
            outputs=[f"{p}/attn/q", f"kv_new.{i}.key"],
        )[0]
        mask = run["mask"]
        if keep_from is not None:
            q = self._keep_rows(q, keep_from, f"{p}/attn/KeepQ")  # [1, keep, h * d]
            end = self._shared("keep_end", [np.iinfo(np.int64).max], np.int64)
            mask = g.op1(
                "Slice",
                [mask, keep_from, end, self._shared("keep_axis_0", [0], np.int64)],
                f"{p}/attn/KeepMask",
            )  # [keep, total]
        q = g.op1(
            "Reshape", [q, self._shared("q_heads", [-1, kvh, group, d], np.int64)], f"{p}/attn/QHeads"
        )  # [s, kv, grp, d]
        q = g.op1("Transpose", [q], f"{p}/attn/QT", perm=[1, 2, 0, 3])  # [kv, grp, s, d]
        q = g.op1(
            "Reshape", [q, self._shared("q_groups", [kvh, -1, d], np.int64)], f"{p}/attn/QGroups"
        )  # [kv, grp*s, d]
        scores = g.op1(
            "FusedMatMul",
            [q, f"kv_cache.{i}.key"],  # [total, kv, d], read as [kv, d, total]
            f"{p}/attn/QK",
            domain=MS_DOMAIN,
            transB=1,
            transBatchB=1,
            alpha=scale,
        )  # [kv, grp*s, total]
        scores = g.op1(
            "Reshape", [scores, self._shared("per_head", [kvh * group, -1, 0], np.int64)], f"{p}/attn/Heads"
        )
        scores = g.op1("Add", [scores, mask], f"{p}/attn/Causal")  # [kv*grp, s, total]
        scores = g.op1(
            "Reshape", [scores, self._shared("per_group", [kvh, -1, 0], np.int64)], f"{p}/attn/Groups"
        )
        probs = g.op1("Softmax", [scores], f"{p}/attn/Softmax", axis=-1)
        out = g.op1(
            "FusedMatMul", [probs, f"kv_cache.{i}.value"], f"{p}/attn/PV", domain=MS_DOMAIN, transBatchB=1
        )  # [kv, grp*s, d]
        out = g.op1(
            "Reshape", [out, self._shared("out_groups", [kvh, group, -1, d], np.int64)], f"{p}/attn/OutGroups"
        )
        out = g.op1("Transpose", [out], f"{p}/attn/OutT", perm=[2, 0, 1, 3])  # [s, kv, grp, d]
        return g.op1("Reshape", [out, self._shared("out_shape", [1, -1, h * d], np.int64)], f"{p}/attn/Out")

    def _mlp_w8a8(self, x: str, i: int) -> str:
        """Layer ``i``'s MLP, ``down(silu(gate(x)) * up(x))``, in int8 (the prefill graph).

        Gate and up are two products of one quantized ``x`` (a packed gate/up product would need a Split,
        a copy of its whole output). Only gate's rows are rescaled before the SiLU: ``up``'s per-token
        scale is a factor of each row of ``down``'s input, which ``down`` quantizes per token anyway, so
        it is applied to ``down``'s per-token scales instead (a ``[1, s, 1]`` product, not ``[s, I]``).
        """
        g, n, p = self.g, layer_names(i), f"layers.{i}"
        q, x_scale = self.quantize_rows(x, f"{p}.gate_up_proj")
        gate = self.rescale_rows(
            self.matmul_int8(q, self.fetch(n["gate"]), f"{p}.gate_proj"), x_scale, None, f"{p}.gate_proj"
        )  # [1, s, I]
        up = self.matmul_int8(q, self.fetch(n["up"]), f"{p}.up_proj")  # [s, I], rows not yet rescaled
        act = g.op1("Mul", [gate, g.op1("Sigmoid", [gate], f"{p}/mlp/Sigmoid")], f"{p}/mlp/SiLU")
        h = g.op1("Mul", [act, up], f"{p}/mlp/Mul")  # [1, s, I]: each row is the true one / x_scale
        q_h, h_scale = self.quantize_rows(h, f"{p}.down_proj")
        y = self.matmul_int8(q_h, self.fetch(n["down"]), f"{p}.down_proj")
        scale = g.op1("Mul", [h_scale, x_scale], f"{p}/mlp/DownScale")  # [1, s, 1]
        return self.rescale_rows(y, scale, None, f"{p}.down_proj")

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

    def build_fast(self) -> onnx.ModelProto:
        g, cfg = self.g, self.cfg
        eps = cfg.rms_norm_eps
        x = self._embedding_fast()  # [batch, seq, hidden]
        self._tick("embedding")
        run = self._attention_inputs()
        # Only the last num_logits_to_keep positions reach the head. The last layer computes every
        # position's key and value (later tokens attend to them) but the rest of it (queries, o_proj,
        # MLP) only for those positions; and a long prefill never computes [seq, vocab] logits it would
        # throw away.
        keep_from = g.op1(
            "Neg",
            [g.op1("Reshape", ["num_logits_to_keep", g.const("shape_1", [1])], "keep/Reshape")],
            "keep/Neg",
        )  # [1]: -keep
        prune_last = self.kv_layout != "shared"  # GroupQueryAttention queries every position it writes
        self._rows = "input_ids"
        residual = x
        hidden = x
        for i in range(cfg.num_layers):
            last = i == cfg.num_layers - 1
            n = layer_names(i)
            p = f"layers.{i}"
            if i == 0:
                normed = g.op1(
                    "SimplifiedLayerNormalization",
                    [hidden, g.init(f"{p}.input_norm", self.fetch(n["input_norm"]))],
                    f"{p}/input_norm",
                    epsilon=eps,
                    axis=-1,
                    stash_type=1,
                )
            else:
                outs = g.op(
                    "SkipSimplifiedLayerNormalization",
                    [hidden, residual, g.init(f"{p}.input_norm", self.fetch(n["input_norm"]))],
                    f"{p}/input_norm",
                    n_out=4,
                    domain=MS_DOMAIN,
                    epsilon=eps,
                )
                normed, residual = outs[0], outs[3]
                self.g.nodes[-1].output[1] = ""
                self.g.nodes[-1].output[2] = ""
            qkv_w = np.concatenate([self.fetch(n["q"]), self.fetch(n["k"]), self.fetch(n["v"])], axis=0)
            qkv_b = np.concatenate(
                [self.fetch(n["q_bias"]), self.fetch(n["k_bias"]), self.fetch(n["v_bias"])]
            )
            qkv = self.linear_fast(normed, qkv_w, qkv_b, f"{p}.qkv_proj", self.precision)  # [b, s, (h+2kv)*d]
            pruned = last and prune_last
            attn = self._attention(qkv, i, run, keep_from if pruned else None)  # [b, s or keep, hidden]
            if pruned:
                residual = self._keep_rows(residual, keep_from, "keep/r")
                self._rows = residual  # [1, keep, hidden]: the int8 layers below quantize keep rows
            o = self.linear_fast(attn, self.fetch(n["o"]), None, f"{p}.o_proj", self.precision)
            outs = g.op(
                "SkipSimplifiedLayerNormalization",
                [o, residual, g.init(f"{p}.post_norm", self.fetch(n["post_norm"]))],
                f"{p}/post_norm",
                n_out=4,
                domain=MS_DOMAIN,
                epsilon=eps,
            )
            self.g.nodes[-1].output[1] = ""
            self.g.nodes[-1].output[2] = ""
            normed, residual = outs[0], outs[3]
            if self.precision == "w8a8":
                hidden = self._mlp_w8a8(normed, i)
            else:
                inter = cfg.intermediate_size
                gate_up_w = np.concatenate(
                    [self.fetch(n["gate"]), self.fetch(n["up"])], axis=0
                )  # [2I, hidden]
                gate_up = self.linear_fast(normed, gate_up_w, None, f"{p}.gate_up_proj", self.precision)
                gate, up = g.op(
                    "Split", [gate_up, g.const("split", [inter, inter])], f"{p}/mlp/Split", n_out=2, axis=-1
                )
                act = g.op1("Mul", [gate, g.op1("Sigmoid", [gate], f"{p}/mlp/Sigmoid")], f"{p}/mlp/SiLU")
                hidden = self.linear_fast(
                    g.op1("Mul", [act, up], f"{p}/mlp/Mul"),
                    self.fetch(n["down"]),
                    None,
                    f"{p}.down_proj",
                    self.precision,
                )
            self._tick(f"layer {i + 1}/{cfg.num_layers}")
        if not prune_last:
            hidden = self._keep_rows(hidden, keep_from, "keep/h")
            residual = self._keep_rows(residual, keep_from, "keep/r")
        final = g.op(
            "SkipSimplifiedLayerNormalization",
            [hidden, residual, g.init("final_norm", self.fetch(FINAL_NORM))],
            "final_norm",
            n_out=1,
            domain=MS_DOMAIN,
            epsilon=eps,
        )[0]
        if self.split_head:
            self.g.nodes[-1].output[0] = "hidden"
        else:
            self.head_fast(final)
        self._tick("lm head")
        return self._model("fast")

    def has_head_preview(self) -> bool:
        return self.head_precision == "int4" and self.cfg.vocab_size > HEAD_CANDIDATES

    def head_fast(self, x: str) -> None:
        """The output ``logits`` ``[batch, n, vocab]`` from final-norm states ``x`` ``[batch, n, hidden]``.

        An int4 head is read once per generated token, and at blocks of 32 it is ~30% of the bytes a
        decode step reads. So it first scores every token with blocks of 256 (4.25 instead of 6 bits per
        weight as packed), takes the ``HEAD_CANDIDATES`` best, and recomputes those from the blocks-of-32
        rows with float activations. The best tokens get exact scores (closer to fp32 than the int8
        activations of a one-pass head), the rest keep their preview scores.
        """
        g = self.g
        w = self._head_weight()
        if not self.has_head_preview():
            self.linear_fast(x, w, None, "lm_head", self.head_precision)
            g.nodes[-1].output[0] = "logits"
            return
        preview = self.linear_fast(x, w, None, "lm_head_preview", "int4", HEAD_PREVIEW_BITS)  # [b, n, vocab]
        _scores, ids = g.op(
            "TopK",
            [preview, g.const("head_candidates", [HEAD_CANDIDATES])],
            "lm_head/TopK",
            n_out=2,
            axis=-1,
            largest=1,
            sorted=0,
        )  # ids [b, n, candidates]
        rows = self._gather_rows(
            w, ids, 4, fast_block_size("lm_head"), "lm_head", "lm_head/Rows"
        )  # [b, n, candidates, hidden]
        states = g.op1("Unsqueeze", [x, g.const("axis_2", [2])], "lm_head/Unsqueeze")  # [b, n, 1, hidden]
        exact = g.op1(
            "ReduceSum",
            [g.op1("Mul", [rows, states], "lm_head/Mul"), g.const("axis_last", [-1])],
            "lm_head/Dot",
            keepdims=0,
        )  # [b, n, candidates]
        g.op("ScatterElements", [preview, ids, exact], "lm_head/Scatter", axis=-1, outputs=["logits"])

    def build_head(self) -> onnx.ModelProto:
        """The output head alone: final-norm hidden states ``[batch, n, hidden]`` -> logits ``[batch, n, vocab]``.

        The decode and prefill graphs of a folder share it, so its packed weights (~100 MB for Qwen's 151k
        vocabulary) are in memory once instead of once per graph.
        """
        self.head_fast("hidden")
        logits = helper.make_tensor_value_info(
            "logits", TensorProto.FLOAT, ["batch_size", "num_logits", self.cfg.vocab_size]
        )
        return self._wrap("qwen2_head", [self._hidden_info()], [logits], contrib=True)

    # -- plain ----------------------------------------------------------------------------------------------
    def _rms_plain(self, x: str, weight: np.ndarray, base: str) -> str:
        g = self.g
        sq = g.op1("Mul", [x, x], base + "/Sq")
        mean = g.op1("ReduceMean", [sq, g.const("axes_m1", [-1])], base + "/Mean", keepdims=1)
        denom = g.op1(
            "Sqrt",
            [
                g.op1(
                    "Add",
                    [mean, g.const("eps", np.float32(self.cfg.rms_norm_eps), np.float32)],
                    base + "/AddEps",
                )
            ],
            base + "/Sqrt",
        )
        normed = g.op1("Div", [x, denom], base + "/Div")
        return g.op1("Mul", [normed, g.init(base + ".weight", weight)], base + "/Mul")

    def _rotate(self, x: str, cos: str, sin: str, base: str) -> str:
        """x * cos + rotate_half(x) * sin, x ``[b, heads, s, d]``; cos, sin ``[b, 1, s, d]``."""
        g = self.g
        x1, x2 = g.op(
            "Split", [x, g.const("halves", [self.cfg.head_dim // 2] * 2)], base + "/Split", n_out=2, axis=-1
        )
        rot = g.op1("Concat", [g.op1("Neg", [x2], base + "/Neg"), x1], base + "/Concat", axis=-1)
        return g.op1(
            "Add",
            [g.op1("Mul", [x, cos], base + "/MulCos"), g.op1("Mul", [rot, sin], base + "/MulSin")],
            base + "/Add",
        )

    def build_plain(self) -> onnx.ModelProto:
        g, cfg = self.g, self.cfg
        h, kvh, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        group = h // kvh
        x = g.op1("Gather", [g.init("embed_tokens.weight", self.fetch(EMBED)), "input_ids"], "embed/Gather")
        self._tick("embedding")
        cos_t, sin_t = _rope_cache(cfg, cfg.max_context)
        full_cos = np.concatenate([cos_t, cos_t], axis=1)  # [max_context, head_dim]
        full_sin = np.concatenate([sin_t, sin_t], axis=1)
        unsq1 = g.const("axes_1", [1])
        cos = g.op1(
            "Unsqueeze",
            [g.op1("Gather", [g.init("cos_table", full_cos), "position_ids"], "rope/GatherCos"), unsq1],
            "rope/cos",
        )
        sin = g.op1(
            "Unsqueeze",
            [g.op1("Gather", [g.init("sin_table", full_sin), "position_ids"], "rope/GatherSin"), unsq1],
            "rope/sin",
        )
        # Additive attention bias [b, 1, s, total]: causal (key index <= query index) and not padding.
        total = g.op1(
            "Gather", [g.op1("Shape", ["attention_mask"], "mask/Shape"), g.const("i1", 1)], "mask/T", axis=0
        )
        seq = g.op1("Gather", [g.op1("Shape", ["input_ids"], "ids/Shape"), g.const("i1", 1)], "ids/S", axis=0)
        past = g.op1("Sub", [total, seq], "mask/past")
        k_idx = g.op1("Range", [g.const("zero", 0), total, g.const("step", 1)], "mask/k_idx")
        q_idx = g.op1("Range", [past, total, g.const("step", 1)], "mask/q_idx")
        causal = g.op1(
            "LessOrEqual",
            [
                g.op1("Unsqueeze", [k_idx, g.const("axes_0", [0])], "mask/k2"),
                g.op1("Unsqueeze", [q_idx, unsq1], "mask/q2"),
            ],
            "mask/causal",
        )  # [s, total]
        keep = g.op1(
            "Unsqueeze",
            [g.op1("Cast", ["attention_mask"], "mask/bool", to=TensorProto.BOOL), g.const("axes_12", [1, 2])],
            "mask/keep",
        )  # [b, 1, 1, total]
        ok = g.op1("And", [causal, keep], "mask/and")  # [b, 1, s, total]
        bias = g.op1(
            "Where",
            [
                ok,
                g.const("zero_f", np.float32(0.0), np.float32),
                g.const("neg_big", np.float32(-1e9), np.float32),
            ],
            "mask/bias",
        )
        shape_bshd = g.const("shape_q", [0, 0, h, d])
        shape_kv = g.const("shape_kv", [0, 0, kvh, d])
        expand = g.const("expand_kv", [1, 1, group, 1, 1])
        shape_rep = g.const("shape_rep", [0, h, -1, d])
        shape_out = g.const("shape_out", [0, 0, h * d])
        scale = g.const("scale", np.float32(1.0 / np.sqrt(d)), np.float32)
        for i in range(cfg.num_layers):
            n = layer_names(i)
            p = f"layers.{i}"
            a = self._rms_plain(x, self.fetch(n["input_norm"]), f"{p}.input_norm")
            q = self.linear_plain(
                a, self.fetch(n["q"]), self.fetch(n["q_bias"]), f"{p}.q_proj", self.precision
            )
            k = self.linear_plain(
                a, self.fetch(n["k"]), self.fetch(n["k_bias"]), f"{p}.k_proj", self.precision
            )
            v = self.linear_plain(
                a, self.fetch(n["v"]), self.fetch(n["v_bias"]), f"{p}.v_proj", self.precision
            )

            def heads(t: str, shape: str, tag: str, p: str = p) -> str:
                r = g.op1("Reshape", [t, shape], f"{p}/{tag}/Reshape")
                return g.op1("Transpose", [r], f"{p}/{tag}/Transpose", perm=[0, 2, 1, 3])

            q = self._rotate(heads(q, shape_bshd, "q"), cos, sin, f"{p}/q_rope")  # [b, h, s, d]
            k = self._rotate(heads(k, shape_kv, "k"), cos, sin, f"{p}/k_rope")  # [b, kv, s, d]
            v = heads(v, shape_kv, "v")
            k_all = g.op1("Concat", [f"past_key_values.{i}.key", k], f"{p}/k_cat", axis=2)
            v_all = g.op1("Concat", [f"past_key_values.{i}.value", v], f"{p}/v_cat", axis=2)
            g.nodes.append(helper.make_node("Identity", [k_all], [f"present.{i}.key"], name=f"{p}/present_k"))
            g.nodes.append(
                helper.make_node("Identity", [v_all], [f"present.{i}.value"], name=f"{p}/present_v")
            )

            def repeat(t: str, tag: str, p: str = p) -> str:
                u = g.op1(
                    "Unsqueeze", [t, g.const("axes_2", [2])], f"{p}/{tag}/Unsqueeze"
                )  # [b, kv, 1, T, d]
                e = g.op1("Expand", [u, expand], f"{p}/{tag}/Expand")  # [b, kv, group, T, d]
                return g.op1("Reshape", [e, shape_rep], f"{p}/{tag}/Reshape")  # [b, h, T, d]

            k_rep, v_rep = repeat(k_all, "k_rep"), repeat(v_all, "v_rep")
            scores = g.op1(
                "Mul",
                [
                    g.op1(
                        "MatMul", [q, g.op1("Transpose", [k_rep], f"{p}/kT", perm=[0, 1, 3, 2])], f"{p}/qk"
                    ),
                    scale,
                ],
                f"{p}/scale",
            )  # [b, h, s, T]
            probs = g.op1("Softmax", [g.op1("Add", [scores, bias], f"{p}/bias")], f"{p}/softmax", axis=-1)
            att = g.op1("MatMul", [probs, v_rep], f"{p}/pv")  # [b, h, s, d]
            att = g.op1(
                "Reshape",
                [g.op1("Transpose", [att], f"{p}/att/Transpose", perm=[0, 2, 1, 3]), shape_out],
                f"{p}/att/Reshape",
            )
            x = g.op1(
                "Add",
                [x, self.linear_plain(att, self.fetch(n["o"]), None, f"{p}.o_proj", self.precision)],
                f"{p}/res1",
            )
            m = self._rms_plain(x, self.fetch(n["post_norm"]), f"{p}.post_norm")
            gate = self.linear_plain(m, self.fetch(n["gate"]), None, f"{p}.gate_proj", self.precision)
            up = self.linear_plain(m, self.fetch(n["up"]), None, f"{p}.up_proj", self.precision)
            act = g.op1(
                "Mul",
                [g.op1("Mul", [gate, g.op1("Sigmoid", [gate], f"{p}/sig")], f"{p}/silu"), up],
                f"{p}/gu",
            )
            x = g.op1(
                "Add",
                [x, self.linear_plain(act, self.fetch(n["down"]), None, f"{p}.down_proj", self.precision)],
                f"{p}/res2",
            )
            self._tick(f"layer {i + 1}/{cfg.num_layers}")
        final = self._rms_plain(x, self.fetch(FINAL_NORM), "final_norm")
        self.linear_plain(final, self._head_weight(), None, "lm_head", self.head_precision)
        g.nodes[-1].output[0] = "logits"
        self._tick("lm head")
        return self._model("plain")


def build_graph(
    cfg: QwenConfig,
    fetch: Fetch,
    style: str = "fast",
    precision: str = "int4",
    head_precision: str = "int8",
    progress: Progress | None = None,
    split_head: bool = False,
    kv_layout: str = "views",
    calibration: Mapping[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    """Build the ONNX model of a Qwen2 decoder whose tensors ``fetch(name)`` returns (HF names, float32).

    With ``split_head`` (fast style only) the graph outputs the final-norm ``hidden`` states of the kept
    positions instead of logits, for a separate head graph (``build_head_graph``). With ``calibration``
    (``calibration.layer_inputs``) the fast style's 4-bit layers are fitted to those activations.
    """
    if split_head and style != "fast":
        raise ValueError("split_head needs the fast style")
    writer = _Writer(cfg, fetch, precision, head_precision, progress, split_head, kv_layout, calibration)
    return writer.build(style)


def build_head_graph(
    cfg: QwenConfig,
    fetch: Fetch,
    head_precision: str = "int4",
    calibration: Mapping[str, np.ndarray] | None = None,
) -> onnx.ModelProto:
    """The output head as its own graph: ``hidden`` -> ``logits`` (see ``build_graph(split_head=True)``)."""
    return _Writer(cfg, fetch, head_precision, head_precision, None, calibration=calibration).build_head()


__all__ = [
    "FAST_BLOCK_SIZES",
    "HEAD_CANDIDATES",
    "HEAD_PREVIEW_BITS",
    "KV_LAYOUTS",
    "PRECISIONS",
    "STYLES",
    "BlockQuantized",
    "build_graph",
    "build_head_graph",
    "fast_block_size",
]
