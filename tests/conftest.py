"""Shared fixtures: tiny models built in the test session, and the real model when it is on disk."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Nothing a test does lands in the real user folders (the engine's ORT cache, settings, chats).
os.environ.setdefault("QWEN_DESKTOP_HOME", tempfile.mkdtemp(prefix="qwen-desktop-tests-"))

REAL_MODEL_ENV = "QWEN_REAL_MODEL"
REAL_MODEL_DEFAULT = Path.home() / ".cache" / "qwen-real-model" / "qwen2.5-coder-0.5b-instruct.gguf"


def real_model_path() -> Path | None:
    p = Path(os.environ.get(REAL_MODEL_ENV, REAL_MODEL_DEFAULT))
    return p if p.is_file() else None


@pytest.fixture(scope="session")
def real_gguf() -> Path:
    p = real_model_path()
    if p is None:
        pytest.skip(
            f"real model not found at {os.environ.get(REAL_MODEL_ENV, REAL_MODEL_DEFAULT)}: "
            "run ../shared/tools/fetch-real-model (or set QWEN_REAL_MODEL)"
        )
    return p


@pytest.fixture(scope="session")
def real_int4_dir(real_gguf, tmp_path_factory) -> Path:
    """The real model built the default way (int4), once per test session: several test files use it."""
    from qwen_desktop.convert.builder import build_model

    return build_model(real_gguf, tmp_path_factory.mktemp("real-int4") / "int4").folder


@pytest.fixture
def int8_prefill_on(monkeypatch):
    """Open the int8 prefill graph even on a CPU whose int8 kernel clips (engine/int8_check.py), for tests of
    the two-graph mechanics (which graph runs, the shared cache, memory per graph), not of its accuracy."""
    from qwen_desktop.engine.session import INT8_PREFILL_ENV

    monkeypatch.setenv(INT8_PREFILL_ENV, "on")


@pytest.fixture(scope="session")
def tiny_tokenizer():
    from qwen_desktop.convert.tiny import make_tokenizer

    return make_tokenizer()


@pytest.fixture(scope="session")
def tiny_cfg(tiny_tokenizer):
    from qwen_desktop.convert.tiny import tiny_config

    return tiny_config(len(tiny_tokenizer[0]))


@pytest.fixture(scope="session")
def tiny_weights(tiny_cfg):
    from qwen_desktop.convert.tiny import make_weights

    return make_weights(tiny_cfg, seed=0)


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory, tiny_cfg, tiny_weights, tiny_tokenizer) -> Path:
    from qwen_desktop.convert.tiny import write_gguf

    return write_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", tiny_cfg, tiny_weights, tiny_tokenizer)


@pytest.fixture(scope="session")
def tiny_hf(tmp_path_factory, tiny_cfg, tiny_weights, tiny_tokenizer) -> Path:
    from qwen_desktop.convert.tiny import write_hf_folder

    return write_hf_folder(tmp_path_factory.mktemp("hf") / "tiny-hf", tiny_cfg, tiny_weights, tiny_tokenizer)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, tiny_gguf) -> Path:
    """The default build (fast graph, int4 layers, int8 head) of the tiny GGUF model."""
    from qwen_desktop.convert.builder import build_model

    return build_model(tiny_gguf, tmp_path_factory.mktemp("built") / "tiny-int4").folder


@pytest.fixture(scope="session")
def tiny_plain_fit_dir(tmp_path_factory, tiny_gguf) -> Path:
    """The default build but with the plain 4-bit fit: its weights are what quantize_blockwise gives."""
    from qwen_desktop.convert.builder import build_model

    return build_model(tiny_gguf, tmp_path_factory.mktemp("built") / "tiny-plain", fit="plain").folder


@pytest.fixture(scope="session")
def tiny_plain_dir(tmp_path_factory, tiny_gguf) -> Path:
    """The tiny model in the plain style, fp32: one graph with logits and present.* outputs, as hub exports."""
    from qwen_desktop.convert.builder import build_model

    return build_model(
        tiny_gguf, tmp_path_factory.mktemp("built") / "tiny-plain", precision="fp32", style="plain"
    ).folder


@pytest.fixture(scope="session")
def tiny_fp32_dir(tmp_path_factory, tiny_gguf) -> Path:
    """An fp32 fast build: its logits match the numpy reference to 1e-4, so greedy output can be compared."""
    from qwen_desktop.convert.builder import build_model

    return build_model(tiny_gguf, tmp_path_factory.mktemp("built") / "tiny-fp32", precision="fp32").folder


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``folder`` with its size and modification time: what "never written to" compares."""
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def shipped(tmp_path, tiny_model_dir, monkeypatch) -> Path:
    """A folder of models that came with the app holding the tiny model as ``tiny-bundled``, named by
    ``$QWEN_DESKTOP_BUNDLED_MODELS``."""
    import shutil

    from qwen_desktop.library.bundled import BUNDLED_ENV

    root = tmp_path / "bundled"
    shutil.copytree(tiny_model_dir, root / "tiny-bundled")
    monkeypatch.setenv(BUNDLED_ENV, str(root))
    return root


@pytest.fixture
def paced_model(monkeypatch):
    """Make every pass of the model take at least ``seconds`` (the real model still computes it): the tiny
    model writes thousands of tokens a second on a quiet machine, so a test that watches an answer being
    written (renders, status updates) gives it a pace a real model has instead of racing it."""
    from qwen_desktop.engine.session import OnnxModel

    def pace(seconds: float) -> None:
        forward = OnnxModel.forward

        def paced(self, ids, keep=1):
            time.sleep(seconds)
            return forward(self, ids, keep)

        monkeypatch.setattr(OnnxModel, "forward", paced)

    return pace
