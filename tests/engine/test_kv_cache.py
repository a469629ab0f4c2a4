"""The three KV-cache layouts: each gives the reference's logits through prompts, replies and rewinds, puts a
conversation aside and back, and refuses a wrong shape (a graph's, a restored state's) with a clear error
instead of attending over the wrong positions."""

from __future__ import annotations

import json
import shutil

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from qwen_desktop.convert.builder import build_model, open_source
from qwen_desktop.convert.reference import ReferenceModel
from qwen_desktop.convert.weights import load_all
from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.kv_cache import (
    CacheShapeError,
    ContextFullError,
    PlainKVCache,
    SharedKVCache,
    ViewsKVCache,
)
from qwen_desktop.engine.model_files import load_model_files
from qwen_desktop.engine.session import OnnxModel

PROMPT = [5, 17, 100, 3, 250, 7, 9, 42, 64, 128, 11, 12, 13, 14, 15, 16, 200, 201, 202, 203]
REPLY = [21, 22, 23, 24, 25]
LAYOUTS = {"views": ViewsKVCache, "shared": SharedKVCache, "plain": PlainKVCache}


@pytest.fixture(scope="module")
def reference(tiny_gguf):
    src = open_source(tiny_gguf)
    return ReferenceModel(src.config, load_all(src))


@pytest.fixture(scope="module")
def folders(tmp_path_factory, tiny_gguf):
    """An fp32 build of each layout: close enough to the reference to compare logits."""
    root = tmp_path_factory.mktemp("layouts")
    styles = {"views": {"kv_layout": "views"}, "shared": {"kv_layout": "shared"}, "plain": {"style": "plain"}}
    return {
        name: build_model(tiny_gguf, root / name, precision="fp32", **style).folder
        for name, style in styles.items()
    }


@pytest.mark.parametrize("layout", LAYOUTS)
def test_each_layout_matches_the_reference_through_prompts_replies_and_rewinds(folders, reference, layout):
    """Format 3 folders read the cache through views of one sequence-major buffer per layer; format 2
    folders (made before) keep GroupQueryAttention and its shared buffer; plain ones hand it back and
    forth. All give the fp32 reference's logits for a prompt, one-token steps, a multi-token step, and a new
    branch after a rewind."""
    files = load_model_files(folders[layout])
    model = OnnxModel(files, threads=1, max_len=64)
    assert type(model.kv_cache) is LAYOUTS[layout]
    if layout != "plain":
        assert files.manifest["format_version"] == (3 if layout == "views" else 2)
    reference.reset()
    for ids in [PROMPT, *[[t] for t in REPLY], [40, 41, 42]]:
        assert np.abs(model.forward(ids, keep=len(ids)) - reference.forward(ids)).max() < 1e-3
    model.rewind(len(PROMPT) + 2)
    reference.reset()
    reference.forward(PROMPT + REPLY[:2])
    for ids in ([300, 301], [302]):
        assert np.abs(model.forward(ids, keep=len(ids)) - reference.forward(ids)).max() < 1e-3
    assert model.length == len(PROMPT) + 5


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_cache_put_aside_and_brought_back_continues_as_if_nothing_happened_between(folders, layout):
    """What the engine host does when another client's request runs between two window turns: save the
    window's cache, use the cache for a longer conversation, restore it, continue; the logits are those of
    the run that was never interrupted."""
    model = OnnxModel(load_model_files(folders[layout]), threads=1, max_len=96)
    later = ([22], [23, 24, 25])
    model.forward(PROMPT)
    model.forward(REPLY)
    want = [model.forward(ids, keep=len(ids)).copy() for ids in later]  # forward reuses its logits buffer
    model.reset()
    model.forward(PROMPT)
    model.forward(REPLY)
    saved = model.save_cache()
    model.reset()
    model.forward(list(range(260, 300)))  # another conversation, longer: it overwrites every saved row
    model.forward([7])
    model.restore_cache(saved)
    assert model.tokens == PROMPT + REPLY
    for ids, logits in zip(later, want, strict=True):
        assert np.array_equal(model.forward(ids, keep=len(ids)), logits)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_state_of_another_shape_is_refused_and_the_cache_is_left_as_it_was(folders, layout):
    """A state saved by a model with a smaller cache (or one cut short) does not fit: restoring it is a
    clear error, and the conversation in the cache goes on as if it had not been tried."""
    model = OnnxModel(load_model_files(folders[layout]), threads=1, max_len=64)
    model.forward(PROMPT)
    want = model.forward([22]).copy()
    model.rewind(len(PROMPT))
    saved = model.save_cache()
    some = next(iter(saved.arrays))
    for bad in (
        {**saved.arrays, some: _cut(saved.arrays[some])},  # one array a position short
        {k: v for k, v in saved.arrays.items() if k != some},  # one array missing
    ):
        with pytest.raises(CacheShapeError, match=rf"^KV cache: the restored state('s| has no) {some}"):
            model.restore_cache(type(saved)(list(saved.tokens), bad))
    assert model.tokens == PROMPT
    assert np.array_equal(model.forward([22]), want)


