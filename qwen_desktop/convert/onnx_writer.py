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

The layers both styles share are in ``onnx_layers`` (``LayerWriter``); each style's decoder is in
``onnx_fast`` (``FastWriter``, also the separate head graph) and ``onnx_plain`` (``PlainWriter``).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Executor
from typing import Any

import numpy as np
import onnx

from qwen_desktop.convert.onnx_fast import HEAD_CANDIDATES, HEAD_PREVIEW_BITS, FastWriter
from qwen_desktop.convert.onnx_layers import (
    BLOCK_SIZE,
    FAST_BLOCK_SIZES,
    PRECISIONS,
    STYLES,
    Fetch,
    LayerWriter,
    Progress,
    fast_block_size,
)
from qwen_desktop.convert.onnx_plain import PlainWriter
from qwen_desktop.convert.quant import BlockQuantized
from qwen_desktop.convert.weights import QwenConfig
from qwen_desktop.engine.manifest import KV_LAYOUTS


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
    shared: dict[str, Any] | None = None,
    pool: Executor | None = None,
) -> onnx.ModelProto:
    """Build the ONNX model of a Qwen2 decoder whose tensors ``fetch(name)`` returns (HF names, float32).

    With ``split_head`` (fast style only) the graph outputs the final-norm ``hidden`` states of the kept
    positions instead of logits, for a separate head graph (``build_head_graph``). With ``calibration``
    (``calibration.layer_inputs``) the fast style's 4-bit layers are fitted to those activations. Graphs
    of one build given the same ``shared`` dict quantize the tensors they store alike (the embedding) once.
    With a ``pool`` the weight fits run on its threads (the graph is the same, byte for byte).
    """
    if split_head and style != "fast":
        raise ValueError("split_head needs the fast style")
    writers: dict[str, type[LayerWriter]] = {"fast": FastWriter, "plain": PlainWriter}
    if style not in writers:
        raise ValueError(f"style must be one of {STYLES}")
    writer = writers[style](
        cfg, fetch, precision, head_precision, progress, split_head, kv_layout, calibration, shared, pool
    )
    return writer.build()


def build_head_graph(
    cfg: QwenConfig,
    fetch: Fetch,
    head_precision: str = "int4",
    calibration: Mapping[str, np.ndarray] | None = None,
    pool: Executor | None = None,
) -> onnx.ModelProto:
    """The output head as its own graph: ``hidden`` -> ``logits`` (see ``build_graph(split_head=True)``)."""
    writer = FastWriter(cfg, fetch, head_precision, head_precision, None, calibration=calibration, pool=pool)
    return writer.build_head()


__all__ = [
    "BLOCK_SIZE",
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
