"""Model output (untrusted Markdown) to the HTML subset a ``QTextBrowser`` shows, safely.

What the model writes is never trusted: raw HTML in it is shown as text, images become a text mention
(nothing is fetched), and only http, https and mailto links stay links. Code blocks are highlighted by
Pygments with inline styles (``QTextBrowser`` ignores CSS classes) and get a "copy" link whose URL is
``copy:<n>``; ``code_blocks()`` gives the text to copy.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

import markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.lexers.special import TextLexer
from pygments.util import ClassNotFound

SAFE_SCHEMES = ("http://", "https://", "mailto:")
_CODE_RE = re.compile(r'<pre><code(?: class="language-([\w+#.-]+)")?>(.*?)</code></pre>', re.DOTALL)
_FENCE_RE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


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


_PARSERS: dict[int, markdown.Markdown] = {}


def _parser() -> markdown.Markdown:
    """One Markdown parser per thread, built once: building one costs a quarter of a second."""
    import threading

    key = threading.get_ident()
    if key not in _PARSERS:
        _PARSERS[key] = markdown.Markdown(extensions=["fenced_code", "tables", "sane_lists", _SafeMarkdown()])
    return _PARSERS[key]


def _close_open_fence(text: str) -> str:
    """While an answer streams, a code fence may be open: close it so the code shows as code already."""
    return text + "\n```" if len(_FENCE_RE.findall(text)) % 2 else text


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
    text: str, colors: Colors = LIGHT, copy_label: str = "Copy code", streaming: bool = False
) -> Rendered:
    """Render untrusted Markdown to safe HTML for a ``QTextBrowser``.

    Args:
        text: The message text.
        colors: The theme's colours.
        copy_label: The (translated) text of each code block's copy link.
        streaming: The text is still growing: an unclosed code fence is closed for display.
    """
    # STX/ETX delimit Markdown's internal placeholders; text must not be able to forge one.
    source = text.replace("\x02", "").replace("\x03", "")
    if streaming:
        source = _close_open_fence(source)
    md = _parser()
    md.reset()
    body = md.convert(source)
    blocks: list[str] = []

    def code_block(match: re.Match[str]) -> str:
        code = html.unescape(match.group(2))
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
    return Rendered(body, blocks)


def render_plain(text: str) -> str:
    """HTML for text shown exactly as typed (the user's own messages)."""
    return "<p>" + html.escape(text).replace("\n", "<br>") + "</p>"
