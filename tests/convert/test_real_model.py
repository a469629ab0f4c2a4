"""The real Qwen2.5-Coder-0.5B-Instruct GGUF builds and answers (skipped when the file is absent)."""

from __future__ import annotations

import json

import jinja2
import numpy as np
import pytest
from tokenizers import Tokenizer

from qwen_desktop.convert.builder import build_model
from qwen_desktop.engine.manifest import read_manifest
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


# A ~440-token ChatML conversation (code, Chinese, prose), not in the builder's calibration text: the
# agreement figure is over both texts, 725 positions (one position is 0.14 points).
CHAT_TEXT = (
    "<|im_start|>system\n"
    "You are a helpful assistant.<|im_end|>\n"
    "<|im_start|>user\n"
    "How can I make my Flask app return JSON errors instead of HTML pages?<|im_end|>\n"
    "<|im_start|>assistant\n"
    "Register an error handler for `HTTPException` and build the response yourself:\n"
    "\n"
    "```python\n"
    "from flask import Flask, jsonify\n"
    "from werkzeug.exceptions import HTTPException\n"
    "\n"
    "app = Flask(__name__)\n"
    "\n"
    "@app.errorhandler(HTTPException)\n"
    "def handle_http_error(err):\n"
    "    response = jsonify(error=err.name, message=err.description)\n"
    "    response.status_code = err.code\n"
    "    return response\n"
    "```\n"
    "\n"
    'Now a missing page returns `{"error": "Not Found", ...}` with status 404. For unexpected exceptions, add a second handler for `Exception` that logs the traceback and returns a 500.<|im_end|>\n'
    "<|im_start|>user\n"
    "用简单的话解释一下区块链是什么。<|im_end|>\n"
    "<|im_start|>assistant\n"
    '区块链可以理解为一本由很多人共同保管的账本。每一页记录一批交易，叫做一个"区块"，每个新区块都包含前一个区块的指纹，所以它们像链条一样连在一起。如果有人想偷偷修改旧的记录，指纹就会对不上，其他保管账本的人马上就能发现。<|im_end|>\n'
    "<|im_start|>user\n"
    "What is the difference between a process and a thread?<|im_end|>\n"
    "<|im_start|>assistant\n"
    "A process is a running program with its own memory space, file handles and resources. A thread is a path of execution inside a process; all threads of one process share its memory. Creating a thread is cheaper than creating a process, and threads can exchange data directly, but that sharing is also why they need locks to avoid corrupting each other's data. Processes are isolated: one crashing usually does not take the others down.<|im_end|>\n"
    "<|im_start|>user\n"
    "Sort this list of numbers in Go: 5, 2, 9, 1<|im_end|>\n"
    "<|im_start|>assistant\n"
    "```go\n"
    "package main\n"
    "\n"
    "import (\n"
    '\t"fmt"\n'
    '\t"sort"\n'
    ")\n"
    "\n"
    "func main() {\n"
    "\tnums := []int{5, 2, 9, 1}\n"
    "\tsort.Ints(nums)\n"
    "\tfmt.Println(nums) // [1 2 5 9]\n"
    "}\n"
    "```<|im_end|>\n"
)


@pytest.fixture(scope="module")
def real_builds(real_gguf, real_int4_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("real")
    return {
        "int4": real_int4_dir,
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


def _log_softmax(logits):
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def test_int4_agrees_with_fp32_on_the_next_token(real_builds, record_property):
    tok = Tokenizer.from_file(str(real_builds["fp32"] / "tokenizer.json"))
    same, kls = [], []
    for text in (AGREEMENT_TEXT, CHAT_TEXT):
        ids = tok.encode(text, add_special_tokens=False).ids
        assert 250 <= len(ids) <= 500
        want = _log_softmax(StepRunner(real_builds["fp32"]).forward(ids))
        got = _log_softmax(StepRunner(real_builds["int4"]).forward(ids))
        same.append(got.argmax(-1) == want.argmax(-1))
        kls.append((np.exp(want) * (want - got)).sum(-1))
    agreement = float(np.concatenate(same).mean())
    kl = float(np.concatenate(kls).mean())
    record_property("int4_fp32_agreement", agreement)
    record_property("int4_fp32_kl", kl)
    print(
        f"int4 vs fp32 next-token agreement: {agreement:.1%} over {len(np.concatenate(same))} positions "
        f"({', '.join(f'{s.mean():.1%}' for s in same)}), mean KL divergence {kl:.4f}"
    )
    assert agreement >= 0.90
    # the fitted build (docs/models.md): ~0.039 on this machine's kernels, the plain fit's 0.048
    assert kl < 0.045


def test_prompts_through_the_prefill_graph_agree_with_fp32(real_builds, record_property):
    from qwen_desktop.engine.model_files import load_model_files
    from qwen_desktop.engine.session import OnnxModel

    tok = Tokenizer.from_file(str(real_builds["fp32"] / "tokenizer.json"))
    ids = tok.encode(AGREEMENT_TEXT, add_special_tokens=False).ids
    want = StepRunner(real_builds["fp32"]).forward(ids).argmax(-1)
    model = OnnxModel(load_model_files(real_builds["int4"]), threads=2, max_len=512)
    from qwen_desktop.engine.int8_check import int8_products_clip

    # where the int8 kernel clips, prompts run on the 4-bit graph (engine/int8_check.py): measure that
    assert (model.prefill_session is None) is int8_products_clip()
    agreement = float((model.forward(ids, keep=len(ids)).argmax(-1) == want).mean())
    record_property("prefill_fp32_agreement", agreement)
    print(f"prefill graph vs fp32 next-token agreement: {agreement:.1%} over {len(ids)} positions")
    assert agreement >= 0.90
