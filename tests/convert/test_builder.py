"""The built ONNX graphs compute what the numpy reference computes."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import onnxruntime as ort
import pytest

from qwen_desktop.convert.builder import build_model
from qwen_desktop.convert.onnx_writer import BLOCK_SIZE, fast_block_size
from qwen_desktop.convert.quant import quantize_blockwise
from qwen_desktop.convert.reference import ReferenceModel
from qwen_desktop.convert.weights import EMBED, LM_HEAD, layer_names
from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.manifest import read_manifest
from tests.convert.folders import assert_same_bytes
from tests.onnx_steps import StepRunner

PROMPT = [5, 17, 100, 3, 250, 7, 9, 42, 64, 128]
DECODE = [11, 12, 13, 14, 15, 16, 17, 18]  # 8 decode steps


def _reference_logits(cfg, weights):
    ref = ReferenceModel(cfg, weights)
    out = [ref.forward(PROMPT)]
    out += [ref.forward([t]) for t in DECODE]
    return out


def _onnx_logits(folder, graph="model.onnx"):
    run = StepRunner(folder, graph)
    out = [run.forward(PROMPT)]
    out += [run.forward([t]) for t in DECODE]
    return out


def _as_quantized(cfg, weights, precision, head_precision, style="fast"):
    """The weights as the builder's quantizer leaves them: what the quantized graph should compute.
    (The plain style keeps the embedding in fp32: a standard-op Gather cannot read blocks.)"""
    bits = {"int4": 4, "int8": 8}
    out = dict(weights)

    fused = {"q": "qkv_proj", "k": "qkv_proj", "v": "qkv_proj", "o": "o_proj", "gate": "gate_up_proj"}
    fused |= {"up": "gate_up_proj", "down": "down_proj", "head": "lm_head", "embed": "embed_tokens"}

    def rt(name, prec, key):
        if prec in bits:
            block = fast_block_size(fused[key], False) if style == "fast" and prec == "int4" else BLOCK_SIZE
            out[name] = quantize_blockwise(weights[name], bits[prec], block).dequantize()
        elif prec == "w8a8":  # symmetric int8, one scale per output channel
            w = weights[name]
            scale = np.abs(w).max(axis=1, keepdims=True) / 127.0
            out[name] = np.round(w / scale) * scale

    for i in range(cfg.num_layers):
        n = layer_names(i)
        for key in ("q", "k", "v", "o", "gate", "up", "down"):
            rt(n[key], precision, key)
    if style == "fast":
        rt(EMBED, head_precision, "embed")
    rt(LM_HEAD, head_precision, "head")
    return out


@pytest.mark.parametrize("style", ["fast", "plain"])
@pytest.mark.parametrize("source", ["gguf", "hf"])
def test_fp32_matches_reference_on_prefill_and_8_decode_steps(
    tmp_path, request, style, source, tiny_cfg, tiny_weights
):
    src = request.getfixturevalue(f"tiny_{source}")
    folder = build_model(src, tmp_path / "m", precision="fp32", style=style).folder
    want = _reference_logits(tiny_cfg, tiny_weights)
    got = _onnx_logits(folder)
    assert got[0].shape == (len(PROMPT), tiny_cfg.vocab_size)
    for step, (g, w) in enumerate(zip(got, want, strict=True)):
        assert np.abs(g - w).max() < 1e-4, f"step {step}"


# Bounds measured on the tiny model (random weights are the hardest case for 4-bit: no outliers to
# exploit, nothing redundant). The error is against the reference run on the same de-quantized weights,
# so it measures the graph (int8 activations at accuracy level 4), not the quantizer.
GRAPH_ERROR_BOUND = {"int8": 0.35, "int4": 0.35}
# An int4 fast head scores the tokens outside its best HEAD_CANDIDATES with the coarse preview only (blocks
# of 256). What the preview must get right, that its best tokens hold the real best ones, is measured on
# the real model (docs/models.md); here its best tokens are checked exactly and the rest more loosely.
PREVIEW_ERROR_BOUND = 1.5


def assert_logits_close(got, want, bound, preview):
    """``got`` within ``bound`` of ``want``; with an int4 head's preview, that holds for each row's best
    tokens (recomputed exactly) and the rest are within the preview's coarser bound."""
    if not preview:
        assert np.abs(got - want).max() < bound
        return
    best = np.argsort(-want, axis=1)[:, :16]  # well inside the recomputed candidates
    assert np.abs(np.take_along_axis(got, best, 1) - np.take_along_axis(want, best, 1)).max() < bound
    assert np.abs(got - want).max() < PREVIEW_ERROR_BOUND


