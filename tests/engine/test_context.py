"""The context window is counted in tokens: the system prompt and newest turns stay, nothing overflows."""

from __future__ import annotations

import pytest

from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.context import TRIM_MARK
from qwen_desktop.engine.generate import Finished, SamplingParams


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
    # the most turns that fit: one more would not
    one_more = engine.context.encode([msgs[0], *msgs[plan.dropped :]])
    assert len(one_more) > 256 - 64


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
