"""The chat on show: opening, starting and deleting chats, the version on show, and the chat's preset.

Editing a question or regenerating an answer adds a version in the store (``ui/answering.py``); "‹ 1/2 ›" on a
message flips between versions (``switch_branch``).
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from qwen_desktop.storage.chats import Conversation, Message
from qwen_desktop.storage.errors import DamagedChatError, NotFoundError, StorageError
from qwen_desktop.ui.chat_view import Branch
from qwen_desktop.ui.presets import PresetsDialog, all_presets, chat_preset, known_preset, preset_prompt
from qwen_desktop.ui.window_parts import WindowParts

SENDABLE = ("complete", "cancelled", "interrupted")  # answers that go back to the model as history


class Conversations(WindowParts):
    """The chat on show and the chat list: open, new, delete, the version on show, the preset."""

    def refresh_conversations(self) -> None:
        """Fill the sidebar from the store, keeping the current selection."""
        self.sidebar.refresh(self.conversation_id)

    def _on_chat_chosen(self, conversation_id: int, message_id: int) -> None:
        self.open_conversation(conversation_id, message_id or None)

    def open_conversation(self, conversation_id: int, message_id: int | None = None) -> None:
        """Show a conversation; with ``message_id`` (a search hit) show the version with that message and
        scroll to it."""
        self.conversation_id = conversation_id
        self.cancel_edit()
        if self.model_info is not None or self.load_error is not None or self.configured_model():
            self.pages.setCurrentWidget(self.chat_view)
        if message_id is not None and not self.bridge.busy:
            with contextlib.suppress(StorageError):  # deleted meanwhile: the chat shows as it is
                if message_id not in [m.id for m in self.store.path(conversation_id)]:
                    self.store.switch_to(message_id)
        self.reload_messages()
        self.refresh_conversations()
        self._refresh_header()
        self._update_controls()
        self.update_meter()
        if message_id is not None:
            self.chat_view.scroll_to_message(message_id, self.sidebar.search.text().strip())

    def new_conversation(self) -> None:
        """Start a new conversation (Ctrl+N): an empty page; it is stored with its first message."""
        self.conversation_id = None
        self.cancel_edit()
        self.reload_messages()
        self.refresh_conversations()
        self._refresh_header()
        self._update_controls()
        self.update_meter()
        self.composer.setFocus()

    def _create_conversation(self) -> Conversation:
        """A new, empty chat with the preset chosen last."""
        preset, prompt = chat_preset(None, self.settings)
        return self.store.create_conversation(self.tr("New chat"), system_prompt=prompt, preset=preset)

    def rename_conversation(self) -> None:
        """Edit the current conversation's title in the sidebar."""
        if self.conversation_id is not None:
            self.sidebar.rename(self.conversation_id)

    def delete_conversation(self, confirm: bool = True) -> None:
        """Delete the current conversation after asking."""
        if self.conversation_id is not None:
            self.sidebar.delete(self.conversation_id, confirm=confirm)

    def _on_chat_deleted(self, conversation_id: int) -> None:
        if conversation_id != self.conversation_id:
            return
        self.conversation_id = None
        remaining = self.store.list_conversations()
        if remaining:
            self.open_conversation(remaining[0].id)
        else:
            self.new_conversation()

    def reload_messages(self) -> None:
        """Show the current branch of the current conversation, with branch arrows and buttons."""
        if self.conversation_id is None:
            self.chat_view.show_messages([], {}, set())
            return
        try:
            path = self.store.path(self.conversation_id)
        except DamagedChatError as exc:  # a loop of parents in a damaged file: say so, show nothing
            self.chat_view.show_messages([], {}, set())
            self.show_banner(str(exc))
            return
        branches: dict[int, Branch] = {}
        for message in path:
            siblings = self.store.siblings(message.id)
            if len(siblings) > 1:
                ids = [s.id for s in siblings]
                i = ids.index(message.id)
                branches[message.id] = Branch(
                    i + 1, len(ids), ids[i - 1] if i > 0 else None, ids[i + 1] if i + 1 < len(ids) else None
                )
        regenerable = set()
        if path and path[-1].role == "assistant" and path[-1].status != "streaming":
            regenerable.add(path[-1].id)
        self.chat_view.show_messages(path, branches, regenerable)

    def switch_branch(self, message_id: int) -> None:
        """Show the branch through ``message_id`` (the "‹ ›" arrows)."""
        if self.bridge.busy:
            return
        self.store.switch_to(message_id)
        self.reload_messages()
        self.update_meter()

    def _conversation(self) -> Conversation | None:
        """The conversation on show, or None (none yet, or deleted under us: _on_finished says so)."""
        if self.conversation_id is not None:
            with contextlib.suppress(NotFoundError):
                return self.store.get_conversation(self.conversation_id)
        return None

    def system_prompt(self) -> str:
        """The system prompt of the current conversation: its preset's text (``ui/presets.py``)."""
        return chat_preset(self._conversation(), self.settings)[1]

    def choose_preset(self, preset_id: str) -> None:
        """Use ``preset_id`` for this chat (kept with it) and for the chats started from now on."""
        if not known_preset(preset_id, self.settings):
            return
        self.settings = replace(self.settings, preset=preset_id)
        self._save_settings()
        if self._conversation() is not None:
            assert self.conversation_id is not None
            self.store.set_preset(self.conversation_id, preset_id, preset_prompt(preset_id, self.settings))
        self._refresh_header()
        self.update_meter()

    def edit_presets(self) -> None:
        """Add, edit or delete the user's own presets ("Edit your presets")."""
        dialog = PresetsDialog(self.settings.presets, self)
        if dialog.exec():
            self.settings = replace(self.settings, presets=dialog.result_presets())
            self._save_settings()
            self._refresh_header()
            self.update_meter()

    def _refresh_header(self) -> None:
        conversation = self._conversation()
        shown, text = chat_preset(conversation, self.settings)
        self.header.set_presets(all_presets(self.settings), shown, text)

    def prompt_messages(self, path: list[Message]) -> list[dict[str, str]]:
        """The conversation as the engine takes it: system prompt, then the turns worth sending."""
        messages = []
        if self.system_prompt().strip():
            messages.append({"role": "system", "content": self.system_prompt()})
        for m in path:
            if m.role == "assistant" and (m.status not in SENDABLE or not m.content):
                continue
            if m.role != "system":
                messages.append({"role": m.role, "content": m.content})
        return messages
