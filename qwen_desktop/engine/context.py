"""Fit a conversation into the context window, counted in the model's own tokens.

The system prompt and the newest turns are kept, room is reserved for the reply, and the caller is told
what was dropped. Old turns leave in steps of a quarter of the budget, so the kept history starts at the same
message for many turns and the KV cache keeps serving it. A single message too long for the window is cut in the middle with a notice.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from qwen_desktop.engine.chat_template import Message, render_chat
from qwen_desktop.engine.tokenizer import ChatTokenizer

TRIM_MARK = "\n[… trimmed to fit the context …]\n"
MIN_REPLY_ROOM = 16
# Old turns are dropped in steps of this share of the prompt budget (see ContextBuilder._drop_count).
DROP_STEP = 0.25
# Placeholders the template renders in place of message contents (private-use characters).
_MARK_OPEN, _MARK_CLOSE = "\ue000", "\ue001"
_MARK = re.compile(f"{_MARK_OPEN}([0-9]{{1,9}}){_MARK_CLOSE}")


def reply_reserve(limit: int, reply_room: int) -> int:
    """The tokens held back for the answer in a ``limit``-token context when the reply setting asks for
    ``reply_room``: at least ``MIN_REPLY_ROOM``, at most half the limit (a long reply setting never crowds
    out the question)."""
    return max(MIN_REPLY_ROOM, min(reply_room, limit // 2))


@dataclass(frozen=True)
class ContextPlan:
    """The prompt to run and what it cost.

    Attributes:
        prompt: token ids of the rendered conversation, ending with the assistant's opening.
        messages: the messages that made it in (after dropping and trimming).
        dropped: how many of the oldest non-system messages were left out.
        trimmed: whether a message had to be cut to fit.
        reply_room: tokens left for the answer (``limit - len(prompt)``).
        reserved: tokens held back for the answer when choosing what fits (the reply setting, capped at half
            the limit): the prompt may use ``limit - reserved``, so ``used + reserved`` is what a meter shows.
        system_tokens / history_tokens: the prompt split into system prompt and conversation.
    """

    prompt: list[int]
    messages: list[Message]
    dropped: int
    trimmed: bool
    limit: int
    reply_room: int
    system_tokens: int
    history_tokens: int
    reserved: int = 0

    @property
    def used(self) -> int:
        return len(self.prompt)

    def notice(self) -> str | None:
        """A sentence for the user when something was left out, else None."""
        parts = []
        if self.dropped:
            parts.append(f"{self.dropped} older message{'s' if self.dropped != 1 else ''} left out")
        if self.trimmed:
            parts.append("a message was shortened")
        return ("To fit the context: " + ", ".join(parts) + ".") if parts else None


class ContextBuilder:
    """Renders and counts conversations for one tokenizer and chat template."""

    def __init__(self, tokenizer: ChatTokenizer, template: str | None) -> None:
        self.tokenizer = tokenizer
        self.template = template

    def encode(self, messages: Sequence[Message]) -> list[int]:
        """The prompt ids of ``messages``: only the template's own markers become special tokens.

        The template renders placeholders for the contents, so its output tells its own text from the
        messages'. Special-token strings in the template's text become their ids; everything between two of
        them (template text and message contents alike) is tokenized as plain text, in one piece, so a
        conversation whose contents hold no such strings gets the ids a whole-string encode would give.
        """
        marks = [f"{_MARK_OPEN}{i}{_MARK_CLOSE}" for i in range(len(messages))]
        shown = [{**m, "content": marks[i]} for i, m in enumerate(messages)]
        rendered = render_chat(self.template, shown, add_generation_prompt=True)
        ids: list[int] = []
        plain: list[str] = []  # text since the last special token

        def flush() -> None:
            ids.extend(self.tokenizer.encode_text("".join(plain)))
            plain.clear()

        at = 0
        for match in _MARK.finditer(rendered):
            self._add_template_text(rendered[at : match.start()], ids, plain, flush)
            index = int(match.group(1))
            if index < len(messages):
                plain.append(messages[index]["content"])
            at = match.end()
        self._add_template_text(rendered[at:], ids, plain, flush)
        flush()
        return ids

    def _add_template_text(
        self, text: str, ids: list[int], plain: list[str], flush: Callable[[], None]
    ) -> None:
        for piece, special in self.tokenizer.split_special(text):
            if special:
                flush()
                ids.append(self.tokenizer.special_ids[piece])
            else:
                plain.append(piece)

    def plan(self, messages: Sequence[Message], limit: int, reply_room: int) -> ContextPlan:
        """Choose what fits in ``limit`` tokens while leaving ``reply_room`` for the answer.

        ``reply_room`` is capped at half the limit, so a long reply setting never crowds out the question.
        """
        reply_room = reply_reserve(limit, reply_room)
        budget = limit - reply_room
        msgs = list(messages)
        system = msgs[:1] if msgs and msgs[0]["role"] == "system" else []
        rest = msgs[len(system) :]
        dropped = 0
        ids = self.encode(system + rest)
        if len(ids) > budget and len(rest) > 1:
            keep = len(rest) - self._drop_count(system, rest, budget)
            while True:
                ids = self.encode(system + rest[-keep:])
                if len(ids) <= budget or keep == 1:
                    break
                keep -= 1
            dropped = len(rest) - keep
            rest = rest[-keep:]
        trimmed = False
        if len(ids) > budget:
            system, rest = self._trim(system, rest, budget)
            ids = self.encode(system + rest)
            trimmed = True
        sys_tokens = len(self.encode(system)) if system else 0
        return ContextPlan(
            prompt=ids,
            messages=system + rest,
            dropped=dropped,
            trimmed=trimmed,
            limit=limit,
            reply_room=limit - len(ids),
            system_tokens=sys_tokens,
            history_tokens=len(ids) - sys_tokens,
            reserved=reply_room,
        )

    def _drop_count(self, system: list[Message], rest: list[Message], budget: int) -> int:
        """How many of the oldest messages to leave out: in steps, so the kept history starts at the same
        message turn after turn.

        Dropping only the fewest messages that make room would move the start of the prompt on every turn
        once the context is full, and a moved start makes the KV cache useless (the whole history is read
        again before each answer). So the tokens to drop are rounded up to a multiple of a quarter of the
        budget, counted from the start of the conversation: the cut stays put until the conversation grows
        by another quarter, then moves once. Deterministic from the messages alone: the window's meter, the
        read-ahead and the answer all get the same cut.
        """
        base = len(self.encode(system))
        wrap: dict[str, int] = {}  # what the template adds around a message of each role, measured
        for role in {m["role"] for m in rest}:
            probe = {"role": role, "content": "x"}
            wrap[role] = len(self.encode([*system, probe])) - base - self.tokenizer.count("x")
        sizes = [self.tokenizer.count(m["content"]) + wrap[m["role"]] for m in rest]
        need = max(1, base + sum(sizes) - budget)
        step = max(1, int(budget * DROP_STEP))
        target = -(-need // step) * step
        last = len(rest) - 1
        drop, cut = 0, 0
        while drop < last and cut < target:
            cut += sizes[drop]
            drop += 1
        return drop

    def _trim(
        self, system: list[Message], rest: list[Message], budget: int
    ) -> tuple[list[Message], list[Message]]:
        """Cut the middle out of the longest message(s) until the prompt fits: the start (context) and the
        end (usually the actual question) survive."""
        system = [dict(m) for m in system]
        rest = [dict(m) for m in rest]
        for _ in range(8):
            over = len(self.encode(system + rest)) - budget
            if over <= 0:
                break
            target = max(system + rest, key=lambda m: len(m["content"]))
            ids = self.tokenizer.encode_text(target["content"])
            keep = max(0, len(ids) - over - self.tokenizer.count(TRIM_MARK) - 8)
            head, tail = keep // 2, keep - keep // 2
            target["content"] = (
                self.tokenizer.decode(ids[:head])
                + TRIM_MARK
                + (self.tokenizer.decode(ids[-tail:]) if tail else "")
            )
        return system, rest
