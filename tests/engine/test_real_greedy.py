"""The real model's greedy answers through ``ChatEngine``, pinned word for word (skipped when it is absent).

A change to the session, the KV cache or generation that is meant to keep behaviour (a refactor) must
keep these exactly: the prompt through the int8 prefill graph, the reply through the 4-bit graph with
prompt lookup on, and "Use less memory" (everything on the 4-bit graph). Recorded with ONNX Runtime 1.32.0
per CPU kernel family (``kernel_family``); other kernels may break a near tie differently, so another ONNX
Runtime version or a family with no recording skips. A change that is meant to change the answers (a new
build default) records them again: run the test with ``-s`` and copy what it got; on a family with no
recording yet, ``QWEN_RECORD_ANSWERS=1`` runs it anyway and prints what to copy.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import onnxruntime as ort
import pytest

from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.generate import GREEDY

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

RECORDED_WITH = "1.32.0"
RECORD = os.environ.get("QWEN_RECORD_ANSWERS") == "1"
PARAMS = dataclasses.replace(GREEDY, max_tokens=40)
QUESTIONS = (
    "Write a Python function that reverses a string.",
    "用简单的话解释一下什么是递归。",
    "What is the difference between a list and a tuple in Python?",
)


def kernel_family() -> str:
    """The CPU as ONNX Runtime's int8 and 4-bit kernels see it: vendor and the widest integer dot-product
    extension. Different kernels round near ties differently, so answers are pinned per family."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown"
    vendor = next(
        (line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("vendor_id")), ""
    )
    flags = set(
        next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), [])
    )
    widest = next((f for f in ("amx_int8", "avx512_vnni", "avx_vnni", "avx2") if f in flags), "baseline")
    return f"{vendor}/{widest}"


# (kernel family, "Use less memory") -> the three answers, asked in turn of one engine. Recorded with the
# default build of 5f41ba8 (down_proj rounded plainly) on a 2-vCPU Intel Xeon; the AMD ones with the default
# build of 53e72ee on a 2-vCPU AMD EPYC Zen 5 (twice, the same).
ANSWERS = {
    ("GenuineIntel/amx_int8", False): (
        "Here's a simple Python function to reverse a string:\n\n```python\ndef reverse_string(s):\n    # Initialize an empty string to store the reversed string\n    reversed_string = ''\n    \n    # Iterate",
        "递归是一种在函数中调用自身的方法，通过重复地调用自身来解决问题的方法。递归是一种非常强大的编程技术，它在许多编程语言中被广泛使用。",
        "Can you explain the differences between a list and a tuple in Python?",
    ),
    ("GenuineIntel/amx_int8", True): (
        "Here's a simple Python function to reverse a string:\n\n```python\ndef reverse_string(s):\n    # Initialize an empty string to store the reversed string\n    reversed_string = ''\n    \n    # Iterate",
        "递归是一种在函数中调用自身的方法，通过重复调用自身来解决复杂问题的方法。递归是一种非常强大的编程技术，它在许多领域都有广泛的应用，包括数据",
        "Can you explain the differences between a list and a tuple in Python?",
    ),
    ("AuthenticAMD/avx512_vnni", False): (
        "Here's a simple Python function to reverse a string:\n\n```python\ndef reverse_string(s):\n    # Initialize an empty string to store the reversed string\n    reversed_string = ''\n    \n    # Iterate",
        "递归是一种在函数中调用自身的方法，通过重复调用自身来解决问题的方法。递归是一种非常强大的编程语言，因为它可以解决复杂的问题，如计算斐波那",
        "Can you explain the differences between a list and a tuple in Python?",
    ),
    ("AuthenticAMD/avx512_vnni", True): (
        "Here's a simple Python function to reverse a string:\n\n```python\ndef reverse_string(s):\n    # Initialize an empty string to store the reversed string\n    reversed_string = ''\n    \n    # Iterate",
        "递归是一种在函数中调用自身的方法，通过重复地调用自身来解决问题的方法。递归是一种非常强大的编程技术，它在许多领域都有广泛的应用，包括编程",
        "Can you explain the differences between a list and a tuple in Python?",
    ),
}


@pytest.mark.parametrize("low_memory", [False, True], ids=["default", "use-less-memory"])
def test_the_real_models_greedy_answers_are_the_recorded_ones(real_int4_dir, tmp_path, low_memory):
    if ort.__version__ != RECORDED_WITH:
        pytest.skip(f"answers recorded with ONNX Runtime {RECORDED_WITH}, this is {ort.__version__}")
    want = ANSWERS.get((kernel_family(), low_memory))
    if want is None and not RECORD:
        pytest.skip(f"no answers recorded for {kernel_family()} (record them from a run on such a CPU)")
    engine = ChatEngine(
        real_int4_dir, threads=2, context_limit=2048, cache_root=tmp_path / "ort", low_memory=low_memory
    )
    # one engine answers all three in turn: each later question runs on a cache the earlier one left
    got = tuple(engine.complete(question, PARAMS)[0] for question in QUESTIONS)
    print(f"\n{kernel_family()}, use less memory {low_memory}: {got!r}")
    if want is None:
        pytest.skip(f"recorded for {kernel_family()}: copy the printed answers into ANSWERS")
    assert got == want
