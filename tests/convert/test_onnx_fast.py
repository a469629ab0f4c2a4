"""The fast graph style (``convert.onnx_fast``): ONNX Runtime's contrib ops, and the int4 head that previews
every token coarsely and rescores its ``HEAD_CANDIDATES`` best from the finer blocks."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from qwen_desktop.convert.onnx_fast import HEAD_CANDIDATES
from qwen_desktop.convert.onnx_layers import MS_DOMAIN
from qwen_desktop.convert.onnx_writer import build_graph, build_head_graph
from qwen_desktop.convert.weights import EMBED, LM_HEAD


@pytest.mark.parametrize("precision", ["int4", "int8"])
def test_the_layers_are_onnx_runtime_contrib_ops(tiny_cfg, tiny_weights, precision):
    model = build_graph(tiny_cfg, tiny_weights.__getitem__, "fast", precision, "int8")
    ops = {(node.domain, node.op_type) for node in model.graph.node}
    assert (MS_DOMAIN, "MatMulNBits") in ops and (MS_DOMAIN, "SkipSimplifiedLayerNormalization") in ops
    assert not any(op == "MatMul" for _, op in ops)  # no float matmul of a weight is left


def test_the_int4_head_previews_every_token_and_picks_what_the_float_head_picks(tiny_cfg, tiny_weights):
    assert tiny_cfg.vocab_size > HEAD_CANDIDATES  # else there is no preview
    head = build_head_graph(tiny_cfg, tiny_weights.__getitem__, head_precision="int4")
    assert {"TopK", "ScatterElements"} <= {node.op_type for node in head.graph.node}  # preview, rescore
    session = ort.InferenceSession(head.SerializeToString(), providers=["CPUExecutionProvider"])
    hidden = np.random.default_rng(0).standard_normal((1, 8, tiny_cfg.hidden_size)).astype(np.float32)
    logits = session.run(["logits"], {"hidden": hidden})[0][0]  # [8, vocab]
    weight = tiny_weights[EMBED if tiny_cfg.tie_word_embeddings else LM_HEAD]
    exact = hidden[0] @ weight.T
    assert logits.shape == exact.shape == (8, tiny_cfg.vocab_size)
    np.testing.assert_array_equal(logits.argmax(-1), exact.argmax(-1))
    assert min(np.corrcoef(a, b)[0, 1] for a, b in zip(logits, exact, strict=True)) > 0.99
