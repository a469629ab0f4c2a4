"""The ``fast`` graph style: ONNX Runtime CPU contrib ops over a KV cache the caller binds.

MatMulNBits linear layers with packed QKV and gate/up matmuls, SkipSimplifiedLayerNormalization,
attention over views of the cache (``views``) or GroupQueryAttention (``shared``), logits only for the
last ``num_logits_to_keep`` positions, and an int4 head that previews the vocabulary coarsely and
rescores its best candidates exactly. The inputs and outputs are described in ``onnx_writer``.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from qwen_desktop.convert.onnx_layers import (
    BLOCK_SIZE,
    MS_DOMAIN,
    LayerWriter,
    fast_block_size,
    rope_cache,
)
from qwen_desktop.convert.weights import EMBED, FINAL_NORM, layer_names

# An int4 fast-style head scores the whole vocabulary with a coarse preview, then recomputes this many
# best-scored tokens exactly from the 4-bit blocks-of-32 rows (docs/models.md). A 2-bit preview (blocks of
# 128, best 128) was measured and not kept: its coarse tail scores cost KL divergence (0.048 against 0.039)
# and it decoded no faster on Zen 4.
HEAD_PREVIEW_BITS = 4
HEAD_CANDIDATES = 64


class FastWriter(LayerWriter):
    """Writes the fast-style decoder (``build``) or its head alone (``build_head``)."""

    def _embedding_fast(self) -> str:
        g = self.g
        if self.head_precision == "fp32":
            emb = self.fetch(EMBED)  # [vocab, hidden]
            return g.op1("Gather", [g.init("embed_tokens.weight", emb), "input_ids"], "embed/Gather")
        bits = 4 if self.head_precision == "int4" else 8
        # the decode and prefill graphs of a build store the same quantized embedding: quantize it once
        key = f"embed_tokens/{bits}"
        q = self.shared.get(key) if self.shared is not None else None
        if q is None:
            q = self._packed(self.fetch(EMBED), bits, BLOCK_SIZE, "embed_tokens")
            if self.shared is not None:
                self.shared[key] = q
        return self._gather_quantized(
            q,
            self.cfg.vocab_size,
            bits,
            BLOCK_SIZE,
            "input_ids",
            "embed_tokens",
            "embed/GatherBlockQuantized",
        )

    # -- attention -------------------------------------------------------------------------------------------
    def _attention_inputs(self) -> dict[str, str]:
        """Values every layer's attention uses, computed once per run."""
        g, cfg = self.g, self.cfg
        cos, sin = rope_cache(cfg, cfg.max_context)
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

    def build(self) -> onnx.ModelProto:
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
