"""Render a conversation with the model's chat template (Qwen's ChatML, stored with the model)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

Message = dict[str, str]

# Used when a model carries no template: Qwen's ChatML.
CHATML_FALLBACK = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


class TemplateError(ValueError):
    """The chat template could not render these messages."""


def _raise(message: str) -> None:
    raise TemplateError(message)


@lru_cache(maxsize=8)
def _compile(template: str) -> Any:
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    # Sandboxed: a template comes with a downloaded model file and must not reach Python objects.
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env.from_string(template)


def render_chat(template: str | None, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
    """The prompt text for ``messages`` (dicts with ``role`` and ``content``)."""
    try:
        compiled = _compile(template or CHATML_FALLBACK)
        return str(
            compiled.render(messages=list(messages), add_generation_prompt=add_generation_prompt, tools=None)
        )
    except TemplateError:
        raise
    except Exception as exc:
        raise TemplateError(f"the model's chat template failed: {exc}") from exc
