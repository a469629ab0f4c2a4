"""Model output (untrusted Markdown) to the HTML subset a ``QTextBrowser`` shows, safely.

What the model writes is never trusted: raw HTML in it is shown as text, images become a text mention
(nothing is fetched), and only http, https and mailto links stay links. Code blocks are highlighted by
Pygments with inline styles (``QTextBrowser`` ignores CSS classes) and get a "copy" link whose URL is
``copy:<n>``; ``code_blocks()`` gives the text to copy.

Rendering never raises and its work is bounded: text over ``MAX_MARKDOWN_CHARS``, nested deeper than
``MAX_NESTING``, or whose parse would cost more than ``work_budget(len(text))`` units (the characters the
block parser and the link parser look at) is shown as plain, escaped text with a note saying why.
Bidirectional control characters, raw or as HTML entities, are shown as visible markers (``⟨U+202E⟩``).
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from xml.etree.ElementTree import Element

import markdown
from markdown.extensions import Extension
from markdown.inlinepatterns import BacktickInlineProcessor, LinkInlineProcessor
from markdown.treeprocessors import Treeprocessor
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.lexers.special import TextLexer
from pygments.util import ClassNotFound

SAFE_SCHEMES = ("http://", "https://", "mailto:")
_CODE_RE = re.compile(r'<pre><code(?: class="language-([\w+#.-]+)")?>(.*?)</code></pre>', re.DOTALL)


@dataclass(frozen=True)
class Colors:
    """The colours of one theme, as CSS colour strings."""

    text: str
    muted: str
    code_bg: str
    border: str
    link: str
    pygments_style: str


LIGHT = Colors("#1f2328", "#59636e", "#f3f4f6", "#d0d7de", "#0969da", "default")
DARK = Colors("#e6edf3", "#9198a1", "#161b22", "#3d444d", "#58a6ff", "monokai")


class _InertContent(Treeprocessor):  # type: ignore[misc]  # markdown ships no type hints
    """Turns images into text and unsafe links into plain text."""

    def run(self, root: Element) -> None:
        for el in root.iter():
            if el.tag == "img":
                alt = el.get("alt") or ""
                src = el.get("src") or ""
                el.tag = "span"
                el.attrib.clear()
                el.text = f"[image: {alt or src}]"
            elif el.tag == "a":
                href = (el.get("href") or "").strip()
                if not href.lower().startswith(SAFE_SCHEMES):
                    el.tag = "span"
                    el.attrib.clear()


class _SafeMarkdown(Extension):  # type: ignore[misc]  # markdown ships no type hints
    """No raw HTML (it stays visible text), no images, no unsafe links."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:  # noqa: N802 - Markdown's API name
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        md.treeprocessors.register(_InertContent(md), "inert_content", 0)


@dataclass
class Rendered:
    """HTML for a ``QTextBrowser`` and the code blocks in it, in order (for the copy links)."""

    html: str
    code_blocks: list[str] = field(default_factory=list)
    fallback: str | None = None  # why the text is shown as plain text, or None for Markdown
    work: int = 0  # work units the Markdown parser spent (see ``work_budget``)


MAX_MARKDOWN_CHARS = 100_000  # longer answers show as plain text: every re-render stays cheap
MAX_NESTING = 16  # list and quote levels; Markdown's parser recurses once per level
# Every render may spend this many work units per character of text (plus a floor for short text). Normal
# Markdown costs one to three units a character; quadratic inputs ("[" * 8000, "-\n" * 4000) cost thousands.
WORK_PER_CHAR = 40
WORK_FLOOR = 20_000
CODE_BLOCK_WORK = 400
MAX_CODE_BLOCKS = 200  # the fenced-code parser rescans the text once per block
# The HTML a render may hand to the view: highlighted code is the most verbose (a styled span per token).
HTML_PER_CHAR = 32
HTML_FLOOR = 200_000

BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_BIDI_RE = re.compile("[" + "".join(sorted(BIDI_CONTROLS)) + "]")
_ENTITY_RE = re.compile(r"&(?:#[xX]0*([0-9a-fA-F]{1,8})|#0*([0-9]{1,10})|(lrm|rlm));?")
_NEST_RE = re.compile(r"[ \t]*(?:(?:[-*+]|\d{1,9}[.)])(?=[ \t]|$)|>)")
_FENCE_OPEN_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def work_budget(length: int) -> int:
    """The work units a render of ``length`` characters may spend before it falls back to plain text."""
    return WORK_FLOOR + WORK_PER_CHAR * length


def html_budget(length: int) -> int:
    """The most HTML a render of ``length`` characters may produce before it falls back to plain text."""
    return HTML_FLOOR + HTML_PER_CHAR * length


def bidi_marker(char: str) -> str:
    """The visible stand-in for a bidirectional control character: ``⟨U+202E⟩``."""
    return f"⟨U+{ord(char):04X}⟩"


def reveal_bidi(text: str) -> str:
    """Replace bidirectional control characters with visible markers, so "\u202etxt.exe" cannot pose as
    "exe.txt" (a chat title, a message, a code block)."""
    return _BIDI_RE.sub(lambda m: bidi_marker(m.group(0)), text)


def _reveal_bidi_entities(html_text: str) -> str:
    """In HTML: bidi controls written as entities (``&#x202e;``, ``&#8238;``, ``&rlm;``) become markers too."""

    def replace(match: re.Match[str]) -> str:
        hex_digits, dec_digits, name = match.groups()
        if name is not None:
            char = "\u200e" if name == "lrm" else "\u200f"
        else:
            code = int(hex_digits, 16) if hex_digits is not None else int(dec_digits)
            char = chr(code) if code <= 0x10FFFF else ""
        return bidi_marker(char) if char in BIDI_CONTROLS else match.group(0)

    return reveal_bidi(_ENTITY_RE.sub(replace, html_text))


class RenderLimitError(Exception):
    """A render would cost more work than its budget allows."""


class _Meter:
    """Work units spent by the render under way, and its budget."""

    def __init__(self) -> None:
        self.spent = 0
        self.budget = WORK_FLOOR

    def charge(self, units: int) -> None:
        self.spent += units
        if self.spent > self.budget:
            raise RenderLimitError


def _metered_blocks(run: Callable[..., Any], meter: _Meter) -> Callable[..., Any]:
    """A block processor's ``run`` that first pays for the block it is given: a processor that peels one
    line off a long block at a time (horizontal rules, setext headers) would otherwise be quadratic."""

    def metered(parent: Element, blocks: list[str]) -> Any:
        meter.charge(len(blocks[0]) + 1 if blocks else 1)
        return run(parent, blocks)

    return metered


def _metered_scan(scan: Callable[..., Any], meter: _Meter) -> Callable[..., Any]:
    """A link parser's bracket or parenthesis scan that pays for the characters it walked over: each
    unmatched "[" scans to the end of its paragraph, so "[" * n is quadratic."""

    def metered(data: str, index: int, *rest: Any) -> Any:
        result = scan(data, index, *rest)
        end = next((v for v in reversed(result) if isinstance(v, int) and not isinstance(v, bool)), index)
        meter.charge(max(1, end - index))
        return result

    return metered


