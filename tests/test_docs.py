"""The docs stay reference pages that tell the truth: short, every relative link resolving, and every
``qwen-desktop SUBCOMMAND`` they name one the command line has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qwen_desktop.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINKED = [ROOT / "README.md", *PAGES]
MAX_LINES = 220
# The appendix holds the dated measurements, so it may grow.
# models.md: 227 lines once its download section gained "Downloads behind a proxy" (issue 23 item 6).
LONG_PAGES = {"experiments.md"}

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"(?<![\w/.-])qwen-desktop ([a-z][a-z0-9-]*)")


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    out = set()
    for line in text.splitlines():
        m = re.match(r"#{1,6} (.+)", line)
        if not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def subcommands() -> set[str]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return set(sub.choices)


def named_commands(path: Path) -> set[str]:
    """The words after ``qwen-desktop`` in the page's code (fenced blocks and `inline code`)."""
    text = path.read_text(encoding="utf-8")
    code = FENCE.findall(text) + CODE_SPAN.findall(FENCE.sub("", text))
    return {word for block in code for word in COMMAND.findall(block)}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_a_reference_page_is_short(page):
    if page.name in LONG_PAGES:
        pytest.skip(f"{page.name} may be longer (see LONG_PAGES)")
    lines = len(page.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{_rel(page)} has {lines} lines; keep a reference page to {MAX_LINES}"


@pytest.mark.parametrize("page", LINKED, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    broken = []
    for target in links(page):
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {_rel(dest)}")
    assert not broken, f"{_rel(page)}:\n" + "\n".join(broken)


@pytest.mark.parametrize("page", LINKED, ids=lambda p: p.name)
def test_every_command_named_in_the_docs_exists(page):
    unknown = named_commands(page) - subcommands()
    assert not unknown, f"{_rel(page)} names qwen-desktop {', '.join(sorted(unknown))}, which the CLI lacks"


def test_the_checks_catch_what_they_look_for(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "# A `code` heading: here\n\nSee [x](missing.md), [y](#a-code-heading-here), [z](#nope), "
        "[w](https://example.com).\n\n```sh\nqwen-desktop chat --model DIR\nqwen-desktop frobnicate\n```\n"
        "Run `qwen-desktop bench` from `/opt/qwen-desktop/models`.\n",
        encoding="utf-8",
    )
    assert links(page) == ["missing.md", "#a-code-heading-here", "#nope"]
    assert anchors(page) == {"a-code-heading-here"}
    assert named_commands(page) == {"chat", "frobnicate", "bench"}
    assert {"chat", "bench", "build-model", "serve"} <= subcommands()
    assert "frobnicate" not in subcommands()
