"""Streaming generation on tiny models built by the builder, checked against the numpy reference."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from qwen_desktop.convert.builder import open_source
from qwen_desktop.convert.reference import ReferenceModel
from qwen_desktop.convert.weights import load_all
from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.generate import (
    GREEDY,
    Finished,
    SamplingParams,
    TextPiece,
    common_prefix,
    find_draft,
    stream_generate,
)


def run(engine, prompt_ids, params=GREEDY, stop_ids=(), cancel=None, prompt_lookup=False, on_piece=None):
    tokens, text, finished = [], [], None
    for ev in stream_generate(
        engine.model, engine.tokenizer, prompt_ids, params, stop_ids, cancel, prompt_lookup
    ):
        if isinstance(ev, Finished):
            finished = ev
        else:
            if ev.token >= 0:
                tokens.append(ev.token)
            text.append(ev.text)
            if on_piece:
                on_piece(len(tokens))
    return tokens, "".join(text), finished


@pytest.fixture(scope="module")
def fp32_engine(tiny_fp32_dir):
    return ChatEngine(tiny_fp32_dir, threads=1)


@pytest.fixture(scope="module")
def reference(tiny_gguf):
    src = open_source(tiny_gguf)
    return ReferenceModel(src.config, load_all(src))


PROMPT = [5, 17, 100, 3, 250, 7, 9, 42]
GREEDY_NO_PENALTY = SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=40)


def test_greedy_output_equals_the_reference_greedy_continuation(fp32_engine, reference):
    fp32_engine.model.reset()
    got, _, finished = run(
        fp32_engine, PROMPT, SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=24)
    )
    assert got == reference.greedy(PROMPT, 24)
    assert finished.reason == "length" and finished.stats.generated_tokens == 24


def test_plain_graph_runs_in_the_same_engine_with_the_same_tokens(tiny_plain_dir, reference):
    engine = ChatEngine(tiny_plain_dir, threads=1)
    got, _, _ = run(engine, PROMPT, SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=16))
    assert got == reference.greedy(PROMPT, 16)
    # prefix reuse and rewind work for the plain cache too
    got2, _, fin = run(
        engine, [*PROMPT[:5], 77, 78], SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=8)
    )
    assert fin.stats.reused_tokens == 5
    assert got2 == reference.greedy([*PROMPT[:5], 77, 78], 8)


def test_seeded_sampling_repeats_and_seeds_differ(tiny_model_dir):
    engine = ChatEngine(tiny_model_dir, threads=1)
    params = SamplingParams(temperature=1.0, top_p=0.95, top_k=50, seed=1234, max_tokens=20)
    a, _, _ = run(engine, PROMPT, params)
    engine.model.reset()
    b, _, _ = run(engine, PROMPT, params)
    engine.model.reset()
    c, _, _ = run(
        engine, PROMPT, SamplingParams(temperature=1.0, top_p=0.95, top_k=50, seed=99, max_tokens=20)
    )
    assert a == b
    assert a != c


def test_sampling_with_prompt_lookup_repeats_with_a_seed_and_keeps_drafts(fp32_engine):
    """The app samples (temperature 0.7) with prompt lookup on: drafts are checked against the sampler,
    and a seed still makes the answer repeatable."""
    params = SamplingParams(temperature=0.7, top_p=0.8, top_k=20, seed=42, max_tokens=40)
    answers = []
    for _ in range(2):
        fp32_engine.model.reset()
        got, _, fin = run(fp32_engine, PROMPT * 4, params, prompt_lookup=None)
        answers.append(got)
        assert fin.stats.drafted_tokens > 0
    assert answers[0] == answers[1] and len(answers[0]) == 40
    # With one candidate per step the sampler must keep exactly the drafts greedy would keep.
    one = SamplingParams(temperature=0.7, top_k=1, seed=1, repetition_penalty=1.0, max_tokens=40)
    fp32_engine.model.reset()
    plain, _, _ = run(fp32_engine, PROMPT * 4, GREEDY_NO_PENALTY, prompt_lookup=False)
    fp32_engine.model.reset()
    sampled, _, fin = run(fp32_engine, PROMPT * 4, one, prompt_lookup=True)
    assert sampled == plain
    assert fin.stats.accepted_tokens > 0


def test_stop_token_ends_the_stream_without_emitting_it(fp32_engine, reference):
    want = reference.greedy(PROMPT, 10)
    fp32_engine.model.reset()
    got, _, finished = run(
        fp32_engine, PROMPT, SamplingParams(temperature=0.0, repetition_penalty=1.0), stop_ids=(want[4],)
    )
    assert finished.reason == "stop"
    assert got == want[: want.index(want[4])]


def test_cancel_is_honoured_within_one_decode_step(fp32_engine):
    cancel = threading.Event()
    fp32_engine.model.reset()

    def on_piece(n):
        if n == 3:
            cancel.set()

    got, _, finished = run(
        fp32_engine, PROMPT, SamplingParams(temperature=0.0, max_tokens=200), cancel=cancel, on_piece=on_piece
    )
    assert finished.reason == "cancelled"
    assert len(got) == 3


def test_cancel_before_start_generates_nothing(fp32_engine):
    cancel = threading.Event()
    cancel.set()
    fp32_engine.model.reset()
    got, _, finished = run(fp32_engine, PROMPT, cancel=cancel)
    assert got == [] and finished.reason == "cancelled"


def test_prefix_reuse_prefills_only_new_tokens_and_matches_a_cold_run(fp32_engine, reference):
    params = SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=6)
    fp32_engine.model.reset()
    run(fp32_engine, PROMPT, params)
    longer = [*PROMPT, 60, 61, 62]
    warm, _, fin = run(fp32_engine, longer, params)
    assert fin.stats.reused_tokens == len(PROMPT)
    assert fin.stats.prefill_tokens == 3
    assert warm == reference.greedy(longer, 6)


def _answer(engine, messages, params):
    text, finished = [], None
    for ev in engine.chat(messages, params):
        if isinstance(ev, Finished):
            finished = ev
        else:
            text.append(ev.text)
    return "".join(text), finished


HISTORY = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi there"},
    {"role": "assistant", "content": "Hello! How can I help?"},
]


def test_a_draft_read_ahead_while_typing_leaves_only_the_changed_tail_to_prefill(fp32_engine):
    params = SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=8)
    final = [*HISTORY, {"role": "user", "content": "What is the capital of France?"}]
    draft = [*HISTORY, {"role": "user", "content": "What is the capi"}]
    fp32_engine.model.reset()
    cold_text, cold = _answer(fp32_engine, final, params)
    assert cold.stats.reused_tokens == 0
    fp32_engine.model.reset()
    draft_ids = fp32_engine.plan(draft, params.max_tokens).prompt
    final_ids = fp32_engine.plan(final, params.max_tokens).prompt
    assert fp32_engine.read_ahead(draft, params.max_tokens) == len(draft_ids)
    assert fp32_engine.model.tokens == draft_ids
    text, warm = _answer(fp32_engine, final, params)
    assert text == cold_text, "a cache read ahead must not change the answer"
    shared = common_prefix(draft_ids, final_ids)
    assert warm.stats.reused_tokens == shared
    assert warm.stats.prefill_tokens == len(final_ids) - shared < len(final_ids) // 2


def test_reading_an_unchanged_draft_ahead_again_runs_nothing(fp32_engine, monkeypatch):
    draft = [*HISTORY, {"role": "user", "content": "What is the capi"}]
    fp32_engine.model.reset()
    held = fp32_engine.read_ahead(draft, 8)
    passes = []
    monkeypatch.setattr(fp32_engine.model, "forward", lambda ids, keep=1: passes.append(ids))
    assert fp32_engine.read_ahead(draft, 8) == held
    assert passes == []


def test_reading_a_draft_ahead_stops_when_cancelled(fp32_engine):
    cancel = threading.Event()
    cancel.set()
    fp32_engine.model.reset()
    draft = [*HISTORY, {"role": "user", "content": "What is"}]
    assert fp32_engine.read_ahead(draft, 8, cancel) == 0
    assert fp32_engine.model.tokens == []


def test_rewind_after_an_edit(fp32_engine, reference):
    params = SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=6)
    fp32_engine.model.reset()
    run(fp32_engine, [*PROMPT, 60, 61, 62, 63], params)
    edited = [*PROMPT[:4], 90, 91]
    got, _, fin = run(fp32_engine, edited, params)
    assert fin.stats.reused_tokens == 4
    assert got == reference.greedy(edited, 6)


def test_prompt_lookup_gives_exactly_the_greedy_output(fp32_engine):
    repetitive = PROMPT * 4
    params = SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=40)
    fp32_engine.model.reset()
    plain, _, _ = run(fp32_engine, repetitive, params, prompt_lookup=False)
    fp32_engine.model.reset()
    looked, _, fin = run(fp32_engine, repetitive, params, prompt_lookup=True)
    assert looked == plain
    assert fin.stats.drafted_tokens > 0


def test_prompt_lookup_with_repetition_penalty_matches_greedy_too(fp32_engine):
    params = SamplingParams(temperature=0.0, repetition_penalty=1.3, max_tokens=30)
    fp32_engine.model.reset()
    plain, _, _ = run(fp32_engine, PROMPT * 3, params, prompt_lookup=False)
    fp32_engine.model.reset()
    looked, _, _ = run(fp32_engine, PROMPT * 3, params, prompt_lookup=True)
    assert looked == plain


def test_prompt_lookup_wastes_fewer_drafts_than_drafting_every_step_and_still_matches_greedy(
    fp32_engine, monkeypatch
):
    """A draft the model rejects costs a wider pass for nothing, so the generator drafts only after a
    2-token match, starts drafts short, and pauses after a miss; what it writes stays plain greedy."""
    import qwen_desktop.engine.generate as generate

    varied = [5, 17, 100, 3, 250, 7, 9, 42, 17, 100, 8, 250, 7, 11, 42, 17, 3, 250, 9]
    params = SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=48)
    fp32_engine.model.reset()
    plain, _, _ = run(fp32_engine, varied, params, prompt_lookup=False)
    fp32_engine.model.reset()
    careful, _, fin = run(fp32_engine, varied, params, prompt_lookup=True)
    monkeypatch.setattr(generate, "LOOKUP_MAX_PAUSE", 0)  # draft at every step, on any 1-token match
    monkeypatch.setattr(generate, "LOOKUP_MIN_NGRAM", 1)
    fp32_engine.model.reset()
    eager, _, eager_fin = run(fp32_engine, varied, params, prompt_lookup=True)
    assert careful == plain and eager == plain
    assert fin.stats.accepted_tokens > 0
    wasted = fin.stats.drafted_tokens - fin.stats.accepted_tokens
    eager_wasted = eager_fin.stats.drafted_tokens - eager_fin.stats.accepted_tokens
    assert wasted < eager_wasted


def test_find_draft_proposes_what_followed_the_last_ngram():
    seq = [1, 2, 3, 4, 5, 9, 1, 2, 3]
    assert find_draft(seq, 3) == [4, 5, 9]
    assert find_draft([1, 2, 3], 3) == []
    assert find_draft([7, 8, 7], 2) == [8, 7]


def test_max_tokens_and_full_context_end_with_length(tiny_model_dir):
    engine = ChatEngine(tiny_model_dir, threads=1, context_limit=64)
    got, _, fin = run(engine, PROMPT, SamplingParams(temperature=0.0, max_tokens=1000))
    assert fin.reason == "length"
    assert len(PROMPT) + len(got) <= 64 + 1


def test_threads_change_really_changes_the_session(tiny_model_dir):
    engine = ChatEngine(tiny_model_dir, threads=2)
    assert engine.model.session.get_session_options().intra_op_num_threads == 2
    engine.reconfigure(threads=1)
    assert engine.threads == 1
    assert engine.model.session.get_session_options().intra_op_num_threads == 1
    _text, fin = engine.complete("hello")
    assert fin.reason in ("stop", "length")


def test_missing_model_folder_is_a_clear_error(tmp_path):
    from qwen_desktop.engine.errors import ModelError

    with pytest.raises(ModelError, match="does not exist"):
        ChatEngine(tmp_path / "gone")


def test_corrupt_graph_is_a_clear_error(tmp_path, tiny_model_dir):
    import shutil

    from qwen_desktop.engine.errors import ModelError

    folder = tmp_path / "broken"
    shutil.copytree(tiny_model_dir, folder)
    data = (folder / "model.onnx").read_bytes()
    (folder / "model.onnx").write_bytes(data[: len(data) // 3])
    with pytest.raises(ModelError, match="cannot be loaded"):
        ChatEngine(folder)


def test_damaged_tokenizer_is_a_clear_error_and_leaves_no_loader_running(tmp_path, tiny_model_dir):
    """The tokenizer is read while the sessions build on their own threads: a bad one still fails the
    load with a clear message, and only once every session thread has finished."""
    import shutil
    import threading

    from qwen_desktop.engine.errors import ModelError

    folder = tmp_path / "badtok"
    shutil.copytree(tiny_model_dir, folder)
    text = (folder / "tokenizer.json").read_text(encoding="utf-8")
    (folder / "tokenizer.json").write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(ModelError, match=r"tokenizer\.json cannot be read"):
        ChatEngine(folder, cache_root=tmp_path / "cache")
    assert not [t for t in threading.enumerate() if t.name.startswith("qwen-")]


def test_stats_are_consistent(fp32_engine):
    fp32_engine.model.reset()
    _, _, fin = run(
        fp32_engine, PROMPT, SamplingParams(temperature=0.0, max_tokens=10, repetition_penalty=1.0)
    )
    s = fin.stats
    assert s.prompt_tokens == len(PROMPT) and s.generated_tokens == 10
    assert 0 < s.ttft <= s.total and s.decode_tps > 0 and s.prefill_tps > 0
    assert isinstance(np.float64(s.ttft), np.floating)


def test_text_pieces_concatenate_to_the_decoded_answer(fp32_engine):
    fp32_engine.model.reset()
    tokens, text, _ = run(fp32_engine, PROMPT, SamplingParams(temperature=0.0, max_tokens=30))
    assert text == fp32_engine.tokenizer.decode(tokens)
    assert all(isinstance(t, int) for t in tokens)
    assert TextPiece("a", 1).text == "a"


def test_optimized_graph_cache_is_made_once_reused_and_rebuilt_when_damaged(
    tmp_path, tiny_model_dir, reference
):
    from qwen_desktop.engine.ort_cache import optimized_cache_path

    cache = tmp_path / "ort"
    params = SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=12)
    first = ChatEngine(tiny_model_dir, threads=1, cache_root=cache, warm_up=False)
    cached = optimized_cache_path(first.files.graph, cache)
    assert cached.is_file() and (cached.parent / "model.opt.onnx.data").is_file()
    want, _, _ = run(first, PROMPT, params)
    second = ChatEngine(tiny_model_dir, threads=1, cache_root=cache, warm_up=False)
    assert run(second, PROMPT, params)[0] == want
    cached.write_bytes(b"garbage")  # a damaged cache is replaced, not fatal
    third = ChatEngine(tiny_model_dir, threads=1, cache_root=cache, warm_up=False)
    assert run(third, PROMPT, params)[0] == want
    assert cached.stat().st_size > 100