def _metered_match(handle: Callable[..., Any], meter: _Meter) -> Callable[..., Any]:
    """An inline pattern's ``handleMatch`` that pays for the paragraph it is in: each match rebuilds the
    paragraph's string, so thousands of matches in one long paragraph are quadratic. A match also pays for
    the attributes it adds: ``[a]`` used 5000 times with a 5000-character reference URL is 25 MB of HTML."""

    def metered(match: re.Match[str], *rest: Any) -> Any:
        meter.charge(1 + len(rest[0]) // 16 if rest else 1)
        result = handle(match, *rest)
        node = result[0] if isinstance(result, tuple) else result
        if isinstance(node, Element):  # what it adds to the page: a reference link copies its whole URL
            meter.charge(sum(len(value) for value in node.attrib.values()) // 4)
        return result

    return metered


def _metered_code_spans(
    find: Callable[[int, str], tuple[int, int | None]], meter: _Meter
) -> Callable[..., Any]:
    """The code-span finder that pays for the characters it walked over: an opening run of backticks with no
    closing run of the same length scans, character by character, to the end of the paragraph, so many
    unmatched runs (``"``a`" * 20000``) are quadratic."""

    def metered(start: int, text: str) -> tuple[int, int | None]:
        begin, end = find(start, text)
        meter.charge(len(text) - start if end is None else end - start + 1)
        return begin, end

    return metered


_PARSERS: dict[int, tuple[markdown.Markdown, _Meter]] = {}


def _parser() -> tuple[markdown.Markdown, _Meter]:
    """One Markdown parser per thread, built once: building one costs a quarter of a second."""
    import threading

    key = threading.get_ident()
    if key not in _PARSERS:
        md = markdown.Markdown(extensions=["fenced_code", "tables", "sane_lists", _SafeMarkdown()])
        meter = _Meter()
        for processor in md.parser.blockprocessors:
            processor.run = _metered_blocks(processor.run, meter)
        for pattern in md.inlinePatterns:
            if hasattr(pattern, "handleMatch"):
                pattern.handleMatch = _metered_match(pattern.handleMatch, meter)
            if isinstance(pattern, BacktickInlineProcessor):
                pattern.find_code_spans = _metered_code_spans(pattern.find_code_spans, meter)
            if isinstance(pattern, LinkInlineProcessor):
                pattern.getText = _metered_scan(pattern.getText, meter)
                pattern.getLink = _metered_scan(pattern.getLink, meter)
                if hasattr(pattern, "evalId"):
                    pattern.evalId = _metered_scan(pattern.evalId, meter)
        _PARSERS[key] = (md, meter)
    return _PARSERS[key]


def nesting_depth(text: str) -> int:
    """The deepest list or quote nesting a line of ``text`` asks for (markers and indentation)."""
    deepest = 0
    for line in text.splitlines():
        stripped = line.lstrip(" \t")
        indent = len(line) - len(stripped) + 3 * line[: len(line) - len(stripped)].count("\t")
        depth = indent // 4
        position = 0
        while match := _NEST_RE.match(line, position):
            depth += 1
            position = match.end()
            if position >= len(line):
                break
        deepest = max(deepest, depth)
    return deepest


def _fence_lines(text: str) -> tuple[int, str]:
    """How many fence lines the text has, and the fence it leaves open ("" if none)."""
    fence = ""
    count = 0
    for line in text.splitlines():
        match = _FENCE_OPEN_RE.match(line)
        if match is None:
            continue
        count += 1
        marker = match.group(1)
        if not fence:
            fence = marker
        elif marker[0] == fence[0] and len(marker) >= len(fence) and not line[match.end() :].strip():
            fence = ""
    return count, fence


def close_open_fence(text: str) -> str:
    """Close a code fence the text leaves open (an answer stopped, cut at its length limit, or still
    streaming), so the code shows as code, the same while it streams and once it has ended."""
    fence = _fence_lines(text)[1]
    if not fence:
        return text
    return text + ("" if text.endswith("\n") else "\n") + fence


def _highlight(code: str, language: str | None, colors: Colors) -> str:
    lexer = None
    if language:
        try:
            lexer = get_lexer_by_name(language)
        except ClassNotFound:
            lexer = None
    if lexer is None:
        # No guessing: guess_lexer runs every lexer over the text, far too slow for 30 renders a second.
        lexer = TextLexer()
    formatter = HtmlFormatter(noclasses=True, nowrap=True, style=colors.pygments_style)
    return str(highlight(code, lexer, formatter))


def render_markdown(
    text: str,
    colors: Colors = LIGHT,
    copy_label: str = "Copy code",
    streaming: bool = False,
    plain_note: str = "Shown as plain text: {reason}.",
) -> Rendered:
    """Render untrusted Markdown to safe HTML for a ``QTextBrowser``; never raises.

    A fence left open is closed (while streaming and after), so a finished answer looks as it did in its
    last streamed frame. Text too long, too deeply nested or too costly to parse is shown as plain text.

    Args:
        text: The message text.
        colors: The theme's colours.
        copy_label: The (translated) text of each code block's copy link.
        streaming: The text is still growing (kept for callers; rendering is the same).
        plain_note: The (translated) note above a plain-text fallback; ``{reason}`` is filled in.
    """
    del streaming  # an open fence is closed either way: what was shown while streaming stays
    source = reveal_bidi(text)
    reason = None
    if len(source) > MAX_MARKDOWN_CHARS:
        reason = f"longer than {MAX_MARKDOWN_CHARS:,} characters"
    elif nesting_depth(source) > MAX_NESTING:
        reason = f"nested deeper than {MAX_NESTING} levels"
    elif _fence_lines(source)[0] > 2 * MAX_CODE_BLOCKS:
        reason = f"more than {MAX_CODE_BLOCKS} code blocks"
    else:
        md, meter = _parser()
        meter.spent = 0
        meter.budget = work_budget(len(source))
        try:
            return _render(md, source, colors, copy_label, meter)
        except RenderLimitError:
            reason = "too costly to format"
        except Exception:  # a parser bug on strange input must not stop the window: show the text
            reason = "could not be formatted"
        finally:
            md.reset()
    note = html.escape(plain_note.replace("{reason}", reason))
    return Rendered(
        f'<p style="color:{colors.muted}; font-size: small;"><i>{note}</i></p>' + render_plain(source),
        fallback=reason,
    )


def _render(md: markdown.Markdown, source: str, colors: Colors, copy_label: str, meter: _Meter) -> Rendered:
    # STX/ETX delimit Markdown's internal placeholders; text must not be able to forge one.
    source = close_open_fence(source.replace("\x02", "").replace("\x03", ""))
    md.reset()
    body = md.convert(source)
    blocks: list[str] = []

    def code_block(match: re.Match[str]) -> str:
        code = html.unescape(match.group(2))
        meter.charge(CODE_BLOCK_WORK + len(code))  # highlighting has a cost per block
        index = len(blocks)
        blocks.append(code)
        language = match.group(1)
        label = html.escape(language or "")
        lit = _highlight(code, language, colors).rstrip("\n")
        return (
            f'<table width="100%" cellspacing="0" cellpadding="6" border="0" '
            f'style="background-color:{colors.code_bg}; border: 1px solid {colors.border}; margin: 4px 0;">'
            f'<tr><td style="border: none;"><span style="color:{colors.muted}; font-size: small;">'
            f'{label + " · " if label else ""}</span><a href="copy:{index}" style="color:{colors.link};'
            f' font-size: small;">{html.escape(copy_label)}</a></td></tr>'
            f'<tr><td style="border: none;"><pre style="margin:0; font-family: monospace;">{lit}</pre></td></tr>'
            f"</table>"
        )

    body = _CODE_RE.sub(code_block, body)
    body = body.replace(
        "<table>",
        f'<table border="1" cellspacing="0" cellpadding="4" style="border-color:{colors.border};'
        ' border-collapse: collapse; margin: 4px 0;">',
    )
    body = re.sub(r"<code>", f'<code style="background-color:{colors.code_bg};">', body)
    body = _reveal_bidi_entities(body)
    if len(body) > html_budget(len(source)):
        raise RenderLimitError
    return Rendered(body, blocks, work=meter.spent)


def render_plain(text: str) -> str:
    """HTML for text shown exactly as typed (the user's own messages)."""
    return "<p>" + html.escape(reveal_bidi(text)).replace("\n", "<br>") + "</p>"
