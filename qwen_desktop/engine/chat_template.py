"""Render a conversation with the model's chat template (Qwen's ChatML, stored with the model).

A template comes with a downloaded model file, so it is untrusted code: it runs in jinja2's immutable sandbox
(no Python objects, no file or network access) and under a budget. Every loop step, call, filter and
intercepted operator costs a step, and every string a template makes (by ``+``, ``~``, ``*``, ``%``, a filter,
a method, or its output) counts towards a character budget; both scale with the size of the messages. Sizes
are checked before an operation that could make a huge value (``'a' * 4000000000``, ``center(10**9)``), so a
template that goes over gets a one-line :class:`TemplateError`, never a freeze or a MemoryError.
"""

from __future__ import annotations

import datetime
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from qwen_desktop.engine.errors import ModelError

Message = dict[str, str]

# Used when a model carries no template: Qwen's ChatML.
CHATML_FALLBACK = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# The budget (docs/models.md, "Limits"). Real templates use a few hundred steps and about 3x the messages'
# characters; these leave a wide margin and still stop a runaway template in well under a second.
MAX_TEMPLATE_CHARS = 256_000
BASE_STEPS = 100_000
STEPS_PER_MESSAGE_CHAR = 4
BASE_CHARS = 2_000_000
CHARS_PER_MESSAGE_CHAR = 16
MAX_INT_BITS = 4096  # integers a template computes (no 10**10**10)
_DIGITS = re.compile(r"\d+")


class TemplateError(ModelError, ValueError):
    """The chat template could not render these messages (the message says why in one line)."""


class _Budget:
    def __init__(self, message_chars: int) -> None:
        self.steps_left = BASE_STEPS + STEPS_PER_MESSAGE_CHAR * message_chars
        self.max_steps = self.steps_left
        self.chars_left = BASE_CHARS + CHARS_PER_MESSAGE_CHAR * message_chars
        self.max_chars = self.chars_left

    def step(self, n: int = 1) -> None:
        self.steps_left -= n
        if self.steps_left < 0:
            raise TemplateError(
                f"the model's chat template runs too long (over {self.max_steps:,} loop steps and calls)"
            )

    def chars(self, n: int) -> None:
        self.chars_left -= n
        if self.chars_left < 0:
            raise TemplateError(
                f"the model's chat template makes too much text (over {self.max_chars:,} characters)"
            )


_active: ContextVar[_Budget | None] = ContextVar("chat_template_budget", default=None)


def _budget() -> _Budget:
    budget = _active.get()
    if budget is None:
        # Outside a render (jinja2 folding constants while compiling): do not run it now.
        from jinja2.nodes import Impossible

        raise Impossible()
    return budget


def _size(value: Any, cap: int = 1 << 40) -> int:
    """About how many characters ``value`` prints as (lists count what they hold, each time it is held);
    stops counting past ``cap``."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list | tuple):
        total = len(value)
        for item in value:
            if total > cap:
                break
            total += _size(item, cap - total)
        return total
    return 0


def _check_number(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > MAX_INT_BITS:
        raise TemplateError("the model's chat template computes a number that is too large")


def _check_widths(fmt: str, budget: _Budget) -> None:
    """A format string's widths and precisions (``'%4000000000d'``, ``'{:>99999999}'``) must fit the budget."""
    for run in _DIGITS.findall(fmt):
        if len(run) > 12 or int(run) > budget.chars_left:
            raise TemplateError("the model's chat template formats a value wider than the budget allows")


def _check_args(args: Iterable[Any], budget: _Budget) -> None:
    """Widths given to a filter or string method (center, ljust, indent, ...) must fit the budget."""
    for a in args:
        if isinstance(a, int | float) and not isinstance(a, bool) and abs(a) > budget.chars_left:
            raise TemplateError("the model's chat template asks for a string larger than the budget allows")


def _joined_size(sep: Any, items: list[Any], cap: int) -> int:
    seps = len(sep) * max(len(items) - 1, 0) if isinstance(sep, str) else 0
    return seps + _size(items, cap) + 32 * len(items)


