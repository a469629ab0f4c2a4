"""Sending, streaming, Stop, regenerate and edit: the main window's answers.

Sending stores your message and an empty ``streaming`` answer, then asks the worker for the answer; its pieces
stream into the answer's view and the status bar; Stop (Esc) cancels it. Regenerate writes a new answer beside
the old one, and an edited message is sent as a new version beside the old one: nothing is deleted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtGui import QGuiApplication

from qwen_desktop.storage.chats import DEFAULT_TITLE, title_from_text
from qwen_desktop.storage.errors import DamagedChatError, NotFoundError, StorageError
from qwen_desktop.ui.presets import chat_preset
from qwen_desktop.ui.window_parts import WindowParts
from qwen_desktop.worker import AnswerResult, emit

if TYPE_CHECKING:
    from qwen_desktop.engine.generate import SamplingParams


class Answering(WindowParts):
    """The window's answers: send (Enter), regenerate, edit and resend, Stop (Esc), the streamed pieces."""

    def sampling(self) -> SamplingParams:
        """Sampling settings from the user's settings."""
        from qwen_desktop.engine.generate import SamplingParams

        return SamplingParams.from_settings(self.settings)

    def can_send(self) -> bool:
        """A model is loaded, nothing else is running."""
        return self.model_info is not None and not self.bridge.busy

    def send(self) -> None:
        """Send the composer's text (Enter): a new turn, or a new branch when editing."""
        text = self.composer_box.message_text()
        if not text or not self.can_send():
            return
        if self.conversation_id is None:
            self.conversation_id = self._create_conversation().id
        conversation = self._conversation()
        if conversation is not None and conversation.preset is not None:  # keep the text it is sent with
            shown, prompt = chat_preset(conversation, self.settings)
            if shown is not None and prompt != conversation.system_prompt:
                self.store.set_preset(conversation.id, shown, prompt)
        parent: int | None
        if self.edit_target is not None:
            parent = self.edit_target.parent_id
        else:
            try:
                path = self.store.path(self.conversation_id)
            except DamagedChatError as exc:
                self.show_banner(str(exc))
                return
            parent = path[-1].id if path else None
        user = self.store.add_message(self.conversation_id, "user", text, parent_id=parent)
        if self.store.get_conversation(self.conversation_id).title in (DEFAULT_TITLE, self.tr("New chat")):
            self.store.rename_conversation(self.conversation_id, title_from_text(text) or text[:40])
        self.composer_box.clear()
        self.cancel_edit()
        self._start_answer(user.id)

    def regenerate(self, message_id: int) -> None:
        """Write a new answer beside ``message_id`` (kept as another version)."""
        if not self.can_send():
            return
        old = self.store.get_message(message_id)
        if old.parent_id is None:
            return
        self._start_answer(old.parent_id)

    def _start_answer(self, parent_id: int) -> None:
        assert self.conversation_id is not None
        path = self.store.path(self.conversation_id)
        if parent_id not in [m.id for m in path]:  # an older branch: show the one through parent_id
            path = self.store.switch_to(parent_id)
        path = path[: [m.id for m in path].index(parent_id) + 1]
        messages = self.prompt_messages(path)
        answer = self.store.add_message(
            self.conversation_id, "assistant", "", parent_id=parent_id, status="streaming"
        )
        self.streaming_id = answer.id
        self._tokens = 0
        if self._sweeping:  # measuring threads gives way to the user: it runs again at the next idle time
            self.bridge.cancel()
        self.status_bar.show_waiting()
        self._status_at = 0.0
        self.job_id = self.bridge.answer(messages, self.sampling(), answer.id)
        self.reload_messages()
        self.refresh_conversations()
        self._update_controls()
        self.update_meter()

    def stop(self) -> None:
        """Stop the running answer (Esc), or cancel an edit."""
        if self.bridge.busy or self._sweeping:
            self.bridge.cancel()
        elif self.edit_target is not None:
            self.cancel_edit()

    def _on_first_token(self, job_id: int, seconds: float) -> None:
        if job_id == self.job_id:
            self._first_token_at = time.perf_counter()
            self._ttft = seconds
            self.status_bar.show_first_token(seconds)

    STATUS_INTERVAL = 0.5  # seconds between two updates of "Writing… N tokens/s" (and before the first)

    def _on_piece(self, job_id: int, text: str, tokens: int) -> None:
        if self._closing:
            return
        if job_id != self.job_id or self.streaming_id is None:
            return
        view = self.chat_view.view_of(self.streaming_id)
        if view is not None:
            view.append(text)
        self._tokens = tokens
        now = time.perf_counter()
        elapsed = now - self._first_token_at
        # the speed is read, not watched: it changes at most every STATUS_INTERVAL, not with every piece
        waiting = self._switch_after_answer  # the status bar says a new model follows this answer
        interval = self.STATUS_INTERVAL
        if tokens > 1 and elapsed >= interval and now - self._status_at >= interval and not waiting:
            self._status_at = now
            self.status_bar.show_writing_speed((tokens - 1) / elapsed)

    def _on_finished(self, result: AnswerResult) -> None:
        if result.job_id != self.job_id:
            return
        message_id = self.streaming_id
        self.streaming_id = None
        self.job_id = None
        if result.stats is not None:
            self.status_bar.show_answer_figures(result.stats)
        if self._closing:
            return
        if self.model_info is not None:
            self._show_ready(self.model_info)
        if message_id is not None and not self._message_exists(message_id):
            self._answer_vanished()
        elif message_id is not None and self.conversation_id is not None:
            self.reload_messages()
            view = self.chat_view.view_of(message_id)
            if view is not None and result.error:
                view.set_status("failed", result.error)
        if result.reason == "error":
            self.show_banner(self.tr("The answer failed: %1").replace("%1", result.error or "?"))
        self._update_controls()
        self.update_meter()
        self._restart_sweep_idle()
        emit(self.answer_finished, result)
        if self._picked is not None and not self.bridge.busy and self.model_info is not None:
            self._load_picked()  # picked in the header while this answer was written
        if self._switch is not None and self._switch_after_answer and not self.bridge.busy:
            self._switch_after_answer = False
            self.load_model(Path(self._switch[0].folder))  # installed while this answer was written

    def _message_exists(self, message_id: int) -> bool:
        try:
            self.store.get_message(message_id)
        except NotFoundError:
            return False
        return True

    def _answer_vanished(self) -> None:
        """The answer's message was deleted under us (another program on the same database): say so in
        plain words and show what is left."""
        self.show_banner(
            self.tr(
                "This chat was changed outside this window while the answer was written: the answer or its "
                "chat no longer exists, so the answer was not kept."
            )
        )
        if self.conversation_id is not None:
            try:
                self.store.get_conversation(self.conversation_id)
            except NotFoundError:
                self.conversation_id = None
        self.reload_messages()
        self.refresh_conversations()

    def edit_message(self, message_id: int) -> None:
        """Put a user message in the composer; sending it adds a new branch beside the old one."""
        if self.bridge.busy:
            return
        self.edit_target = self.store.get_message(message_id)
        self.composer.setPlainText(self.edit_target.content)
        self.edit_label.setText(
            self.tr(
                "Editing an earlier message. Sending starts a new version of the conversation from here; "
                "the old version is kept (use ‹ › on the message to switch). Esc cancels."
            )
        )
        self.edit_label.show()
        self.composer.setFocus()

    def cancel_edit(self) -> None:
        """Leave edit mode (the composer keeps its text)."""
        self.edit_target = None
        self.edit_label.hide()

    def copy_last_answer(self) -> None:
        """Copy the newest answer's text (Ctrl+Shift+C)."""
        view = self.chat_view.last_answer()
        if view is not None:
            QGuiApplication.clipboard().setText(view.text)
            self.statusBar().showMessage(self.tr("Answer copied"), 2000)

    def _answering_in(self) -> int | None:
        """The conversation an answer is being written in, if any."""
        if self.streaming_id is None:
            return None
        try:
            return self.store.get_message(self.streaming_id).conversation_id
        except StorageError:
            return None
