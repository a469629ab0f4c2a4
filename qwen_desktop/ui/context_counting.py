"""The main window's counting for the context meter: the chat, the draft and its files, off the GUI thread."""

from __future__ import annotations

from qwen_desktop.storage.errors import StorageError
from qwen_desktop.ui.window_parts import WindowParts


class ContextCounting(WindowParts):
    """Counts the chat and the draft for the context meter and checks that an attached file fits."""

    def update_meter(self) -> None:
        """Count the conversation plus the draft with the model's tokenizer; warn if turns would drop; have
        the worker read the draft ahead."""
        if self._closing:
            return
        engine = self.bridge.engine
        if engine is None or self.model_info is None:
            self.meter.clear()
            self.context_warning.hide()
            return
        try:
            path = self.store.path(self.conversation_id) if self.conversation_id is not None else []
        except StorageError:  # a damaged or vanished chat: reload_messages says so
            path = []
        if self.edit_target is not None:
            ids = [m.id for m in path]
            if self.edit_target.id in ids:
                path = path[: ids.index(self.edit_target.id)]
        messages = self.prompt_messages(path)
        draft = self.composer_box.message_text()  # the text and the attached files
        if draft:
            messages.append({"role": "user", "content": draft})
        if not messages:
            messages = [{"role": "user", "content": ""}]
        if draft and self.can_send():
            # read the question into the KV cache while it is typed: sending it then prefills only the
            # last few tokens, so the answer starts sooner (docs/engine.md, "Reading ahead while you type")
            self.bridge.read_ahead(messages, self.settings.max_tokens)
        # counting a long chat takes too long for this thread: the plan counter answers with ``planned``
        self._plan_request = self.bridge.plan(messages, self.settings.max_tokens)

    def _attachment_too_long(self, block: str) -> tuple[int, int] | None:
        """None when a file's ``block`` fits in the context beside the system prompt and the room kept for the
        reply, else (its tokens, the room there is). Counted with the model's tokenizer (a 200 KB file takes
        tens of milliseconds, once, when it is attached); without a model it is counted when one loads."""
        from qwen_desktop.engine.context import reply_reserve

        engine = self.bridge.engine
        if engine is None or self.model_info is None:
            return None
        limit = self.last_plan.limit if self.last_plan is not None else self.settings.context_limit
        system = self.last_plan.system_tokens if self.last_plan is not None else 0
        reserved = reply_reserve(limit, self.settings.max_tokens)
        room = max(limit - reserved - system - 16, 0)  # 16: the message's own template wrapping
        if len(block.encode("utf-8")) <= room:  # every token covers at least one byte: no need to count
            return None
        tokens = engine.tokenizer.count(block)
        return (tokens, room) if tokens > room else None

    def _on_planned(self, request: int, result: object) -> None:
        """Show the newest plan: the meter counts the prompt and the room kept for the reply, the same
        numbers that decide what drops, so the warning and the meter agree."""
        if request != self._plan_request or self.bridge.engine is None:
            return
        plan, _error = result if isinstance(result, tuple) else (None, None)
        if plan is None:  # counting must never break typing: the meter keeps its last figure
            return
        self.meter.show_plan(plan)
        self.context_warning.show_plan(plan)
        self.last_plan = plan