def _replaced_size(s: Any, old: Any, new: Any, count: Any = -1) -> int:
    if not (isinstance(s, str) and isinstance(old, str) and isinstance(new, str)):
        return 0
    n = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        n = min(n, count)
    return len(s) + n * (len(new) - len(old))


def _precheck(
    name: str, target: Any, args: tuple[Any, ...], kwargs: dict[str, Any], budget: _Budget
) -> tuple[Any, ...]:
    """Refuse an operation whose result would be over the budget before it runs; returns the args to use."""
    _check_args((*args, *kwargs.values()), budget)
    if name == "join" and isinstance(target, str) and args:
        items = list(args[0])
        budget.step(len(items))
        if _joined_size(target, items, budget.chars_left) > budget.chars_left:
            raise TemplateError("the model's chat template joins more text than the budget allows")
        return (items,)
    if name == "replace" and len(args) >= 2 and _replaced_size(target, *args[:3]) > budget.chars_left:
        raise TemplateError("the model's chat template replaces into more text than the budget allows")
    if name == "expandtabs" and isinstance(target, str):
        tab = args[0] if args else kwargs.get("tabsize", 8)
        if isinstance(tab, int) and len(target) * max(tab, 1) > budget.chars_left:
            raise TemplateError("the model's chat template asks for a string larger than the budget allows")
    if name == "indent" and isinstance(target, str):
        width = args[0] if args else kwargs.get("width", 4)
        w = len(width) if isinstance(width, str) else width if isinstance(width, int) else 0
        if (target.count("\n") + 1) * w > budget.chars_left:
            raise TemplateError("the model's chat template indents more text than the budget allows")
    if name in ("format", "format_map") and isinstance(target, str):
        _check_widths(target, budget)
    return args


def _budgeted_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    def run(*args: Any, **kwargs: Any) -> Any:
        budget = _budget()
        budget.step()
        # filters receive (value, *args), or (context/env, value, *args) when they ask for it
        at = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
        value = args[at] if len(args) > at else None
        if name == "format" and isinstance(value, str):
            _check_widths(value, budget)
        _precheck(name, value, args[at + 1 :], kwargs, budget)
        if name == "join" and value is not None and not isinstance(value, str):
            items = list(value)  # materialized once, to size the result before making it
            budget.step(len(items))
            sep = args[at + 1] if len(args) > at + 1 else kwargs.get("d", "")
            if _joined_size(sep, items, budget.chars_left) > budget.chars_left:
                raise TemplateError("the model's chat template joins more text than the budget allows")
            args = (*args[:at], items, *args[at + 1 :])
        result = func(*args, **kwargs)
        budget.chars(_size(result, budget.chars_left))
        return result

    run.__name__ = getattr(func, "__name__", name)
    for attr in ("jinja_pass_arg",):
        if hasattr(func, attr):
            setattr(run, attr, getattr(func, attr))
    return run


def _counted_iter(iterable: Any) -> Iterator[Any]:
    return _counting(iterable, _budget())


def _counting(iterable: Any, budget: _Budget) -> Iterator[Any]:
    for item in iterable:
        budget.step()
        yield item


def _counted_range(*args: int) -> range:
    budget = _budget()
    for a in args:
        _check_number(a)
    r = range(*args)
    budget.step(len(r) if len(r) < 1 << 62 else 1 << 62)
    return r


def _raise(message: str) -> None:
    raise TemplateError(f"the model's chat template raised an error: {message}")


_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "**": operator.pow,
    "%": operator.mod,
    "//": operator.floordiv,
}