# Against the original fp32 weights: what quantization itself costs on this model.
QUANT_ERROR_BOUND = {"int8": 0.5, "int4": 3.0}


@pytest.mark.parametrize("style", ["fast", "plain"])
@pytest.mark.parametrize("precision", ["int8", "int4"])
def test_quantized_build_agrees_with_reference(tmp_path, tiny_gguf, tiny_cfg, tiny_weights, style, precision):
    # the plain fit: each block rounded on its own, as _as_quantized does (the fitted build: below)
    folder = build_model(
        tiny_gguf, tmp_path / "m", precision=precision, head_precision=precision, style=style, fit="plain"
    ).folder
    got = _onnx_logits(folder)
    same_weights = _reference_logits(
        tiny_cfg, _as_quantized(tiny_cfg, tiny_weights, precision, precision, style)
    )
    original = _reference_logits(tiny_cfg, tiny_weights)
    agree = total = 0
    preview = style == "fast" and precision == "int4"
    for g, w, o in zip(got, same_weights, original, strict=True):
        assert_logits_close(g, w, GRAPH_ERROR_BOUND[precision], preview)
        assert np.abs(g - o).max() < QUANT_ERROR_BOUND[precision]
        for row_g, row_w in zip(g, w, strict=True):
            total += 1
            if row_g.argmax() == row_w.argmax():
                agree += 1
            else:  # only a near tie may flip: the graph's pick scores within the error bound of the best
                assert row_w.max() - row_w[row_g.argmax()] < 2 * GRAPH_ERROR_BOUND[precision]
    assert agree >= 0.9 * total, f"top-1 agreed at {agree}/{total} positions"


def test_default_build_is_int4_fast_with_an_int4_head_and_writes_a_complete_manifest(
    tiny_model_dir, tiny_gguf
):
    m = read_manifest(tiny_model_dir)
    assert (m["style"], m["precision"], m["head_precision"]) == ("fast", "int4", "int4")
    tokens = json.loads((tiny_model_dir / "tokenizer.json").read_text())
    assert m["end_of_turn_id"] == next(
        t["id"] for t in tokens["added_tokens"] if t["content"] == "<|im_end|>"
    )
    assert m["eos_token_ids"][0] == m["end_of_turn_id"]
    assert "<|im_start|>" in m["chat_template"]
    import hashlib

    assert m["source"]["files"][0]["sha256"] == hashlib.sha256(tiny_gguf.read_bytes()).hexdigest()
    assert m["config"]["num_layers"] == 2 and m["max_context"] == 512
    assert m["files"] == {
        "model": "model.onnx",
        "tokenizer": "tokenizer.json",
        "prefill": "prefill.onnx",
        "head": "head.onnx",
    }
    assert m["prefill_precision"] == "w8a8" and m["format_version"] == 3
    assert m["kv_layout"] == "views"
    assert sorted(p.name for p in tiny_model_dir.iterdir()) == [
        "head.onnx",
        "manifest.json",
        "model.onnx",
        "prefill.onnx",
        "tokenizer.json",
    ]


# int8 weights per channel and int8 activations per tensor, against the reference on the same int8 weights.
W8A8_ERROR_BOUND = 0.35


def test_prefill_graph_runs_int8_matmuls_and_computes_what_its_weights_give(
    tiny_plain_fit_dir, tiny_cfg, tiny_weights
):
    import onnx

    tiny_model_dir = tiny_plain_fit_dir  # its head's weights are what quantize_blockwise gives
    ops = [n.op_type for n in onnx.load(str(tiny_model_dir / "prefill.onnx")).graph.node]
    assert ops.count("MatMulIntegerToFloat") == 2 * 5  # qkv, o, gate, up, down per layer
    assert ops.count("MatMulNBits") == 0  # no head of its own: it feeds head.onnx, as the decode graph does
    from qwen_desktop.engine.int8_check import int8_products_clip

    if int8_products_clip():
        pytest.skip("this CPU's int8 kernel clips: ONNX Runtime cannot compute the int8 graph exactly here")
    got = _onnx_logits(tiny_model_dir, "prefill.onnx")
    want = _reference_logits(tiny_cfg, _as_quantized(tiny_cfg, tiny_weights, "w8a8", "int4"))
    for g, w in zip(got, want, strict=True):
        assert_logits_close(g, w, W8A8_ERROR_BOUND, preview=True)


