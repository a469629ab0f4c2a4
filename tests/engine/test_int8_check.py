"""The int8 kernel check: it says "clips" exactly on the CPUs whose kernel does, and the engine then keeps
the int8 prefill graph closed (a user on an AVX2-only laptop gets exact prompts, not clipped ones)."""

from __future__ import annotations

import platform
from pathlib import Path

import pytest

from qwen_desktop.engine.int8_check import int8_products_clip
from qwen_desktop.engine.model_files import load_model_files
from qwen_desktop.engine.session import INT8_PREFILL_ENV, OnnxModel


def _cpu_flags() -> set[str] | None:
    info = Path("/proc/cpuinfo")
    if platform.machine() not in ("x86_64", "AMD64") or not info.exists():
        return None
    for line in info.read_text().splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return None


def test_the_check_agrees_with_the_cpu_flags():
    """ONNX Runtime adds int8 products in 32 bits with VNNI or AMX and in clipping 16-bit pairs without."""
    flags = _cpu_flags()
    if flags is None:
        pytest.skip("needs an x86-64 Linux CPU to read its flags")
    exact = bool(flags & {"avx512_vnni", "avx_vnni", "amx_int8"})
    assert int8_products_clip() is not exact


def test_where_the_kernel_clips_the_prefill_graph_stays_closed_unless_asked(tiny_model_dir, monkeypatch):
    files = load_model_files(tiny_model_dir)
    assert files.prefill_graph is not None
    model = OnnxModel(files, threads=1, max_len=64)
    if int8_products_clip():
        assert model.prefill_session is None
        assert "clips" in (model.prefill_skipped or "")
        assert set(model.graph_files) == {"decode", "head"}  # its weights are not even mapped
    else:
        assert model.prefill_session is not None and model.prefill_skipped is None
    monkeypatch.setenv(INT8_PREFILL_ENV, "on")  # for measuring the two-graph path on such a CPU
    forced = OnnxModel(files, threads=1, max_len=64)
    assert forced.prefill_session is not None and forced.prefill_skipped is None
    lean = OnnxModel(files, threads=1, max_len=64, prefill=False)
    assert lean.prefill_skipped == "Use less memory"


def test_the_shipped_probe_is_the_graph_probe_graph_writes_and_loading_needs_no_onnx_package():
    # the probe is read from data/ at each load: importing onnx to build it took 0.9 s of a 1.6 s load
    import subprocess
    import sys
    from importlib import resources

    from qwen_desktop.engine.int8_check import PROBE_FILE, probe_graph

    assert resources.files("qwen_desktop").joinpath(PROBE_FILE).read_bytes() == probe_graph(), (
        "regenerate qwen_desktop/data/int8_probe.onnx from int8_check.probe_graph()"
    )
    code = (
        "import sys; from qwen_desktop.engine.int8_check import int8_products_clip; int8_products_clip(); "
        "print('onnx' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