@lru_cache(maxsize=8)
def _compile(template: str) -> Any:
    from jinja2 import nodes
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class BudgetedEnvironment(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset(_OPS)

        def call_binop(self, context: Any, op: str, left: Any, right: Any) -> Any:
            budget = _budget()
            budget.step()
            _check_number(left)
            _check_number(right)
            if op == "*":
                for seq, n in ((left, right), (right, left)):
                    size = _size(seq, budget.chars_left)
                    if (
                        isinstance(n, int)
                        and not isinstance(n, bool)
                        and size
                        and size * n > budget.chars_left
                    ):
                        raise TemplateError(
                            f"the model's chat template repeats a value past the budget ({size:,} x {n:,})"
                        )
            elif op == "**":
                big = isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0
                if big and left.bit_length() * right > MAX_INT_BITS:
                    raise TemplateError("the model's chat template computes a number that is too large")
            elif op == "%" and isinstance(left, str):
                _check_widths(left, budget)
                _check_args(right if isinstance(right, tuple) else (right,), budget)  # '%*d' % (width, x)
            result = _OPS[op](left, right)
            budget.chars(_size(result, budget.chars_left))
            return result

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            budget = _budget()
            budget.step()
            _check_args((*args, *kwargs.values()), budget)
            method = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
            target = getattr(method, "__self__", None)
            if isinstance(target, str):
                args = _precheck(getattr(method, "__name__", ""), target, args, kwargs, budget)
            result = super().call(__context, __obj, *args, **kwargs)
            budget.chars(_size(result, budget.chars_left))
            return result

    # Sandboxed: a template comes with a downloaded model file and must not reach Python objects.
    env = BudgetedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.filters = {name: _budgeted_filter(name, f) for name, f in env.filters.items()}
    env.filters["qd_counted"] = _counted_iter
    env.filters["qd_sized"] = _budgeted_filter("qd_sized", lambda v: v)
    env.globals.pop("lipsum", None)  # lipsum(n=10**6) is a lot of work for a prompt
    env.globals["range"] = _counted_range
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(str(fmt)[:200])
    tree = env.parse(template)

    # Every loop's iterable is counted, and every ``~`` and every piece of output (top level, macro, set block)
    # is sized, through filters a template cannot redefine.
    def wrap(node: Any, name: str) -> Any:
        return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)

    for parent in list(tree.find_all(nodes.Node)):
        if isinstance(parent, nodes.For):
            parent.iter = wrap(parent.iter, "qd_counted")
        if isinstance(parent, nodes.Output):
            parent.nodes = [wrap(c, "qd_sized") for c in parent.nodes]
        for field in parent.fields:
            child = getattr(parent, field, None)
            if isinstance(child, nodes.Concat):
                setattr(parent, field, wrap(child, "qd_sized"))
            elif isinstance(child, list):
                child[:] = [wrap(c, "qd_sized") if isinstance(c, nodes.Concat) else c for c in child]
    return env.from_string(tree)


def _message_chars(messages: Sequence[Any]) -> int:
    total = 0
    for m in messages:
        if isinstance(m, dict):
            total += sum(len(v) for v in m.values() if isinstance(v, str))
    return total


def render_chat(template: str | None, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
    """The prompt text for ``messages`` (dicts with ``role`` and ``content``).

    Raises:
        TemplateError: (a :class:`ModelError`) the template is broken or goes over its budget.
    """
    source = template or CHATML_FALLBACK
    if len(source) > MAX_TEMPLATE_CHARS:
        raise TemplateError(
            f"the model's chat template is too long ({len(source):,} characters, the limit is "
            f"{MAX_TEMPLATE_CHARS:,})"
        )
    msgs = list(messages)
    token = _active.set(None)  # compiled with no budget, so nothing is folded at compile time
    try:
        compiled = _compile(source)
        _active.set(_Budget(_message_chars(msgs)))
        return "".join(
            compiled.generate(messages=msgs, add_generation_prompt=add_generation_prompt, tools=None)
        )
    except TemplateError:
        raise
    except RecursionError:
        raise TemplateError("the model's chat template nests too deeply") from None
    except MemoryError:
        raise TemplateError("the model's chat template ran out of memory") from None
    except Exception as exc:
        detail = " ".join(str(exc).split())[:200]
        raise TemplateError(f"the model's chat template failed: {detail or type(exc).__name__}") from None
    finally:
        _active.reset(token)
