"""The two-graph session: prompts run through the int8 prefill graph, replies through the 4-bit graph,
both on one KV cache."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from qwen_desktop.convert.builder import build_model, open_source
from qwen_desktop.convert.reference import ReferenceModel
from qwen_desktop.convert.weights import load_all
from qwen_desktop.engine.int8_check import int8_products_clip
from qwen_desktop.engine.model_files import load_model_files
from qwen_desktop.engine.session import PREFILL_MIN_TOKENS, SHRINK_MIN_TOKENS, OnnxModel

PROMPT = [5, 17, 100, 3, 250, 7, 9, 42, 64, 128, 11, 12, 13, 14, 15, 16, 200, 201, 202, 203]
REPLY = [21, 22, 23, 24, 25]


def _spy(model):
    """Record (graph, tokens) for every run; the real sessions still do the work."""
    calls = []
    for tag, session in (("decode", model.session), ("prefill", model.prefill_session)):
        real = session.run_with_iobinding

        def run(binding, *args, _tag=tag, _real=real, **kwargs):
            calls.append((_tag, model._last_len))
            return _real(binding, *args, **kwargs)

        session.run_with_iobinding = run
    real_fast = model._forward_fast

    def forward_fast(ids, *rest):
        model._last_len = len(ids)
        return real_fast(ids, *rest)

    model._forward_fast = forward_fast
    return calls


@pytest.fixture(scope="module")
def reference(tiny_gguf):
    src = open_source(tiny_gguf)
    return ReferenceModel(src.config, load_all(src))


@pytest.fixture()
def without_prefill(tmp_path, tiny_model_dir):
    folder = tmp_path / "no-prefill"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "prefill.onnx").unlink()
    return folder


@pytest.mark.usefixtures("int8_prefill_on")
def test_prompts_use_the_prefill_graph_and_replies_the_decode_graph(tiny_model_dir):
    model = OnnxModel(load_model_files(tiny_model_dir), threads=1, max_len=128)
    assert model.prefill_session is not None
    calls = _spy(model)
    model.forward(PROMPT)
    for t in REPLY:
        model.forward([t])
    model.forward(list(range(30, 30 + PREFILL_MIN_TOKENS)))  # a follow-up question after the reply
    model.forward(list(range(60, 60 + PREFILL_MIN_TOKENS - 1)))  # a short one (and prompt-lookup drafts)
    assert calls == [
        ("prefill", len(PROMPT)),
        *[("decode", 1)] * len(REPLY),
        ("prefill", PREFILL_MIN_TOKENS),
        ("decode", PREFILL_MIN_TOKENS - 1),
    ]
    assert model.tokens[: len(PROMPT) + len(REPLY)] == PROMPT + REPLY


def test_the_decode_graph_continues_from_the_cache_the_prefill_graph_wrote(tmp_path, tiny_gguf, reference):
    """An int8 build (close enough to fp32 to compare): the reply logits after a two-graph prefill match
    the fp32 reference; a cache the decode graph misread (layout, positions) would be far off."""
    folder = build_model(tiny_gguf, tmp_path / "int8", precision="int8").folder
    reference.reset()
    want = [reference.forward(PROMPT)[-1]] + [reference.forward([t])[-1] for t in REPLY]
    model = OnnxModel(load_model_files(folder), threads=1, max_len=128)
    if int8_products_clip():
        # here the int8 prefill graph would be 0.9-1.8 off (int8_check.py): it stays closed, and the prompt
        # runs on the decode graph, as close to the reference as on any other CPU
        assert model.prefill_session is None and "clips" in (model.prefill_skipped or "")
        got = [model.forward(PROMPT)[-1].copy()] + [model.forward([t])[-1].copy() for t in REPLY]
        errors = [float(np.abs(g - w).max()) for g, w in zip(got, want, strict=True)]
        assert max(errors) < 0.5, errors
        pytest.skip("this CPU's int8 kernel clips: the prefill graph's cache is not used here")
    assert model.prefill_session is not None
    # forward() returns a view of a reused output buffer: copy what is kept
    got = [model.forward(PROMPT)[-1].copy()] + [model.forward([t])[-1].copy() for t in REPLY]
    errors = [float(np.abs(g - w).max()) for g, w in zip(got, want, strict=True)]
    assert max(errors) < 0.5, errors
    model.reset()  # the same replies on a cache that holds another prompt are far off: the test can fail
    model.forward(PROMPT[::-1])
    stale = [float(np.abs(model.forward([t])[-1] - w).max()) for t, w in zip(REPLY, want[1:], strict=True)]
    assert min(stale) > 2 * max(errors), (stale, errors)


def test_a_deleted_prefill_graph_only_costs_speed(without_prefill):
    files = load_model_files(without_prefill)
    assert files.prefill_graph is None
    model = OnnxModel(files, threads=1, max_len=64)
    assert model.prefill_session is None
    assert model.forward(PROMPT).shape == (1, files.vocab_size)


def test_a_prompt_token_does_not_depend_on_the_tokens_that_share_its_chunk(tiny_model_dir):
    """Activations are quantized per token, so a prompt prefilled in one pass or in two (prefix reuse,
    chunked prefill) gives the same logits: regenerating at temperature 0 gives the same answer."""
    model = OnnxModel(load_model_files(tiny_model_dir), threads=1, max_len=128)
    whole = model.forward(PROMPT)[-1].copy()
    model.reset()
    model.forward(PROMPT[:10])
    split = model.forward(PROMPT[10:])[-1]
    assert np.abs(whole - split).max() < 1e-3


@pytest.mark.usefixtures("int8_prefill_on")
def test_a_damaged_prefill_graph_is_a_clear_error_while_both_graphs_load_side_by_side(
    tmp_path, tiny_model_dir
):
    from qwen_desktop.engine.errors import ModelError

    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    data = (folder / "prefill.onnx").read_bytes()
    (folder / "prefill.onnx").write_bytes(data[: len(data) // 3])  # an interrupted copy
    for cache in (None, tmp_path / "ort"):
        with pytest.raises(ModelError, match="cannot be loaded"):
            OnnxModel(load_model_files(folder), threads=1, max_len=32, cache_root=cache)
    # the good graphs' optimized copies were made and kept; nothing half-written is left behind
    assert [p.name.endswith(".partial") for p in (tmp_path / "ort").iterdir()] == [False, False]


def test_one_head_graph_serves_both_decoder_graphs(tmp_path, tiny_model_dir):
    from qwen_desktop.engine.errors import ModelError

    files = load_model_files(tiny_model_dir)
    assert files.head_graph is not None and files.prefill_graph is not None
    model = OnnxModel(files, threads=1, max_len=64)
    assert model.head_session is not None
    prompt = model.forward(PROMPT)[-1].copy()  # prefill graph -> head
    step = model.forward([int(np.argmax(prompt))])[-1]  # decode graph -> head
    assert prompt.shape == step.shape == (files.vocab_size,) and np.isfinite(step).all()
    folder = tmp_path / "m"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "head.onnx").unlink()
    with pytest.raises(ModelError, match=r"head\.onnx is missing"):
        load_model_files(folder)


@pytest.mark.usefixtures("int8_prefill_on")
def test_use_less_memory_runs_prompts_on_the_decode_graph_as_a_folder_without_prefill_graph_does(
    tiny_model_dir, without_prefill
):
    """ "Use less memory" leaves the prefill graph unloaded: prompts and replies give the logits of the
    decode graph alone (the folder with prefill.onnx deleted), and the prefill graph's file is never mapped."""
    lean = OnnxModel(load_model_files(tiny_model_dir), threads=1, max_len=64, prefill=False)
    assert lean.prefill_session is None and set(lean.graph_files) == {"decode", "head"}
    alone = OnnxModel(load_model_files(without_prefill), threads=1, max_len=64)
    for step in (PROMPT, *[[t] for t in REPLY]):
        np.testing.assert_array_equal(lean.forward(step), alone.forward(step))
    both = OnnxModel(load_model_files(tiny_model_dir), threads=1, max_len=64)
    assert "prefill" in both.graph_files
    lean.reset()
    # with the prefill graph loaded, a prompt's int8 logits are others: the option decides the graph
    assert not np.array_equal(lean.forward(PROMPT), both.forward(PROMPT))


