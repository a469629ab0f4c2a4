"""The real model's greedy answers through ``ChatEngine``, pinned word for word (skipped when it is absent).

A change to the session, the KV cache or generation that is meant to keep behaviour (a refactor) must
keep these exactly: the prompt through the int8 prefill graph, the reply through the 4-bit graph with
prompt lookup on, and "Use less memory" (everything on the 4-bit graph). Recorded with ONNX Runtime 1.32.0
on AMD EPYC Zen 4; other kernels may break a near tie differently, so another version skips.
"""

from __future__ import annotations

import dataclasses

import onnxruntime as ort
import pytest

from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.generate import GREEDY

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

RECORDED_WITH = "1.32.0"
PARAMS = dataclasses.replace(GREEDY, max_tokens=40)
QUESTIONS = (
    "Write a Python function that reverses a string.",
    "用简单的话解释一下什么是递归。",
    "What is the difference between a list and a tuple in Python?",
)
ANSWERS = {
    False: (
        "Here's a simple Python function to reverse a string:\n\n```python\ndef reverse_string(s):\n"
        "    # Reverse the string using slicing\n    return s[::-1]\n```\n\nThis function takes a string",
        "递归是一种在函数中调用自身的方法，通过重复调用来解决复杂问题的方法。",
        "Can you explain the differences between a list and a tuple in Python?",
    ),
    True: (
        "Here's a simple Python function to reverse a string:\n\n```python\ndef reverse_string(s):\n"
        "    # Reverse the string using slicing\n    return s[::-1]\n\n# Example usage\ninput_string =",
        "递归是一种在函数中调用自身的方法，通过重复地调用自身来解决复杂问题的方法。递归是一种非常强大的编程技术，"
        "它允许我们解决复杂问题，而不需要",
        "Can you explain the differences between a list and a tuple in Python?",
    ),
}


@pytest.mark.parametrize("low_memory", [False, True], ids=["default", "use-less-memory"])
def test_the_real_models_greedy_answers_are_the_recorded_ones(real_int4_dir, tmp_path, low_memory):
    if ort.__version__ != RECORDED_WITH:
        pytest.skip(f"answers recorded with ONNX Runtime {RECORDED_WITH}, this is {ort.__version__}")
    engine = ChatEngine(
        real_int4_dir, threads=2, context_limit=2048, cache_root=tmp_path / "ort", low_memory=low_memory
    )
    # one engine answers all three in turn: each later question runs on a cache the earlier one left
    got = tuple(engine.complete(question, PARAMS)[0] for question in QUESTIONS)
    assert got == ANSWERS[low_memory]