def _cut(array):
    """The array one position shorter, in whichever layout it is."""
    if isinstance(array, np.ndarray):
        return array[:-1] if array.ndim == 3 else array[:, :, :-1]
    return ort.OrtValue.ortvalue_from_numpy(np.ascontiguousarray(array.numpy()[:, :, :-1]))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_pass_past_the_end_of_the_cache_is_refused_before_anything_is_written(folders, layout):
    model = OnnxModel(load_model_files(folders[layout]), threads=1, max_len=24)
    model.forward(PROMPT)  # 20 of 24
    want = model.forward([22]).copy()
    model.rewind(len(PROMPT))
    with pytest.raises(ContextFullError, match="needs 25 tokens but the context holds 24"):
        model.forward([1, 2, 3, 4, 5])
    assert model.tokens == PROMPT
    assert np.array_equal(model.forward([22]), want)


def test_a_views_cache_never_binds_rows_outside_its_buffers(folders):
    """Called on its own (not through ``forward``), the cache still refuses rows its buffers do not have:
    the graph would write them into whatever memory follows."""
    session = ort.InferenceSession(str(folders["views"] / "model.onnx"))
    files = load_model_files(folders["views"])
    cache = ViewsKVCache(files.num_layers, files.num_kv_heads, files.head_dim, 8, np.float32, ort)
    cache.bind(session.io_binding(), 6, 2)
    with pytest.raises(ContextFullError):
        cache.bind(session.io_binding(), 6, 3)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_folder_whose_manifest_and_graphs_disagree_on_the_cache_fails_on_load_in_one_line(
    tmp_path, folders, layout
):
    folder = tmp_path / layout
    shutil.copytree(folders[layout], folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["config"]["num_kv_heads"] += 1
    (folder / "manifest.json").write_text(json.dumps(manifest))
    graph_input = "past_key_values" if layout != "views" else "kv_cache"
    with pytest.raises(
        ModelError, match=rf"^{layout}: KV cache: the graph's {graph_input}\.0\.key has shape"
    ) as caught:
        OnnxModel(load_model_files(folder), threads=1, max_len=32)
    assert "\n" not in str(caught.value)


def test_the_cache_views_bind_alike_through_the_public_iobinding_api(tiny_model_dir):
    """Where ONNX Runtime lacks the binding object the fast path uses, the public methods bind the same views."""
    fast = OnnxModel(load_model_files(tiny_model_dir), threads=1, max_len=64)
    public = OnnxModel(load_model_files(tiny_model_dir), threads=1, max_len=64)
    public.kv_cache._device = None
    for ids in (PROMPT, [7], [8, 9, 10]):
        assert np.array_equal(fast.forward(ids, keep=len(ids)), public.forward(ids, keep=len(ids)))
    assert fast.length == public.length == len(PROMPT) + 4


# -- plain graphs hand the cache back: one the test writes shows what the cache keeps ---------------------------
KV, D, VOCAB = 2, 4, 10


def _echo_graph(appends: bool) -> ort.InferenceSession:
    """A one-layer plain graph whose new keys and values are the token ids themselves, so the cache shows
    which positions it holds. ``appends=False`` forgets the past (a broken export)."""
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"])
    mask = helper.make_tensor_value_info("attention_mask", TensorProto.INT64, [1, "total"])
    past = [
        helper.make_tensor_value_info(f"past_key_values.0.{k}", TensorProto.FLOAT, [1, KV, "past", D])
        for k in ("key", "value")
    ]
    outs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, "seq", VOCAB])] + [
        helper.make_tensor_value_info(f"present.0.{k}", TensorProto.FLOAT, [1, KV, "total", D])
        for k in ("key", "value")
    ]
    consts = [
        helper.make_tensor("axes", TensorProto.INT64, [2], [1, 3]),
        helper.make_tensor("kv_shape", TensorProto.INT64, [4], [1, KV, 1, D]),
        helper.make_tensor("logit_axes", TensorProto.INT64, [1], [2]),
        helper.make_tensor("logit_shape", TensorProto.INT64, [3], [1, 1, VOCAB]),
    ]
    nodes = [
        helper.make_node("Cast", ["input_ids"], ["f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["f", "axes"], ["f4"]),  # [1, 1, seq, 1]
        helper.make_node("Expand", ["f4", "kv_shape"], ["new"]),  # [1, kv, seq, d]
        helper.make_node("Unsqueeze", ["f", "logit_axes"], ["f3"]),
        helper.make_node("Expand", ["f3", "logit_shape"], ["logits"]),  # [1, seq, vocab]
        helper.make_node("ReduceSum", ["attention_mask"], ["unused"], keepdims=0),
    ]
    for k in ("key", "value"):
        if appends:
            nodes.append(
                helper.make_node("Concat", [f"past_key_values.0.{k}", "new"], [f"present.0.{k}"], axis=2)
            )
        else:
            nodes.append(helper.make_node("Identity", ["new"], [f"present.0.{k}"]))
    graph = helper.make_graph(nodes, "echo", [ids, mask, *past], outs, initializer=consts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _run(session, cache, past, ids):
    b = session.io_binding()
    b.bind_cpu_input("input_ids", np.array([ids], np.int64))
    b.bind_cpu_input("attention_mask", np.ones((1, past + len(ids)), np.int64))
    cache.bind(b, past, len(ids))
    names = [o.name for o in session.get_outputs()]
    for name in names:
        b.bind_output(name, "cpu")
    session.run_with_iobinding(b)
    cache.collect(dict(zip(names, b.get_outputs(), strict=True)), past, len(ids))


def _positions(cache):
    """The token ids the plain cache holds, position by position (key of head 0, first element)."""
    return [int(x) for x in cache.past["0.key"].numpy()[0, 0, :, 0]]


def test_a_plain_cache_keeps_what_the_graph_hands_back_and_rewinds_to_a_prefix():
    session = _echo_graph(appends=True)
    cache = PlainKVCache(1, KV, D, 16, np.float32, ort)
    cache.check_graph(session)
    _run(session, cache, 0, [3, 4, 5])
    _run(session, cache, 3, [6])
    assert _positions(cache) == [3, 4, 5, 6]
    saved = cache.save(4)
    cache.rewind(2)
    assert _positions(cache) == [3, 4]
    _run(session, cache, 2, [9])
    assert _positions(cache) == [3, 4, 9]
    cache.restore(saved, 4)
    assert _positions(cache) == [3, 4, 5, 6]
    cache.rewind(0)
    assert cache.past == {}


def test_a_plain_graph_that_hands_back_the_wrong_length_is_a_clear_error():
    session = _echo_graph(appends=False)
    cache = PlainKVCache(1, KV, D, 16, np.float32, ort)
    _run(session, cache, 0, [3, 4, 5])  # nothing cached yet: the new positions are all there is
    with pytest.raises(
        CacheShapeError,
        match=r"^KV cache: the graph's present\.0\.key has shape \[1, 2, 1, 4\], the cache needs \[1, 2, 4, 4\]$",
    ):
        _run(session, cache, 3, [6])
    assert _positions(cache) == [3, 4, 5]  # the cache still holds what it had


def test_a_graph_without_the_cache_inputs_a_layout_needs_is_refused():
    session = _echo_graph(appends=True)
    with pytest.raises(CacheShapeError, match=r"the graph has no past_key_values\.1\.key"):
        PlainKVCache(2, KV, D, 16, np.float32, ort).check_graph(session)
    with pytest.raises(
        CacheShapeError,
        match=r"the graph's past_key_values\.0\.key has shape \[1, 2, \?, 4\], the cache needs \[\?, 3, \?, 4\]",
    ):
        PlainKVCache(1, KV + 1, D, 16, np.float32, ort).check_graph(session)
    with pytest.raises(CacheShapeError, match=r"the graph has no kv_cache\.0\.key"):
        ViewsKVCache(1, KV, D, 16, np.float32, ort).check_graph(session)
