"""The real Qwen2.5-Coder-0.5B-Instruct GGUF builds and answers (skipped when the file is absent)."""

from __future__ import annotations

import json

import jinja2
import numpy as np
import pytest
from tokenizers import Tokenizer

from qwen_desktop.models.builder import build_model
from qwen_desktop.models.manifest import read_manifest
from tests.onnx_steps import StepRunner

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

# A fixed ~300-token text (code and prose) for the next-token agreement figure.
AGREEMENT_TEXT = (
    "def merge_sorted(a, b):\n"
    '    """Merge two sorted lists into one sorted list."""\n'
    "    result = []\n"
    "    i = j = 0\n"
    "    while i < len(a) and j < len(b):\n"
    "        if a[i] <= b[j]:\n"
    "            result.append(a[i])\n"
    "            i += 1\n"
    "        else:\n"
    "            result.append(b[j])\n"
    "            j += 1\n"
    "    result.extend(a[i:])\n"
    "    result.extend(b[j:])\n"
    "    return result\n\n"
    "The function above walks both lists once, so it runs in linear time. A binary search tree keeps its keys "
    "ordered: every key in the left subtree is smaller than the node, every key in the right subtree is larger. "
    "Searching, inserting and deleting take time proportional to the height of the tree, which is logarithmic "
    "when the tree is balanced and linear in the worst case.\n\n"
    "class Stack:\n"
    "    def __init__(self):\n"
    "        self.items = []\n\n"
    "    def push(self, item):\n"
    "        self.items.append(item)\n\n"
    "    def pop(self):\n"
    "        if not self.items:\n"
    "            raise IndexError('pop from empty stack')\n"
    "        return self.items.pop()\n\n"
    "A stack is a last-in, first-out structure: the item pushed most recently is the first one popped. "
    "Queues work the other way round, and Python's collections.deque gives both ends in constant time. "
    "For a priority queue, the heapq module keeps a list arranged as a binary heap.\n"
)


@pytest.fixture(scope="module")
def real_builds(real_gguf, tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    return {
        "int4": build_model(real_gguf, root / "int4").folder,
        "fp32": build_model(real_gguf, root / "fp32", precision="fp32").folder,
    }


def _chat_prompt(folder, question):
    m = read_manifest(folder)
    template = jinja2.Environment(autoescape=False).from_string(m["chat_template"])
    text = template.render(messages=[{"role": "user", "content": question}], add_generation_prompt=True)
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    return tok, tok.encode(text, add_special_tokens=False).ids, m


def _greedy(folder, question, n):
    tok, ids, m = _chat_prompt(folder, question)
    run = StepRunner(folder)
    logits = run.forward(ids)[-1]
    out = []
    for _ in range(n):
        t = int(np.argmax(logits))
        if t in m["eos_token_ids"]:
            break
        out.append(t)
        logits = run.forward([t])[-1]
    return tok.decode(out)


def test_manifest_of_the_real_model(real_builds):
    m = read_manifest(real_builds["int4"])
    assert m["end_of_turn_id"] == 151645
    assert m["eos_token_ids"][:2] == [151645, 151643]
    assert m["config"]["num_layers"] == 24 and m["config"]["num_kv_heads"] == 2
    assert (
        m["source"]["files"][0]["sha256"]
        == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    )
    tokens = json.loads((real_builds["int4"] / "tokenizer.json").read_text())
    added = {t["content"] for t in tokens["added_tokens"]}
    assert {"<|im_start|>", "<|im_end|>", "<|fim_prefix|>", "<tool_call>"} <= added


@pytest.mark.parametrize("precision", ["int4", "fp32"])
def test_real_model_writes_a_python_function(real_builds, precision):
    answer = _greedy(real_builds[precision], "Write a Python function that reverses a string.", 80)
    assert "def " in answer, answer


def test_int4_agrees_with_fp32_on_the_next_token(real_builds, record_property):
    tok = Tokenizer.from_file(str(real_builds["fp32"] / "tokenizer.json"))
    ids = tok.encode(AGREEMENT_TEXT, add_special_tokens=False).ids
    assert 250 <= len(ids) <= 350
    picks = {}
    for precision, folder in real_builds.items():
        picks[precision] = StepRunner(folder).forward(ids).argmax(-1)
    agreement = float((picks["int4"] == picks["fp32"]).mean())
    record_property("int4_fp32_agreement", agreement)
    print(f"int4 vs fp32 next-token agreement: {agreement:.1%} over {len(ids)} positions")
    assert agreement >= 0.90


def test_prompts_through_the_prefill_graph_agree_with_fp32(real_builds, record_property):
    from qwen_desktop.engine.model_files import load_model_files
    from qwen_desktop.engine.session import OnnxModel

    tok = Tokenizer.from_file(str(real_builds["fp32"] / "tokenizer.json"))
    ids = tok.encode(AGREEMENT_TEXT, add_special_tokens=False).ids
    want = StepRunner(real_builds["fp32"]).forward(ids).argmax(-1)
    model = OnnxModel(load_model_files(real_builds["int4"]), threads=2, max_len=512)
    assert model.prefill_session is not None
    agreement = float((model.forward(ids, keep=len(ids)).argmax(-1) == want).mean())
    record_property("prefill_fp32_agreement", agreement)
    print(f"prefill graph vs fp32 next-token agreement: {agreement:.1%} over {len(ids)} positions")
    assert agreement >= 0.90