def test_no_prefill_graph_for_fp32_or_when_asked_for_none(tmp_path, tiny_gguf, tiny_fp32_dir):
    assert not (tiny_fp32_dir / "prefill.onnx").exists()
    folder = build_model(tiny_gguf, tmp_path / "m", prefill="none").folder
    m = read_manifest(folder)
    assert "prefill" not in m["files"] and m["prefill_precision"] is None
    assert not (folder / "prefill.onnx").exists()
    # a w8a8 build is already int8 throughout: no second copy of the same graph
    w8a8 = build_model(tiny_gguf, tmp_path / "w8a8", precision="w8a8", head_precision="int4").folder
    assert sorted(p.name for p in w8a8.iterdir()) == ["manifest.json", "model.onnx", "tokenizer.json"]


def test_fast_graph_uses_the_fused_cpu_ops(tiny_model_dir):
    import onnx

    model = onnx.load(str(tiny_model_dir / "model.onnx"))
    ops = [n.op_type for n in model.graph.node]
    # attention reads the cache through views: rotary, then group-batched products over past and new keys
    assert "GroupQueryAttention" not in ops
    assert ops.count("RotaryEmbedding") == 2 and ops.count("FusedMatMul") == 2 * 2
    assert [o.name for o in model.graph.output][1:3] == ["kv_new.0.key", "kv_new.0.value"]
    assert ops.count("MatMulNBits") == 2 * 4  # qkv, o, gate_up, down per layer (the head is head.onnx)
    assert "GatherBlockQuantized" in ops
    assert "SkipSimplifiedLayerNormalization" in ops
    assert model.graph.output[0].name == "hidden"
    head = onnx.load(str(tiny_model_dir / "head.onnx"))
    # a coarse 4-bit pass over the vocabulary, then its best tokens recomputed from the exact rows
    assert [n.op_type for n in head.graph.node] == [
        "MatMulNBits",
        "TopK",
        "GatherBlockQuantized",
        "Unsqueeze",
        "Mul",
        "ReduceSum",
        "ScatterElements",
    ]
    assert [i.name for i in head.graph.input] == ["hidden"] and head.graph.output[0].name == "logits"
    sizes = read_manifest(tiny_model_dir)["block_sizes"]
    assert sizes["down_proj"] == 128 and sizes["o_proj"] == 64 and sizes["qkv_proj"] == 32
    seen = set()
    for n in [*model.graph.node, *head.graph.node]:
        if n.op_type == "MatMulNBits":
            attrs = {a.name: a.i for a in n.attribute}
            tensor = n.name.split("/")[0].rsplit(".", 1)[-1]  # layers.0.down_proj/MatMulNBits -> down_proj
            assert attrs["block_size"] == sizes[tensor] and attrs["accuracy_level"] == 4, n.name
            seen.add(tensor)
    assert seen == {"qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head_preview"}
    assert sizes["lm_head_preview"] == 256 and sizes["lm_head"] == 32
    preview = next(n for n in head.graph.node if n.op_type == "MatMulNBits")
    assert {a.name: a.i for a in preview.attribute}["bits"] == 4
    rows = next(n for n in head.graph.node if n.op_type == "GatherBlockQuantized")
    assert {a.name: a.i for a in rows.attribute}["block_size"] == sizes["lm_head"]


