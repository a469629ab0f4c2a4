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
HEADLESS = ("engine", "convert", "library", "storage")
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


def test_version_has_one_source():
    r = subprocess.run(
        [sys.executable, "-m", "qwen_desktop", "--version"], capture_output=True, text=True, check=True
    )
    assert r.stdout.strip() == f"qwen-desktop {qwen_desktop.__version__}"
    spec = (PACKAGE.parent / "build.spec").read_text(encoding="utf-8")
    assert "from qwen_desktop import __version__" in spec
    assert not re.search(r"\d+\.\d+\.\d+", spec), "build.spec must not hard-code a version"
