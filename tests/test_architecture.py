"""House rules that keep the headless core headless and the version in one place."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import qwen_desktop

PACKAGE = Path(qwen_desktop.__file__).parent
HEADLESS = ("engine", "convert", "library", "storage", "server")
QT_MODULES = ("PySide6", "shiboken6", "PyQt5", "PyQt6", "qtpy")


def _headless_files() -> list[Path]:
    return sorted(p for sub in HEADLESS for p in (PACKAGE / sub).rglob("*.py"))


@pytest.mark.parametrize("path", _headless_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_headless_core_never_imports_qt(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            assert name.split(".")[0] not in QT_MODULES, f"{path.name} imports {name}"


def test_importing_the_headless_core_loads_no_qt():
    modules = [
        "qwen_desktop."
        + str(p.relative_to(PACKAGE).with_suffix("")).replace("/", ".").removesuffix(".__init__")
        for p in _headless_files()
    ]
    code = (
        "import importlib, sys\n"
        f"for m in {modules!r}: importlib.import_module(m)\n"
        f"bad = [m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}]\n"
        "print(bad); sys.exit(1 if bad else 0)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


# The layers, lowest first: who may import whom inside qwen_desktop. The package root (only __version__) and
# units.py (sizes and durations as text; it imports nothing) are open to all. engine/ imports none of ours;
# convert/ only engine/; library/ convert/, engine/ and storage/; storage/ none; server/ any of those four;
# worker.py (the Qt adapter between the window and the engine host) those four too, never ui/ or server/.
# Anything not named here (ui, cli*, __main__) sits on top and may import any layer.
OPEN_TO_ALL = frozenset({"__version__", "units"})
LAYERS: dict[str, frozenset[str]] = {
    "units": frozenset(),
    "engine": frozenset({"engine"}),
    "convert": frozenset({"convert", "engine"}),
    "storage": frozenset({"storage"}),
    "library": frozenset({"library", "convert", "engine", "storage"}),
    "server": frozenset({"server", "engine", "library", "storage", "convert"}),
    "worker": frozenset({"engine", "library", "storage", "convert"}),
}


def _layer(module: str) -> str | None:
    """``qwen_desktop.engine.chat`` -> ``engine``; the package root -> None."""
    parts = module.split(".")
    return parts[1] if parts[0] == "qwen_desktop" and len(parts) > 1 else None


def _imported_modules(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    """Every qwen_desktop module ``tree`` imports (at any depth: lazy and TYPE_CHECKING imports count)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against the importing module's package
                package = module.split(".")[: -node.level]
                base = ".".join(package + ([base] if base else []))
            if base == "qwen_desktop":  # `from qwen_desktop import engine` names a layer
                found += [(node.lineno, f"qwen_desktop.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, base))
    return [(line, name) for line, name in found if name.split(".")[0] == "qwen_desktop"]


def layer_violations(source: str, module: str) -> list[str]:
    """The imports in ``source`` (the text of ``module``) that break ``LAYERS``, one readable line each."""
    own = _layer(module)
    allowed = LAYERS.get(own or "")
    if allowed is None:
        return []
    bad = []
    for line, name in _imported_modules(ast.parse(source), module):
        target = _layer(name)
        if target is not None and target not in OPEN_TO_ALL and target not in allowed:
            bad.append(
                f"{module.replace('.', '/')}.py:{line} imports {name}: "
                f"{own}/ may import only {', '.join(sorted(allowed))}"
            )
    return bad


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    return ".".join(rel.parts).removesuffix(".__init__")


def test_every_layer_imports_only_the_layers_below_it():
    violations = [
        v
        for path in sorted(PACKAGE.rglob("*.py"))
        for v in layer_violations(path.read_text(encoding="utf-8"), _module_name(path))
    ]
    assert not violations, "imports against the layer order:\n" + "\n".join(violations)


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        ("qwen_desktop.engine.chat", "def f():\n    from qwen_desktop.storage.paths import cache_dir\n", 1),
        ("qwen_desktop.engine.chat", "from ..library import registry\n", 1),
        ("qwen_desktop.engine.chat", "from qwen_desktop import worker\n", 1),
        ("qwen_desktop.convert.builder", "import qwen_desktop.library.catalog\n", 1),
        ("qwen_desktop.storage.paths", "from qwen_desktop.engine.errors import ModelError\n", 1),
        ("qwen_desktop.library.install", "from qwen_desktop.ui.models_dialog import X\n", 1),
        ("qwen_desktop.library.install", "from qwen_desktop.convert.builder import build_model\n", 0),
        ("qwen_desktop.convert.builder", "from qwen_desktop import __version__\n", 0),
        ("qwen_desktop.library.download", "from qwen_desktop.units import human_bytes\n", 0),
        ("qwen_desktop.units", "from qwen_desktop.engine.errors import ModelError\n", 1),
        ("qwen_desktop.ui.app", "from qwen_desktop.worker import ChatWorker\n", 0),
        ("qwen_desktop.worker", "def f():\n    from qwen_desktop.ui.theme import apply_theme\n", 1),
        ("qwen_desktop.worker", "from qwen_desktop import server\n", 1),
        ("qwen_desktop.worker", "from qwen_desktop.engine.host import EngineHost\n", 0),
        ("qwen_desktop.server.app", "from qwen_desktop.worker import EngineBridge\n", 1),
        ("qwen_desktop.engine.host", "from qwen_desktop.convert.builder import build_model\n", 1),
        ("qwen_desktop.engine.session", "from qwen_desktop.library.installed import Index\n", 1),
    ],
)
def test_the_layer_check_catches_an_upward_import(module, source, expected):
    found = layer_violations(source, module)
    assert len(found) == expected, found
    if expected:
        assert module.replace(".", "/") + ".py:" in found[0] and "may import only" in found[0]


def test_version_has_one_source():
    r = subprocess.run(
        [sys.executable, "-m", "qwen_desktop", "--version"], capture_output=True, text=True, check=True
    )
    assert r.stdout.strip() == f"qwen-desktop {qwen_desktop.__version__}"
    spec = (PACKAGE.parent / "build.spec").read_text(encoding="utf-8")
    assert "from qwen_desktop import __version__" in spec
    assert not re.search(r"\d+\.\d+\.\d+", spec), "build.spec must not hard-code a version"