def test_int4_head_scores_its_best_tokens_exactly(tiny_plain_fit_dir, tiny_cfg, tiny_weights):
    """head.onnx previews the vocabulary with coarse blocks; the tokens it keeps as candidates, which
    include every token sampling could pick, get the exact blocks-of-32 score."""
    import onnxruntime as ort

    from qwen_desktop.convert.onnx_writer import HEAD_CANDIDATES

    head = ort.InferenceSession(str(tiny_plain_fit_dir / "head.onnx"), providers=["CPUExecutionProvider"])
    w = tiny_weights[EMBED if tiny_cfg.tie_word_embeddings else LM_HEAD]
    exact_w = quantize_blockwise(w, 4, fast_block_size("lm_head")).dequantize()[:, : w.shape[1]]
    states = np.random.default_rng(0).standard_normal((1, 5, tiny_cfg.hidden_size)).astype(np.float32)
    got = head.run(None, {"hidden": states})[0][0]  # [5, vocab]
    want = states[0] @ exact_w.T
    assert tiny_cfg.vocab_size > HEAD_CANDIDATES
    best = np.argsort(-want, axis=1)[:, :20]
    assert np.abs(np.take_along_axis(got, best, 1) - np.take_along_axis(want, best, 1)).max() < 1e-4
    assert (got.argmax(1) == want.argmax(1)).all()
    assert np.abs(got - want).max() < PREVIEW_ERROR_BOUND  # the rest: preview scores, close but coarse
    assert np.abs(got - want).max() > 1e-3  # ...and not exact, or the preview would be doing nothing


def test_a_2bit_head_preview_still_scores_its_best_tokens_exactly(monkeypatch, tiny_cfg, tiny_weights):
    """HEAD_PREVIEW_BITS = 2 (measured and not the default, docs/models.md) writes a head whose preview
    MatMulNBits reads 2-bit codes, and whose candidates still get the exact blocks-of-32 score."""
    import onnxruntime as ort

    from qwen_desktop.convert import onnx_fast, onnx_writer

    monkeypatch.setattr(onnx_fast, "HEAD_PREVIEW_BITS", 2)
    monkeypatch.setitem(onnx_writer.FAST_BLOCK_SIZES, "lm_head_preview", 128)
    w = tiny_weights[EMBED if tiny_cfg.tie_word_embeddings else LM_HEAD]
    model = onnx_writer.build_head_graph(tiny_cfg, tiny_weights.__getitem__)
    preview = next(n for n in model.graph.node if n.op_type == "MatMulNBits")
    assert {a.name: a.i for a in preview.attribute}["bits"] == 2
    head = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    exact_w = quantize_blockwise(w, 4, fast_block_size("lm_head")).dequantize()[:, : w.shape[1]]
    states = np.random.default_rng(1).standard_normal((1, 5, tiny_cfg.hidden_size)).astype(np.float32)
    got = head.run(None, {"hidden": states})[0][0]  # [5, vocab]
    want = states[0] @ exact_w.T
    best = np.argsort(-want, axis=1)[:, :20]
    assert np.abs(np.take_along_axis(got, best, 1) - np.take_along_axis(want, best, 1)).max() < 1e-4
    assert (got.argmax(1) == want.argmax(1)).all()


def test_fast_graph_computes_logits_only_for_the_kept_positions(tiny_model_dir):
    run = StepRunner(tiny_model_dir)
    n = 40
    feeds = run.feeds(list(range(1, n + 1)))
    feeds["num_logits_to_keep"] = np.array(1, np.int64)
    hidden = run.session.run(["hidden"], feeds)[0]
    assert hidden.shape == (1, 1, run.manifest["config"]["hidden_size"])
    logits = run.head.run(None, {"hidden": hidden})[0]
    assert logits.shape == (1, 1, run.manifest["config"]["vocab_size"])


@pytest.mark.parametrize("graph", ["model.onnx", "prefill.onnx"])
def test_the_last_layer_works_only_on_the_kept_positions_and_still_caches_every_one(tiny_model_dir, graph):
    """A prompt's last layer computes every position's key and value (later tokens attend to them) but its
    queries, o_proj and MLP only for the positions whose logits are kept."""
    import onnx

    from qwen_desktop.engine.model_files import load_model_files
    from qwen_desktop.engine.session import OnnxModel

    model = onnx.load(str(tiny_model_dir / graph))
    layers = json.loads((tiny_model_dir / "manifest.json").read_text())["config"]["num_layers"]
    down = [n for n in model.graph.node if n.name.startswith(f"layers.{layers - 1}.down_proj")][-1].output[0]
    model.graph.output.append(onnx.ValueInfoProto(name=down))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    run = StepRunner(tiny_model_dir, graph)
    n = 12
    for keep in (1, 3, n):
        feeds = run.feeds(list(range(1, n + 1)))
        feeds["num_logits_to_keep"] = np.array(keep, np.int64)
        outs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds), strict=True))
        assert outs[down].shape[1] == keep
        assert outs[f"kv_new.{layers - 1}.key"].shape[1] == n

    # The kept positions' numbers and the whole cache are those of a pass that keeps every position.
    files = load_model_files(tiny_model_dir)
    if graph == "model.onnx":
        files = dataclasses.replace(files, prefill_graph=None)
    ids = [7, 3, 19, 4, 25, 11, 2, 30, 8, 14, 5, 9]
    one, every = OnnxModel(files, threads=1, max_len=64), OnnxModel(files, threads=1, max_len=64)
    last = one.forward(ids, keep=1)[-1].copy()
    all_rows = every.forward(ids, keep=len(ids))
    np.testing.assert_allclose(last, all_rows[-1], atol=1e-4)
    np.testing.assert_allclose(one.forward([6], keep=1)[-1], every.forward([6], keep=1)[-1], atol=1e-4)


