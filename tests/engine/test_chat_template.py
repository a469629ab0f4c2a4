"""A model's chat template is untrusted code: it renders under a budget, and one that goes over (or breaks)
is refused with one line, through the engine and the CLI, never a freeze or a MemoryError."""

from __future__ import annotations

import json
import shutil

import pytest

from qwen_desktop.cli import main
from qwen_desktop.convert.tiny import CHATML_TEMPLATE
from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.chat_template import TemplateError, render_chat
from qwen_desktop.engine.errors import ModelError

CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]

# (template, words the one-line error must contain); issue 25 defect 3, and ways around a naive budget.
HOSTILE = {
    "nested loops": (
        "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        "loop steps",
    ),
    "huge repeat": ("{{ 'a' * 4000000000 }}", "budget"),
    "center filter": ("{{ 'a'|center(4000000000) }}", "budget"),
    "center method": ("{{ 'a'.center(4000000000) }}", "budget"),
    "percent width": ("{{ '%4000000000d' % 1 }}", "wider"),
    "star width": ("{{ '%*d' % (4000000000, 1) }}", "budget"),
    "format width": ("{{ '{:>4000000000}'.format(1) }}", "wider"),
    "doubling ~": (
        "{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "too much text",
    ),
    "doubling +": (
        "{% set ns = namespace(s='a') %}{% for i in range(60) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "too much text",
    ),
    "power": ("{{ 9 ** (9 ** 9) }}", "too large"),
    "join of repeats": ("{{ (['x' * 1000000] * 1000000)|join }}", "budget"),
    "exponential macro": (
        "{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(40) }}",
        "loop steps",
    ),
    "endless recursion": ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "nests too deeply"),
    "set block": (
        "{% set b = 'x' * 1000000 %}{% set y %}{% for i in range(1000) %}{{ b }}{% endfor %}{% endset %}",
        "too much text",
    ),
    "literal in a loop": ("{% for i in range(90000) %}" + "z" * 1000 + "{% endfor %}", "too much text"),
    "replace blow-up": ("{% set s = 'a' * 100000 %}{{ s|replace('a', 'b' * 1000) }}", "budget"),
    "indent blow-up": ("{{ ('a\\n' * 100000)|indent(1000) }}", "budget"),
    "raise_exception": ("{{ raise_exception('only user and assistant roles') }}", "only user and assistant"),
    "syntax error": ("{% for %}", "failed"),
    "python objects": ("{{ messages.__class__.__mro__ }}", "unsafe"),
    "template too long": ("x" * 300_000, "too long"),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_template_is_refused_in_one_line(name):
    template, words = HOSTILE[name]
    with pytest.raises(TemplateError) as info:
        render_chat(template, CHAT)
    msg = str(info.value)
    assert isinstance(info.value, ModelError)
    assert words in msg and "\n" not in msg and msg.startswith("the model's chat template")


def test_real_templates_render_long_chats_within_the_budget():
    long_chat = [{"role": "user", "content": "word " * 200_000}, *CHAT * 200]
    text = render_chat(CHATML_TEMPLATE, long_chat)
    assert text.count("<|im_start|>") == 1 + len(long_chat) + 1 and text.endswith("<|im_start|>assistant\n")
    assert render_chat(None, CHAT).startswith("<|im_start|>user\nhi<|im_end|>")


def test_budget_scales_with_the_messages():
    # One step per character of the messages is fine for a template that loops over them.
    template = "{% for m in messages %}{% for c in m.content %}{{ c }}{% endfor %}{% endfor %}"
    chat = [{"role": "user", "content": "y" * 300_000}]
    assert render_chat(template, chat) == "y" * 300_000


def _with_template(model_dir, tmp_path, template):
    folder = tmp_path / "model"
    shutil.copytree(model_dir, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["chat_template"] = template
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_chat_engine_refuses_a_freezing_template(tiny_model_dir, tmp_path):
    folder = _with_template(tiny_model_dir, tmp_path, HOSTILE["nested loops"][0])
    engine = ChatEngine(folder, warm_up=False, cache_root=tmp_path / "ort")
    with pytest.raises(ModelError, match="loop steps"):
        engine.plan(CHAT, 64)


def test_cli_chat_with_a_hostile_template_prints_one_line(tiny_model_dir, tmp_path, capsys):
    folder = _with_template(tiny_model_dir, tmp_path, HOSTILE["huge repeat"][0])
    code = main(["chat", "--model", str(folder), "--prompt", "hi", "--threads", "1"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert [ln for ln in err.splitlines() if ln.startswith("qwen-desktop: error:")] == [
        "qwen-desktop: error: the model's chat template repeats a value past the budget (1 x 4,000,000,000)"
    ]
