"""The docs stay reference pages that tell the truth: short, every relative link resolving, every
``qwen-desktop SUBCOMMAND`` they name one the command line has, every module path they name a file, and the
architecture page and the README's Layout naming every module there is and only names that exist."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from qwen_desktop.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted(DOCS.glob("*.md"))
LINKED = [ROOT / "README.md", *PAGES]
PACKAGE = ROOT / "qwen_desktop"
MAX_LINES = 200
# Pages not yet brought down to MAX_LINES, and the length they may not pass.
OVER_LIMIT = {"app.md": 220, "packaging.md": 220}
# The appendix holds the dated measurements, so it may grow.
LONG_PAGES = {"experiments.md"}
HEADLESS = ("engine", "convert", "library", "storage", "server")

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
COMMAND = re.compile(r"(?<![\w/.-])qwen-desktop ([a-z][a-z0-9-]*)")
# A module named by its path: qwen_desktop/..., or a layer folder's (engine/session.py), old models/ included.
MODULE_PATH = re.compile(
    r"(?<![\w/.-])((?:qwen_desktop/)?(?:engine|convert|library|storage|server|ui|models)/[\w/]+\.py"
    r"|qwen_desktop/[\w/]+\.py)"
)
CLASS_NAME = re.compile(r"\b([A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?:\.(\w+))?")
CALL_NAME = re.compile(r"(?<![\w.])([a-z_]\w*)\(")


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
    limit = OVER_LIMIT.get(page.name, MAX_LINES)
    lines = len(page.read_text(encoding="utf-8").splitlines())
    assert lines <= limit, f"{_rel(page)} has {lines} lines; keep a reference page to {MAX_LINES}"


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


def module_paths(text: str) -> list[str]:
    """The module paths ``text`` names, each as a path from the repository root."""
    return [p if p.startswith("qwen_desktop/") else f"qwen_desktop/{p}" for p in MODULE_PATH.findall(text)]


@pytest.mark.parametrize("page", LINKED, ids=lambda p: p.name)
def test_every_module_path_named_exists(page):
    missing = sorted({p for p in module_paths(page.read_text(encoding="utf-8")) if not (ROOT / p).exists()})
    assert not missing, f"{_rel(page)} names modules that do not exist: {', '.join(missing)}"


@cache
def defined_names() -> tuple[frozenset[str], frozenset[str]]:
    """The package's class names, and every name it defines (classes, functions, methods, assignments)."""
    classes: set[str] = set()
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                classes.add(node.name)
                names.add(node.name)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                names.add(node.attr)
    return frozenset(classes), frozenset(names)


def unknown_names(text: str) -> list[str]:
    """The ``Class``, ``Class.attr`` and ``function()`` names in ``text``'s inline code the package does not
    define (Qt's own classes, ``Q...``, aside)."""
    classes, names = defined_names()
    unknown = []
    for span in CODE_SPAN.findall(FENCE.sub("", text)):
        for cls, attr in CLASS_NAME.findall(span):
            if cls.startswith("Q") and cls[1:2].isupper():
                continue
            if cls not in classes or (attr and attr not in names):
                unknown.append(f"{cls}.{attr}" if attr else cls)
        unknown += [f"{fn}()" for fn in CALL_NAME.findall(span) if fn not in names]
    return unknown


def test_the_architecture_page_names_only_what_exists():
    unknown = unknown_names((DOCS / "architecture.md").read_text(encoding="utf-8"))
    assert not unknown, (
        f"docs/architecture.md names what the package lacks: {', '.join(sorted(set(unknown)))}"
    )


def table_row(text: str, first_cell: str) -> str:
    """The table row of ``text`` whose first cell is ``first_cell`` in inline code."""
    rows = [line for line in text.splitlines() if line.startswith(f"| `{first_cell}`")]
    assert rows, f"no table row for {first_cell}"
    return rows[0]


@pytest.mark.parametrize("layer", HEADLESS)
def test_the_architecture_table_names_every_module_of_a_layer(layer):
    row = table_row((DOCS / "architecture.md").read_text(encoding="utf-8"), f"{layer}/")
    named = {word for span in CODE_SPAN.findall(row) for word in re.findall(r"\w+", span)}
    modules = {p.stem for p in (PACKAGE / layer).glob("*.py")} - {"__init__"}
    assert modules <= named, f"docs/architecture.md's {layer}/ row lacks {', '.join(sorted(modules - named))}"


def test_the_readme_layout_lists_every_top_level_module():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    layout = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    named = {span.removeprefix("qwen_desktop/") for span in CODE_SPAN.findall(layout)}
    entries = {
        p.name + ("/" if p.is_dir() else "")
        for p in PACKAGE.iterdir()
        if not p.name.startswith((".", "__pycache__"))
    }
    assert entries <= named, f"README's Layout lacks {', '.join(sorted(entries - named))}"


def test_the_name_checks_catch_what_they_look_for():
    text = (
        "`engine/session.py`, `qwen_desktop/engine/nowhere.py`, `tests/engine/test_session.py`, `models/registry.py`;"
        " `ChatEngine.chat`, `ChatEngine.nothing_like_it`, `NoSuchClass`, `QThread`, `build_model(src)`,"
        " `no_such_function()`\n```\n`Fenced` is not read\n```\n"
    )
    assert module_paths(text) == [
        "qwen_desktop/engine/session.py",
        "qwen_desktop/engine/nowhere.py",
        "qwen_desktop/models/registry.py",
    ]
    assert unknown_names(text) == ["ChatEngine.nothing_like_it", "NoSuchClass", "no_such_function()"]
    row = table_row("| `engine/` | x |\n| `convert/` | `builder` |\n", "convert/")
    assert row == "| `convert/` | `builder` |"