def test_tied_embeddings_build_and_match(tmp_path, tiny_tokenizer):
    from qwen_desktop.convert.tiny import make_weights, tiny_config, write_hf_folder

    cfg = tiny_config(len(tiny_tokenizer[0]), tie_word_embeddings=True)
    weights = make_weights(cfg, seed=3)
    weights[LM_HEAD] = weights[EMBED]
    src = write_hf_folder(tmp_path / "tied", cfg, weights, tiny_tokenizer)
    assert "lm_head.weight" not in (src / "model.safetensors").read_bytes()[:4000].decode("latin-1")
    folder = build_model(src, tmp_path / "m", precision="fp32").folder
    got, want = _onnx_logits(folder), _reference_logits(cfg, weights)
    assert max(np.abs(g - w).max() for g, w in zip(got, want, strict=True)) < 1e-4


def test_external_data_is_used_past_the_protobuf_limit(tmp_path, tiny_gguf, monkeypatch):
    import qwen_desktop.convert.builder as builder

    monkeypatch.setattr(builder, "PROTOBUF_LIMIT", 10_000)  # pretend the tiny model is a 7B one
    folder = build_model(tiny_gguf, tmp_path / "m", precision="fp32").folder
    assert (folder / "model.onnx.data").stat().st_size > (folder / "model.onnx").stat().st_size
    want = _reference_logits(builder.open_source(tiny_gguf).config, _weights_of(tiny_gguf))
    got = _onnx_logits(folder)
    assert np.abs(got[0] - want[0]).max() < 1e-4


def _weights_of(path):
    from qwen_desktop.convert.builder import open_source
    from qwen_desktop.convert.weights import load_all

    return load_all(open_source(path))


def test_progress_reports_every_layer(tmp_path, tiny_gguf):
    seen = []
    result = build_model(
        tiny_gguf, tmp_path / "m", progress=lambda stage, done, total: seen.append((stage, done, total))
    )
    # the phases' seconds, each phase once, add up to the build's time (less what runs before and after)
    names = [name for name, _ in result.phases]
    assert names == [
        "reading",
        "calibration",
        "decode graph",
        "writing",
        "prefill graph",
        "output head",
        "tokenizer and manifest",
    ]
    assert 0 < sum(seconds for _, seconds in result.phases) <= result.seconds
    stages = [s for s, _, _ in seen]
    assert "layer 1/2" in stages and "layer 2/2" in stages and stages[-1] == "done"
    assert "prefill graph: layer 2/2" in stages
    # the calibration pass (the default fit) starts before the graphs and runs alongside them: the layers'
    # fits wait for their inputs, so the layer steps are its progress too
    assert [(d, t) for s, d, t in seen if s == "calibration"] == [(0, 1)]
    assert stages.index("calibration") < stages.index("layer 1/2")
    # both graphs share one bar: 4 steps each (embedding, 2 layers, head)
    ticks = [
        (d, t)
        for s, d, t in seen
        if s.removeprefix("prefill graph: ").startswith(("embedding", "layer", "lm head"))
    ]
    assert [d for d, _ in ticks] == list(range(1, 9)) and all(t == 8 for _, t in ticks)


