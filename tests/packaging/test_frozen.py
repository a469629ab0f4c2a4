"""The frozen app (PyInstaller, build.spec) and its .deb: the bundle starts, answers and opens its window.

Reuses dist/qwen-desktop/ when it is newer than every source file it is built from; otherwise freezes it
(about 1.5-2 minutes on 2 cores). Skipped, with the reason, when PyInstaller or dpkg-deb is missing.
Set QWEN_DESKTOP_FROZEN=/path/to/qwen-desktop to test another bundle as it is.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


sys.path.insert(0, str(ROOT / "installer"))
import smoke  # noqa: E402 - installer/smoke.py


def _load_build():
    """Import installer/build.py under a private name (``build`` is also PyPA's package)."""
    spec = importlib.util.spec_from_file_location("qwen_installer_build", ROOT / "installer" / "build.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and pickling look modules up here
    spec.loader.exec_module(module)
    return module


build = _load_build()

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

FROZEN_ENV = "QWEN_DESKTOP_FROZEN"
# Never in the bundle: what build.spec excludes (import names and Qt libraries).
UNWANTED = ("torch", "pytest", "_pytest", "tkinter", "hypothesis", "mypy", "IPython", "matplotlib")
UNWANTED_QT = ("libQt6WebEngine", "libQt6Qml", "libQt6Quick", "libQt6Network", "libQt6Pdf", "libQt63D")


def _newest_source() -> float:
    sources = [ROOT / "build.spec", ROOT / "installer" / "entry.py", *(ROOT / "qwen_desktop").rglob("*")]
    return max(p.stat().st_mtime for p in sources if p.is_file())


@pytest.fixture(scope="session")
def frozen_exe() -> Path:
    if os.environ.get(FROZEN_ENV):
        exe = Path(os.environ[FROZEN_ENV])
        assert exe.is_file(), f"{FROZEN_ENV}={exe} does not exist"
        return exe
    exe = build.BUNDLE / build.APP
    if exe.is_file() and exe.stat().st_mtime >= _newest_source():
        return exe
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        pytest.skip("PyInstaller is not installed: pip install -e '.[package]' to test the frozen app")
    build.freeze()
    build.strip_debug_info(build.BUNDLE)
    return exe


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return smoke.clean_env(tmp_path / "home")


def test_prints_its_version(frozen_exe, env):
    assert smoke.check_version(frozen_exe, env).endswith(build.__version__)


def test_builds_a_tiny_model_and_answers(frozen_exe, env, tmp_path):
    model = smoke.build_tiny_model(frozen_exe, env, tmp_path)
    assert smoke.check_chat(frozen_exe, env, model)


def test_window_opens_offscreen_and_closes_cleanly(frozen_exe, env):
    seconds = smoke.check_window(frozen_exe, env)
    assert seconds < 30


def test_window_on_x11_under_xvfb(frozen_exe, env):
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb not installed (apt-get install xvfb): the xcb platform plugin is not tested")
    assert smoke.check_window_x11(frozen_exe, env) is not None


def test_window_with_a_model_closes_cleanly(frozen_exe, env, tmp_path):
    model = smoke.build_tiny_model(frozen_exe, env, tmp_path)
    smoke.run([str(frozen_exe), "import", str(model), "--name", "tiny"], env)
    smoke.check_window(frozen_exe, env, quit_after_ms=1500)


def test_bundle_holds_what_the_app_needs_and_nothing_it_does_not(frozen_exe):
    internal = frozen_exe.parent / "_internal"
    names = {p.name for p in internal.rglob("*")}
    assert "catalog.json" in names
    assert "qwen_desktop_zh_CN.qm" in names or not list((ROOT / "qwen_desktop" / "i18n").glob("*.qm"))
    assert {"libqxcb.so", "libqoffscreen.so", "libqwayland.so"} <= names
    assert any(n.startswith("libonnxruntime") for n in names)
    assert any(n.startswith("tokenizers") for n in names)
    for top in UNWANTED:
        assert not (internal / top).exists(), f"{top} was bundled"
    assert not [n for n in names if n.startswith(UNWANTED_QT)]
    assert not list(internal.rglob("*.ts")), "translation sources (.ts) are bundled; only .qm are needed"


@pytest.fixture(scope="module")
def deb(frozen_exe, tmp_path_factory) -> Path:
    if shutil.which("dpkg-deb") is None:
        pytest.skip("dpkg-deb not found: the .deb is built on Debian/Ubuntu")
    bundle = frozen_exe.parent
    return build.build_deb(bundle, tmp_path_factory.mktemp("deb"), models=None, fast=True)


def test_deb_installs_and_the_installed_app_works(deb, tmp_path):
    # check_deb: dpkg -x into a temporary root, the layout, then the whole smoke test on the installed binary.
    build.check_deb(deb, with_model=False)
    control = subprocess.run(
        ["dpkg-deb", "--field", str(deb), "Depends"], capture_output=True, text=True, check=True
    )
    assert "libxcb-cursor0" in control.stdout
    assert "libc6 (>=" in control.stdout


def test_deb_maintainer_scripts_leave_user_data_alone(deb, tmp_path):
    subprocess.run(["dpkg-deb", "--control", str(deb), str(tmp_path / "ctl")], check=True)
    for name in ("postinst", "postrm"):
        script = (tmp_path / "ctl" / name).read_text()
        assert "rm " not in script and "HOME" not in script and "/home" not in script
        assert "QwenDesktop" not in script.replace("~/.local/share/QwenDesktop) is never removed", "")


def test_tarball_with_a_model_answers_on_a_clean_home_with_no_import(frozen_exe, env, tmp_path):
    # --with-model: models/<name>/ beside the executable, as in the .deb. check_tarball unpacks it, runs
    # --version, then on a clean data folder `chat` answers with the bundled model (no --model, no import),
    # `models` lists it as included, and the window opens on it and closes cleanly.
    models = tmp_path / "models"
    models.mkdir()
    shutil.move(smoke.build_tiny_model(frozen_exe, env, tmp_path), models / "tiny")
    tarball = build.build_tarball(frozen_exe.parent, tmp_path, models=models, fast=True)
    with tarfile.open(tarball) as tar:
        assert f"qwen-desktop-{build.__version__}/models/tiny/manifest.json" in tar.getnames()
    build.check_tarball(tarball, with_model=True)
