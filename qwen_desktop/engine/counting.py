"""``PlanCounter``: works out the context plan of a draft on its own thread, the newest request only.

The window shows how much of the context a conversation and the message being typed will use. Rendering
the chat template and tokenizing a long chat takes tens to hundreds of milliseconds, far too long for the
GUI thread on every keystroke, and it must not wait behind an answer on the engine host's thread either:
the plan reads only the tokenizer and the template, which are never changed while a model is loaded.

Requests replace each other: while one is counted, newer ones overwrite the waiting slot, so a burst of
keystrokes costs at most two counts. The result goes to the request's callback on the counter's thread.
Nothing here knows Qt.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qwen_desktop.engine.chat import ChatEngine
    from qwen_desktop.engine.chat_template import Message
    from qwen_desktop.engine.context import ContextPlan

log = logging.getLogger(__name__)

PlanCallback = Callable[["ContextPlan | None", "str | None"], None]
"""Called with the plan and None, or None and a one-line reason (no model, a template that failed)."""


@dataclass
class _Request:
    messages: list[Message]
    max_tokens: int
    done: PlanCallback


class PlanCounter:
    """One daemon thread ("plan-counter") that answers the newest ``request`` with the engine's plan.

    Args:
        engine: returns the engine to count with, or None when no model is loaded; read at each count.
    """

    def __init__(self, engine: Callable[[], ChatEngine | None]) -> None:
        self._engine = engine
        self._lock = threading.Condition()
        self._waiting: _Request | None = None
        self._closed = False
        self._thread: threading.Thread | None = None

    def request(self, messages: Sequence[Message], max_tokens: int, done: PlanCallback) -> None:
        """Count ``messages`` (ending with the draft) leaving room for ``max_tokens``; replaces any request
        that has not started. ``done`` runs on the counter's thread. Does nothing once closed."""
        with self._lock:
            if self._closed:
                return
            self._waiting = _Request(list(messages), int(max_tokens), done)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="plan-counter", daemon=True)
                self._thread.start()
            self._lock.notify_all()

    def close(self, timeout: float = 5.0) -> None:
        """Drop the waiting request and stop the thread (a count under way finishes first)."""
        with self._lock:
            self._closed = True
            self._waiting = None
            self._lock.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while self._waiting is None and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                request, self._waiting = self._waiting, None
            assert request is not None
            plan, error = self._count(request)
            try:
                request.done(plan, error)
            except Exception:  # a client's callback must not stop the counter
                log.exception("plan callback failed")

    def _count(self, request: _Request) -> tuple[ContextPlan | None, str | None]:
        engine = self._engine()
        if engine is None:
            return None, "No model is loaded."
        try:
            return engine.plan(request.messages, request.max_tokens), None
        except Exception as exc:  # a template that fails its budget, a tokenizer error: one line, no crash
            return None, str(exc).splitlines()[0] if str(exc) else type(exc).__name__