def test_the_folder_tokenizer_stores_merges_as_strings_and_tokenizes_as_the_source(tiny_model_dir, tiny_gguf):
    from tokenizers import Tokenizer

    from qwen_desktop.convert.builder import open_source
    from qwen_desktop.convert.tokenizer_files import with_string_merges

    source_json = open_source(tiny_gguf).tokenizer.tokenizer_json
    assert isinstance(json.loads(source_json)["model"]["merges"][0], list)
    written = (tiny_model_dir / "tokenizer.json").read_text(encoding="utf-8")
    merges = json.loads(written)["model"]["merges"]
    assert merges and all(isinstance(m, str) and m.count(" ") == 1 for m in merges)
    before, after = Tokenizer.from_str(source_json), Tokenizer.from_str(written)
    for text in ("Hello world, hello again!", "def f(x):\n    return x * 2", "naïve café 世界 🙂"):
        assert after.encode(text).ids == before.encode(text).ids
    # a merge part holding a space would make the string form ambiguous: such a tokenizer is left alone
    doc = json.loads(source_json)
    doc["model"]["merges"][0] = ["a b", "c"]
    odd = json.dumps(doc)
    assert with_string_merges(odd) == odd


def test_default_build_fits_its_4bit_layers_to_the_calibration_text(
    tmp_path, tiny_model_dir, tiny_gguf, tiny_cfg, tiny_weights
):
    m = read_manifest(tiny_model_dir)
    assert m["fit"] == "gptq"
    assert m["block_sizes"]["gate_up_proj"] == 64  # the fit is what lets the largest matrix use larger blocks
    plain = build_model(tiny_gguf, tmp_path / "plain", fit="plain", prefill="none")
    assert plain.fit == "plain"
    assert read_manifest(plain.folder)["fit"] == "plain"
    assert read_manifest(plain.folder)["block_sizes"]["gate_up_proj"] == 32
    # within the bound of any 4-bit build (that the fit is better is measured where the weights are real:
    # test_quant.py on structured inputs, test_real_model.py on the real model)
    for g, o in zip(_onnx_logits(tiny_model_dir), _reference_logits(tiny_cfg, tiny_weights), strict=True):
        assert np.abs(g - o).max() < QUANT_ERROR_BOUND["int4"]


def test_a_tokenizer_that_reads_too_little_of_the_calibration_text_gets_the_plain_fit(
    tmp_path, tiny_gguf, monkeypatch
):
    import qwen_desktop.convert.calibration as calibration

    monkeypatch.setattr(calibration, "calibration_text", lambda: "too short")
    result = build_model(tiny_gguf, tmp_path / "m", prefill="none")
    assert result.fit == "plain"
    m = read_manifest(result.folder)
    assert m["fit"] == "plain" and m["block_sizes"]["gate_up_proj"] == 32


def test_an_unknown_fit_is_refused_before_anything_is_written(tmp_path, tiny_gguf):
    from qwen_desktop.engine.errors import ModelError

    with pytest.raises(ModelError, match="unknown weight fit 'awq'"):
        build_model(tiny_gguf, tmp_path / "m", fit="awq")
    assert not (tmp_path / "m").exists()


def test_the_reference_hands_out_every_linear_layers_input(tiny_cfg, tiny_weights):
    seen = {}
    ref = ReferenceModel(tiny_cfg, tiny_weights)
    states = ref.forward(PROMPT, capture=seen.__setitem__, head=False)
    kinds = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")
    assert sorted(seen) == sorted(
        [f"layers.{i}.{k}" for i in range(tiny_cfg.num_layers) for k in kinds] + ["lm_head"]
    )
    assert seen["layers.0.down_proj"].shape == (len(PROMPT), tiny_cfg.intermediate_size)
    assert np.array_equal(seen["lm_head"], states)
    ref.reset()
    np.testing.assert_allclose(ref.forward(PROMPT), states @ tiny_weights[LM_HEAD].T, rtol=1e-5, atol=1e-5)


