"""The ONNX writer's contract with the engine: each graph variant is a valid ONNX model with the input and
output names its session binds, and computes the reference model's logits (fp32) when run through ONNX
Runtime. The builder tests (test_builder.py) cover the quantized variants end to end."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from qwen_desktop.convert.onnx_writer import build_graph, build_head_graph
from qwen_desktop.convert.reference import ReferenceModel

PROMPT = [5, 17, 100, 3, 250, 7]


def names(model: onnx.ModelProto) -> tuple[set[str], set[str]]:
    return {i.name for i in model.graph.input}, {o.name for o in model.graph.output}


@pytest.mark.parametrize(
    ("style", "kv_layout", "split_head"),
    [("fast", "views", False), ("fast", "views", True), ("fast", "shared", False), ("plain", "views", False)],
)
@pytest.mark.parametrize("precision", ["fp32", "int4", "int8"])
def test_every_variant_is_valid_onnx_with_the_names_the_engine_binds(
    tiny_cfg, tiny_weights, style, kv_layout, split_head, precision
):
    model = build_graph(
        tiny_cfg,
        tiny_weights.__getitem__,
        style,
        precision,
        "int8",
        split_head=split_head,
        kv_layout=kv_layout,
    )
    if style == "plain":  # standard ops only: the ONNX checker knows them all
        onnx.checker.check_model(model)
    # the fast style uses ONNX Runtime's own ops: ONNX Runtime must accept it (shapes, types, op specs)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert {i.name for i in session.get_inputs()} == names(model)[0]
    inputs, outputs = names(model)
    assert "input_ids" in inputs
    layers = range(tiny_cfg.num_layers)
    if style == "plain":
        assert {"attention_mask", "position_ids"} <= inputs
        assert {f"past_key_values.{i}.{k}" for i in layers for k in ("key", "value")} <= inputs
        assert {f"present.{i}.{k}" for i in layers for k in ("key", "value")} <= outputs
        assert "logits" in outputs
    elif kv_layout == "views":
        assert "num_logits_to_keep" in inputs
        assert {f"kv_cache.{i}.{k}" for i in layers for k in ("key", "value")} <= inputs
        assert {f"kv_new.{i}.{k}" for i in layers for k in ("key", "value")} <= outputs
        assert ("hidden" if split_head else "logits") in outputs
    else:
        assert {"attention_mask", "num_logits_to_keep"} <= inputs
        assert {f"present.{i}.{k}" for i in layers for k in ("key", "value")} <= outputs


def test_the_head_graph_turns_hidden_states_into_logits(tiny_cfg, tiny_weights):
    head = build_head_graph(tiny_cfg, tiny_weights.__getitem__, head_precision="int8")
    session = ort.InferenceSession(head.SerializeToString(), providers=["CPUExecutionProvider"])
    inputs, outputs = names(head)
    hidden = np.random.default_rng(0).standard_normal((1, 2, tiny_cfg.hidden_size)).astype(np.float32)
    assert session.run(["logits"], {"hidden": hidden})[0].shape == (1, 2, tiny_cfg.vocab_size)
    assert inputs == {"hidden"} and outputs == {"logits"}


def test_the_plain_fp32_graph_computes_the_reference_logits(tiny_cfg, tiny_weights):
    model = build_graph(tiny_cfg, tiny_weights.__getitem__, "plain", "fp32", head_precision="fp32")
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    n = len(PROMPT)
    feeds = {
        "input_ids": np.array([PROMPT], dtype=np.int64),
        "attention_mask": np.ones((1, n), dtype=np.int64),
        "position_ids": np.arange(n, dtype=np.int64)[None],
    }
    shape = (1, tiny_cfg.num_kv_heads, 0, tiny_cfg.head_dim)
    for i in range(tiny_cfg.num_layers):
        feeds[f"past_key_values.{i}.key"] = np.zeros(shape, dtype=np.float32)
        feeds[f"past_key_values.{i}.value"] = np.zeros(shape, dtype=np.float32)
    logits = session.run(["logits"], feeds)[0][0]
    want = ReferenceModel(tiny_cfg, tiny_weights).forward(PROMPT)
    assert logits.shape == want.shape == (n, tiny_cfg.vocab_size)
    assert np.abs(logits - want).max() < 1e-4


def test_wrong_arguments_are_refused_before_anything_is_built(tiny_cfg, tiny_weights):
    with pytest.raises(ValueError, match="split_head needs the fast style"):
        build_graph(tiny_cfg, tiny_weights.__getitem__, "plain", "fp32", split_head=True)
    with pytest.raises(ValueError, match="style must be one of"):
        build_graph(tiny_cfg, tiny_weights.__getitem__, "fancy", "fp32")


def test_weight_fits_on_worker_threads_write_the_same_graph_byte_for_byte(tiny_cfg, tiny_weights):
    """The builder fits the weights on a pool of threads (one BLAS thread each); what it writes must be
    exactly what fitting them one after another writes, initializer order included."""
    from concurrent.futures import ThreadPoolExecutor

    from qwen_desktop.convert.calibration import layer_inputs

    rng = np.random.default_rng(3)
    calibration = layer_inputs(
        tiny_cfg, tiny_weights.__getitem__, list(rng.integers(0, tiny_cfg.vocab_size, 80))
    )

    def both(pool):
        kw = {"head_precision": "int4", "split_head": True, "pool": pool}
        decode = build_graph(tiny_cfg, tiny_weights.__getitem__, calibration=calibration, **kw)
        head = build_head_graph(tiny_cfg, tiny_weights.__getitem__, "int4", calibration, pool=pool)
        return decode.SerializeToString(), head.SerializeToString()

    inline = both(None)
    with ThreadPoolExecutor(max_workers=3) as pool:
        threaded = both(pool)
    assert threaded == inline
