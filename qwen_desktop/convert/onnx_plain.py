"""The ``plain`` graph style: standard ONNX ops only, with the input and output names hub exports use.

Quantized weights are blocked ``DequantizeLinear`` inputs feeding ``MatMul``; RMS norm, rotary embedding
and attention are written out op by op, and the KV cache is passed in and returned whole
(``past_key_values.N`` -> ``present.N``).
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from qwen_desktop.convert.onnx_layers import LayerWriter, rope_cache
from qwen_desktop.convert.weights import EMBED, FINAL_NORM, layer_names


class PlainWriter(LayerWriter):
    """Writes the plain-style decoder (``build``)."""

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

    def build(self) -> onnx.ModelProto:
        g, cfg = self.g, self.cfg
        h, kvh, d = cfg.num_heads, cfg.num_kv_heads, cfg.head_dim
        group = h // kvh
        x = g.op1("Gather", [g.init("embed_tokens.weight", self.fetch(EMBED)), "input_ids"], "embed/Gather")
        self._tick("embedding")
        cos_t, sin_t = rope_cache(cfg, cfg.max_context)
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