def test_calibration_inputs_streamed_from_their_own_thread_are_the_same_and_fail_loudly(
    tiny_cfg, tiny_weights
):
    from qwen_desktop.convert.calibration import StreamedInputs, input_names, layer_inputs

    ids = list(range(3, 70))
    want = layer_inputs(tiny_cfg, tiny_weights.__getitem__, ids)
    streamed = StreamedInputs(tiny_cfg, tiny_weights.__getitem__, ids)
    assert list(streamed) == list(input_names(tiny_cfg)) and sorted(want) == sorted(streamed)
    for name in reversed(input_names(tiny_cfg)):  # waits for the pass to get there
        np.testing.assert_array_equal(streamed[name], want[name])
    assert streamed.get("embed_tokens") is None  # a name the pass never keeps does not wait
    streamed.close()

    def broken(name):
        if name.startswith("model.layers.1."):
            raise ModelError("tensor model.layers.1.x is corrupt")
        return tiny_weights[name]

    failing = StreamedInputs(tiny_cfg, broken, ids)
    np.testing.assert_array_equal(failing["layers.0.down_proj"], want["layers.0.down_proj"])
    with pytest.raises(ModelError, match="corrupt"):
        failing["layers.1.qkv_proj"]  # the fit that needs it gets the pass's error
    failing.close()


def test_the_default_fit_rounds_down_proj_plainly_and_best_fits_it_too(tmp_path, tiny_gguf, tiny_weights):
    """down_proj's fit costs most of a build's fitting time and measured no gain (docs/models.md), so the
    default rounds it block by block; --quality best fits it like the other matrices."""
    import onnx
    from onnx import numpy_helper

    from qwen_desktop.convert.quant import quantize_blockwise

    def weights(folder, name):
        model = onnx.load(str(folder / "model.onnx"))
        return next(numpy_helper.to_array(t) for t in model.graph.initializer if t.name == name)

    default = build_model(tiny_gguf, tmp_path / "default", prefill="none")
    best = build_model(tiny_gguf, tmp_path / "best", prefill="none", quality="best")
    assert read_manifest(default.folder)["quality"] == "default"
    assert read_manifest(best.folder)["quality"] == "best"
    down = "layers.0.down_proj.qweight"
    plain = quantize_blockwise(tiny_weights["model.layers.0.mlp.down_proj.weight"], 4, 128).packed
    np.testing.assert_array_equal(weights(default.folder, down), plain)
    assert not np.array_equal(weights(best.folder, down), plain)
    # the other layer matrices are fitted the same way in both
    gate_up = "layers.0.gate_up_proj.qweight"
    np.testing.assert_array_equal(weights(default.folder, gate_up), weights(best.folder, gate_up))
    with pytest.raises(ModelError, match="unknown build quality"):
        build_model(tiny_gguf, tmp_path / "bad", quality="fastest")


def test_read_twice_dequantizes_each_tensor_once_for_two_readers_in_step():
    # the reference pass runs a few tensors ahead of the decode graph (or behind): each is read once
    from qwen_desktop.convert.builder import ReadTwice

    calls: list[str] = []

    def fetch(name: str) -> np.ndarray:
        calls.append(name)
        return np.full(256, int(name[1:]), np.float32)  # 1 KB each

    reads = ReadTwice(fetch, limit=8 << 10)
    ahead, behind = [], []
    for i in range(43):
        if i < 40:
            ahead.append(float(reads(f"t{i}")[0]))
        if i >= 3:
            behind.append(float(reads(f"t{i - 3}")[0]))
    assert ahead == behind == [float(i) for i in range(40)]
    assert sorted(calls) == sorted(f"t{i}" for i in range(40)), "each tensor dequantized once"
    assert reads._bytes == 0, "nothing is kept once both have read it"
    with pytest.raises(ValueError):
        reads("t1")[0] = 5.0  # what one reader is given the other may share: it cannot be changed


def test_read_twice_keeps_at_most_its_limit_for_a_reader_far_behind():
    from qwen_desktop.convert.builder import ReadTwice

    calls: list[str] = []

    def fetch(name: str) -> np.ndarray:
        calls.append(name)
        return np.zeros(256, np.float32)

    reads = ReadTwice(fetch, limit=4 << 10)  # four tensors
    for i in range(10):
        reads(f"t{i}")
    assert reads._bytes <= 4 << 10
    for i in range(10):
        reads(f"t{i}")
    assert len(calls) == 16, "the first four came from memory, the other six were read again"


def test_two_default_builds_of_one_file_are_byte_identical(tmp_path, tiny_gguf):
    """A user who builds the same file twice (or a bug report's build) gets the same model: the builder holds
    numpy's BLAS to one thread before its calibration thread starts, so no sum depends on timing."""
    first = build_model(tiny_gguf, tmp_path / "a").folder
    second = build_model(tiny_gguf, tmp_path / "b").folder
    assert_same_bytes(first, second)
