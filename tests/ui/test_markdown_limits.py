"""Hostile Markdown renders within a bounded work and size, or falls back to plain escaped text that keeps
every character; the output is always inert (no raw HTML, no image, no unsafe link, no live bidi control).

Issue 25 defects 1 (deep nesting raised RecursionError) and 2 (quadratic link parsing), issue 22 defects 2
(an open fence at the end) and 3 (bidi controls). tests/corpus/markdown/ holds the inputs that once broke
the renderer, replayed every run; the fuzz test searches for new ones (QWEN_FUZZ_EXAMPLES for a longer run).
"""

from __future__ import annotations

import html
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qwen_desktop.ui.markdown_render import (
    BIDI_CONTROLS,
    MAX_CODE_BLOCKS,
    MAX_MARKDOWN_CHARS,
    MAX_NESTING,
    Rendered,
    html_budget,
    render_markdown,
    reveal_bidi,
)

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "markdown"
CASES = sorted(p for p in CORPUS.glob("*.md") if p.name != "README.md")
DEEP = int(os.environ.get("QWEN_FUZZ_EXAMPLES", "0"))
FUZZ = settings(
    max_examples=DEEP or 60,
    deadline=None,  # the machine is shared; a slow example is not a failure
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=not DEEP,
    database=None,
)
# Python steps (calls and lines) a render may take: normal Markdown takes up to ~130 per character, the
# quadratic inputs took tens of thousands per character before they were bounded ("[" * 8000: 7 s).
STEPS_PER_CHAR = 600
STEPS_FLOOR = 300_000
COUNTED = re.compile(r"[/\\](markdown|qwen_desktop)[/\\]")
ALLOWED_TAGS = {
    "a", "blockquote", "br", "code", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "li", "ol", "p",
    "pre", "span", "strong", "table", "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip
_TAG_RE = re.compile(r"</?([a-zA-Z][a-zA-Z0-9]*)")
_HREF_RE = re.compile(r'href="([^"]*)"')
_BIDI_ENTITY_RE = re.compile(
    r"&(?:#[xX]0*(?:200[ef]|202[a-e]|206[6-9]|61c)|#0*(?:8206|8207|82[34]\d|829[4-7]|1564)|lrm|rlm)", re.I
)


class TooMuchWork(BaseException):  # not an Exception: the renderer's own fallback must not catch it
    pass


def steps_of(render: Callable[[], Rendered], limit: int) -> tuple[Rendered, int]:
    """Run ``render`` counting the Python steps (calls and lines) of the Markdown parser and the renderer, a
    deterministic measure of work, unlike a timing; stop it with TooMuchWork as soon as it passes ``limit``.
    Pygments and the ``re`` module are left out: compiling a lexer's patterns happens once per language."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        if not COUNTED.search(frame.f_code.co_filename):
            return None
        count += 1
        if count > limit:
            raise TooMuchWork(f"more than {limit:,} steps")
        return trace

    previous = sys.gettrace()
    sys.settrace(trace)
    try:
        rendered = render()
    finally:
        sys.settrace(previous)
    return rendered, count


def assert_inert_and_bounded(text: str, rendered: Rendered) -> None:
    """What every render promises, whatever the text."""
    out = rendered.html
    assert len(out) <= html_budget(len(text)) + 1000
    assert not BIDI_CONTROLS & set(out), "bidi controls are shown as markers"
    assert not _BIDI_ENTITY_RE.search(out), "bidi controls written as entities too"
    assert {tag.lower() for tag in _TAG_RE.findall(out)} <= ALLOWED_TAGS, "raw HTML stays text, no <img>"
    for href in _HREF_RE.findall(out):
        assert re.match(r"(https?://|mailto:|copy:\d+$)", href, re.I), href
    if rendered.fallback is not None:
        # Nothing is lost: the plain text shows every character (escaped, bidi controls as markers).
        assert html.escape(reveal_bidi(text)).replace("\n", "<br>") in out


def render_counted(text: str) -> tuple[Rendered, int]:
    render_markdown("warm up: `a` [b](https://c.example)")  # the parser is built once per thread
    return steps_of(lambda: render_markdown(text), STEPS_FLOOR + STEPS_PER_CHAR * len(text))


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
def test_corpus_renders_bounded_and_inert(path):
    text = path.read_text(encoding="utf-8")
    rendered, _ = render_counted(text)
    assert_inert_and_bounded(text, rendered)


def test_the_corpus_covers_each_kind_of_limit():
    reasons = {p.name: render_markdown(p.read_text(encoding="utf-8")).fallback for p in CASES}
    assert reasons["nested-list-800.md"] == f"nested deeper than {MAX_NESTING} levels"
    assert reasons["fences-5000.md"] == f"more than {MAX_CODE_BLOCKS} code blocks"
    assert reasons["open-brackets-8000.md"] == "too costly to format"
    assert reasons["backtick-pairs-20000.md"] == "too costly to format"  # each "``" scanned to the end
    assert reasons["reference-expansion.md"] == "too costly to format"  # 25 MB of HTML from 30 KB
    assert reasons["open-fence.md"] is None and reasons["bidi-entities.md"] is None


@pytest.mark.parametrize(
    "text",
    [
        "- " * 800 + "a",  # issue 25 defect 1: RecursionError, the app never started again
        "> " * 800 + "a",
        "[" * 8000,  # issue 25 defect 2: 7.3 s
        "*a" * 5000,
        "a\n=\n" * 5000,
        "\u202e" * 20000,
        "x" * (MAX_MARKDOWN_CHARS + 1),
    ],
    ids=lambda text: repr(text[:12]) + f"…{len(text)}",
)
def test_pathological_text_is_bounded(text):
    rendered, _ = render_counted(text)
    assert_inert_and_bounded(text, rendered)


def test_plain_fallback_says_why_and_escapes():
    text = "- " * 800 + "<b>bold</b> & \u202etxt.exe"
    rendered = render_markdown(text, plain_note="Plain: {reason}.")
    assert rendered.fallback == f"nested deeper than {MAX_NESTING} levels"
    assert f"Plain: nested deeper than {MAX_NESTING} levels." in rendered.html
    assert "&lt;b&gt;bold&lt;/b&gt; &amp; ⟨U+202E⟩txt.exe" in rendered.html
    assert rendered.code_blocks == []


def test_normal_markdown_is_not_a_fallback():
    text = (
        "Some **bold**, `code` and a [link](https://qwen.ai).\n\n- one\n  - two\n\n```py\nx = 1\n```\n\n"
    ) * 100
    rendered = render_markdown(text)
    assert rendered.fallback is None
    assert len(rendered.code_blocks) == 100 and rendered.html.count('href="https://qwen.ai"') == 100


def test_bidi_controls_are_visible_in_text_code_and_entities():
    text = "\u202etxt.exe and &#x202e;gpj.exe and &rlm;\n\n```\nname = '\u2066x\u2069'\n```\n"
    rendered = render_markdown(text)
    assert "⟨U+202E⟩txt.exe" in rendered.html and "⟨U+202E⟩gpj.exe" in rendered.html
    assert "⟨U+200F⟩" in rendered.html
    assert rendered.code_blocks == ["name = '⟨U+2066⟩x⟨U+2069⟩'\n"], "copied code cannot hide them either"
    assert_inert_and_bounded(text, rendered)


def test_an_answer_cut_inside_a_fence_renders_the_same_streaming_and_finished():
    """Issue 22 defect 2: the fence was closed only while streaming; the finished message lost its code."""
    text = (CORPUS / "open-fence.md").read_text(encoding="utf-8")
    streamed = render_markdown(text, streaming=True)
    finished = render_markdown(text, streaming=False)
    assert finished.html == streamed.html
    assert finished.code_blocks == ["def f():\n    return 1\n"]
    longer = render_markdown("~~~~\n``` not a close\nx\n~~~\ny")
    assert longer.code_blocks == ["``` not a close\nx\n~~~\ny\n"], (
        "only a fence as long as the opening closes"
    )


fragments = st.sampled_from(
    [
        "[", "]", "(", ")", "![", "](", "`", "```", "~~~", "\n", "\n\n", "- ", "1. ", "> ", "    ", "*", "**",
        "_", "#", "|", "|-|", "---", "=", "<", ">", "&", "&#x202e;", "&#8238;", "&rlm;", "\\", "a", "word ",
        "<img src=http://t.example/p.png>", "<script>x()</script>", "javascript:alert(1)", "file:///etc/passwd",
        "http://a.example", "mailto:a@b.example?attach=/etc/passwd", "[a]: http://r.example/x\n", "[a]",
        "\u202e", "\u2066", "\u2069", "\u200f", "\x02", "\x03", "\t", "\r",
    ]
)  # fmt: skip
pieces = st.one_of(
    fragments,
    st.text(max_size=8),
    st.builds(lambda piece, times: piece * times, fragments, st.integers(1, 3000)),
)


@FUZZ
@given(st.lists(pieces, max_size=12).map("".join))
def test_fuzz_any_text_renders_bounded_and_inert(text):
    rendered, _ = render_counted(text)
    assert_inert_and_bounded(text, rendered)