@pytest.mark.parametrize("graphs", ["both", "decode only", "plain"])
def test_a_long_prompt_that_gives_its_arena_back_answers_as_before(
    tiny_model_dir, tiny_plain_dir, monkeypatch, graphs
):
    """A prompt of SHRINK_MIN_TOKENS or more runs with ONNX Runtime's arena shrinkage (its intermediates go
    back to the system when the run ends), in either style of model: every graph of a long run gets the
    shrinking run options and a decode step none; the prompt's logits, and the decode steps that follow from
    the cache it wrote, are the same as with the arena kept whole, and a second long prompt after it works."""
    import qwen_desktop.engine.session as session_module

    rng = np.random.default_rng(3)
    prompt = [int(t) for t in rng.integers(3, 200, SHRINK_MIN_TOKENS + 9)]
    folder = tiny_plain_dir if graphs == "plain" else tiny_model_dir

    def run() -> tuple[list[np.ndarray], list[tuple[int, bool]]]:
        model = OnnxModel(load_model_files(folder), threads=1, max_len=256, prefill=graphs == "both")
        assert model.files.style == ("plain" if graphs == "plain" else "fast")
        options: list[tuple[int, bool]] = []  # (new tokens, shrinking run options?) of every graph run
        sessions = [model.session, model.prefill_session, getattr(model, "head_session", None)]
        for session in filter(None, sessions):
            real = session.run_with_iobinding

            def spy(binding, run_options=None, _real=real):
                options.append((pending[-1], run_options is not None and run_options is model._shrink))
                return _real(binding, run_options)

            session.run_with_iobinding = spy
        pending = [len(prompt)]
        out = [model.forward(prompt)[-1].copy()]
        for token in (5, 9, 11):
            pending.append(1)
            out.append(model.forward([token])[-1].copy())
        pending.append(len(prompt))
        out.append(model.forward(prompt[::-1])[-1].copy())  # a second long run after the shrink
        return out, options

    shrunk, options = run()
    assert options and all(shrinks == (tokens >= SHRINK_MIN_TOKENS) for tokens, shrinks in options)
    assert {tokens for tokens, _ in options} == {1, len(prompt)}
    monkeypatch.setattr(session_module, "SHRINK_MIN_TOKENS", 10**9)
    kept, options = run()
    assert not any(shrinks for _, shrinks in options)
    for a, b in zip(shrunk, kept, strict=True):
        assert np.array_equal(a, b)
