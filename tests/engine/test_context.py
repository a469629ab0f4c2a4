"""The context window is counted in tokens: the system prompt and newest turns stay, nothing overflows."""

from __future__ import annotations

import pytest

from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.context import TRIM_MARK
from qwen_desktop.engine.generate import Finished, SamplingParams, TextPiece


@pytest.fixture(scope="module")
def engine(tiny_model_dir):
    return ChatEngine(tiny_model_dir, threads=1, context_limit=256)


def conversation(turns):
    msgs = [{"role": "system", "content": "You are terse."}]
    for i in range(turns):
        msgs.append({"role": "user", "content": f"Question number {i}: tell me about item {i} please."})
        msgs.append(
            {"role": "assistant", "content": f"Item {i} is fine and has nothing special about it at all."}
        )
    msgs.append({"role": "user", "content": "And the last question?"})
    return msgs


def test_short_conversation_is_kept_whole(engine):
    plan = engine.plan(conversation(1), max_tokens=32)
    assert plan.dropped == 0 and not plan.trimmed and plan.notice() is None
    assert plan.used + plan.reply_room == plan.limit
    assert plan.system_tokens > 0 and plan.history_tokens > 0


def test_long_conversation_keeps_system_and_newest_turns(engine):
    msgs = conversation(30)
    plan = engine.plan(msgs, max_tokens=64)
    assert plan.dropped > 0
    assert plan.messages[0] == msgs[0]  # the system prompt survives
    assert plan.messages[-1] == msgs[-1]  # so does the newest question
    assert plan.messages[1:] == msgs[1 + plan.dropped :]
    assert plan.used <= 256 - 64
    assert "older messages left out" in plan.notice()
    # old turns leave in steps of a quarter of the budget, never more than one step beyond what was needed
    budget = 256 - 64
    minimal = next(
        d for d in range(len(msgs) - 1) if len(engine.context.encode([msgs[0], *msgs[1 + d :]])) <= budget
    )
    assert minimal <= plan.dropped
    extra = engine.context.encode([msgs[0], *msgs[1 + minimal : 1 + plan.dropped]])
    longest = max(len(engine.context.encode([msgs[0], m])) for m in msgs[1:])
    # beyond the step: at most the message that crosses it
    assert len(extra) - len(engine.context.encode(msgs[:1])) <= budget // 4 + 2 * longest


def test_a_growing_chat_keeps_its_start_so_the_cache_is_reused(tiny_model_dir):
    """Once the context is full, a new turn must not move the start of the prompt: that would make the whole
    history be read again before every answer. Old turns leave in steps, so most turns reuse the cache."""
    engine = ChatEngine(tiny_model_dir, threads=1, context_limit=512)
    params = SamplingParams(temperature=0.0, max_tokens=4, repetition_penalty=1.0)
    msgs = [{"role": "system", "content": "You are terse."}]
    full_reads = trimmed_turns = 0
    for turn in range(80):
        msgs.append({"role": "user", "content": f"q{turn}"})
        events = list(engine.chat(msgs, params))
        finished = events[-1]
        assert isinstance(finished, Finished)
        answer = "".join(e.text for e in events if isinstance(e, TextPiece))
        msgs.append({"role": "assistant", "content": answer})
        plan = engine.last_plan
        assert plan.used <= 512 - plan.reserved
        if plan.dropped:
            trimmed_turns += 1
            if finished.stats.reused_tokens < plan.used // 2:
                full_reads += 1
    assert trimmed_turns > 40
    # a turn is ~25 tokens and a step 112: the start moves about every 4-5 turns, not every turn
    assert 1 <= full_reads <= trimmed_turns // 3


def test_token_count_uses_the_model_tokenizer(engine):
    msgs = [{"role": "user", "content": "你好，世界！" * 3}]
    plan = engine.plan(msgs, max_tokens=32)
    assert plan.used == len(engine.context.encode(msgs))
    assert plan.used != len("".join(m["content"] for m in msgs))


def test_a_message_longer_than_the_context_is_trimmed_not_fatal(engine):
    huge = "word " * 2000 + "What is the answer?"
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": huge}]
    plan = engine.plan(msgs, max_tokens=32)
    assert plan.trimmed
    assert plan.used <= 256 - 32
    content = plan.messages[-1]["content"]
    assert TRIM_MARK in content and content.endswith("answer?")
    assert "shortened" in plan.notice()
    events = list(engine.chat(msgs, SamplingParams(temperature=0.0, max_tokens=32)))
    assert isinstance(events[-1], Finished) and events[-1].reason in ("stop", "length")


def test_reply_room_never_exceeds_half_the_context(engine):
    plan = engine.plan(conversation(2), max_tokens=100_000)
    assert plan.used + plan.reply_room == 256
    assert plan.reply_room >= 128


def test_generation_never_exceeds_the_limit(engine):
    msgs = conversation(10)
    for _ev in engine.chat(msgs, SamplingParams(temperature=0.0, max_tokens=500)):
        pass
    assert engine.model.length <= 256
