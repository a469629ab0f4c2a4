"""The plain graph style (``convert.onnx_plain``): standard ONNX ops only, and a cache handed back
(``present.N``) that the next pass reads (``past_key_values.N``) as a hub export's is."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort

from qwen_desktop.convert.onnx_writer import build_graph
from qwen_desktop.convert.reference import ReferenceModel

PROMPT = [5, 17, 100, 3, 250, 7]
NEXT = [42, 9]


def test_only_standard_ops_and_the_returned_cache_continues_the_text(tiny_cfg, tiny_weights):
    model = build_graph(tiny_cfg, tiny_weights.__getitem__, "plain", "fp32", head_precision="fp32")
    onnx.checker.check_model(model)
    assert {node.domain for node in model.graph.node} <= {"", "ai.onnx"}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    layers = range(tiny_cfg.num_layers)
    empty = np.zeros((1, tiny_cfg.num_kv_heads, 0, tiny_cfg.head_dim), np.float32)
    past = {f"past_key_values.{i}.{k}": empty for i in layers for k in ("key", "value")}
    names = [o.name for o in session.get_outputs()]
    logits = []
    done = 0
    for ids in (PROMPT, NEXT[:1], NEXT[1:]):
        feeds = {
            "input_ids": np.array([ids], np.int64),
            "attention_mask": np.ones((1, done + len(ids)), np.int64),
            "position_ids": np.arange(done, done + len(ids), dtype=np.int64)[None],
            **past,
        }
        outs = dict(zip(names, session.run(names, feeds), strict=True))
        done += len(ids)
        assert outs["present.0.key"].shape == (1, tiny_cfg.num_kv_heads, done, tiny_cfg.head_dim)
        past = {
            f"past_key_values.{i}.{k}": outs[f"present.{i}.{k}"] for i in layers for k in ("key", "value")
        }
        logits.append(outs["logits"][0])
    want = ReferenceModel(tiny_cfg, tiny_weights).forward(PROMPT + NEXT)  # the whole text in one pass
    np.testing.assert_allclose(np.concatenate(logits), want, atol=1e-4)
