"""Fuzzing the chat template renderer: generated templates (built from the constructs real and hostile
templates use) and arbitrary messages either render within the budget or raise TemplateError, a one-line
ModelError; nothing else escapes and nothing runs unbounded. tests/corpus/templates/ holds templates that
once got through, replayed every run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwen_desktop.convert.tiny import CHATML_TEMPLATE
from qwen_desktop.engine.chat_template import BASE_CHARS, CHARS_PER_MESSAGE_CHAR, TemplateError, render_chat

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "templates"
DEEP = int(os.environ.get("QWEN_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=DEEP or 150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=not DEEP,
    database=None,
)

numbers = st.sampled_from(["0", "1", "7", "100000", "4000000000", "-3", "10**6", "(9 ** 9)", "2.5"])
strings = st.sampled_from(["'a'", "'ab\\n'", "'%s'", "'{:>9}'", "'%*d'", "message['content']", "ns.s", "x"])
values = st.deferred(
    lambda: (
        numbers
        | strings
        | st.sampled_from(["messages", "range(1000)", "[1, 2, 3]", "ns", "loop.index"])
        | st.builds(
            lambda a, op, b: f"({a} {op} {b})",
            values,
            st.sampled_from(["+", "*", "~", "%", "**", "//"]),
            values,
        )
        | st.builds(
            lambda a, f, n: f"({a}|{f}({n}))",
            values,
            st.sampled_from(
                [
                    "center",
                    "indent",
                    "join",
                    "wordwrap",
                    "truncate",
                    "batch",
                    "format",
                ]
            ),
            numbers,
        )
        | st.builds(
            lambda a, m, n: f"{a}.{m}({n})",
            strings,
            st.sampled_from(["center", "ljust", "zfill", "format"]),
            numbers,
        )
        | st.builds(lambda a, b: f"({a}|replace('a', {b}))", values, values)
        | st.builds(lambda a: f"({a}|list|length)", values)
    )
)
blocks = st.deferred(
    lambda: (
        st.builds(lambda v: "{{ " + v + " }}", values)
        | st.builds(lambda v, b: "{% for x in " + v + " %}" + b + "{% endfor %}", values, blocks)
        | st.builds(lambda v, b: "{% if " + v + " %}" + b + "{% endif %}", values, blocks)
        | st.builds(lambda v: "{% set ns.s = " + v + " %}", values)
        | st.builds(lambda b: "{% macro f(n) %}" + b + "{{ f(n) }}{{ f(n) }}{% endmacro %}{{ f(1) }}", blocks)
        | st.builds(lambda a, b: a + b, blocks, blocks)
        | st.text(max_size=20)
        | st.just(CHATML_TEMPLATE)
    )
)
templates = st.builds(lambda b: "{% set ns = namespace(s='a') %}" + b, blocks) | st.text(max_size=200)

messages = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["system", "user", "assistant", "tool", "{{"]),
            "content": st.text(max_size=200),
        }
    ),
    max_size=6,
)


def check_render(template: str, msgs: list[dict[str, str]]) -> None:
    try:
        text = render_chat(template, msgs)
    except TemplateError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    chars = sum(len(m["content"]) + len(m["role"]) for m in msgs)
    assert len(text) <= BASE_CHARS + CHARS_PER_MESSAGE_CHAR * chars


@FUZZ
@given(template=templates, msgs=messages)
@pytest.mark.timeout(300)
def test_generated_templates_render_or_fail_cleanly(template, msgs):
    check_render(template, msgs)


@FUZZ
@given(msgs=messages)
@pytest.mark.timeout(300)
def test_chatml_renders_any_messages(msgs):
    text = render_chat(CHATML_TEMPLATE, msgs)
    for m in msgs:
        assert f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>" in text
    assert text.endswith("<|im_start|>assistant\n")


@pytest.mark.parametrize("case", sorted(p.name for p in CORPUS.glob("*.jinja")))
def test_template_corpus(case):
    with pytest.raises(TemplateError):
        render_chat((CORPUS / case).read_text(encoding="utf-8"), [{"role": "user", "content": "hi"}])
