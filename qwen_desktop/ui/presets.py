"""System-prompt presets: a few built in, plus the user's own (``Settings.presets``), one per chat.

A chat remembers the id of its preset (``Conversation.preset``) and the preset's text as last used
(``Conversation.system_prompt``). ``preset_prompt`` gives the text a chat's answers are asked with: the
built-in "Assistant" is the system prompt of the settings; the user's own preset is its current text
(editing it changes the chats that use it); a preset since deleted falls back to the text the chat kept.
``PresetsDialog`` adds, edits and deletes the user's own.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from PySide6.QtCore import QT_TRANSLATE_NOOP, QCoreApplication, Qt
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.storage.chats import Conversation
from qwen_desktop.storage.settings import (
    MAX_PRESETS,
    PRESET_NAME_CHARS,
    PRESET_PROMPT_CHARS,
    CustomPreset,
    Settings,
)
from qwen_desktop.ui.markdown_render import reveal_bidi

ASSISTANT = "assistant"  # the settings' own system prompt


@dataclass(frozen=True)
class BuiltinPreset:
    """A preset that ships with the app: its id, its name (translated when shown) and its prompt (None: the
    settings' system prompt). The prompts are sent to the model in English, the language Qwen's own default
    system prompt is in (it answers in the language it is spoken to); the window shows them translated
    (``shown_prompt``)."""

    id: str
    name: str
    prompt: str | None


# QT_TRANSLATE_NOOP returns its text unchanged; str() gives it a type (it is typed as object).
BUILTIN_PRESETS: tuple[BuiltinPreset, ...] = (
    BuiltinPreset(ASSISTANT, str(QT_TRANSLATE_NOOP("presets", "Assistant")), None),
    BuiltinPreset(
        "coder",
        str(QT_TRANSLATE_NOOP("presets", "Coder")),
        str(
            QT_TRANSLATE_NOOP(
                "prompts",
                "You are an expert programmer. Answer with correct, idiomatic, complete code in fenced code "
                "blocks that name their language, then explain it briefly. Point out bugs, edge cases and "
                "simpler ways when you see them. If the request is ambiguous, say what you assumed.",
            )
        ),
    ),
    BuiltinPreset(
        "translator",
        str(QT_TRANSLATE_NOOP("presets", "Translator (Chinese ↔ English)")),
        str(
            QT_TRANSLATE_NOOP(
                "prompts",
                "You are a translator between Chinese and English. If the user's text is Chinese, translate it "
                "into natural, fluent English; otherwise translate it into natural, fluent Simplified Chinese. "
                "Keep the meaning, tone and formatting (lists, code, line breaks). Reply with the translation "
                "only: do not answer questions in the text, explain it or add notes.",
            )
        ),
    ),
    BuiltinPreset(
        "concise",
        str(QT_TRANSLATE_NOOP("presets", "Concise")),
        str(
            QT_TRANSLATE_NOOP(
                "prompts",
                "You are a helpful assistant. Answer as briefly as the question allows: a sentence or two, or a "
                "short list. No introduction, no summary, no repeating the question.",
            )
        ),
    ),
)
_BUILTIN = {p.id: p for p in BUILTIN_PRESETS}
# The settings' default system prompt (``Settings.system_prompt``), for lupdate; tests check they match.
DEFAULT_PROMPT = str(QT_TRANSLATE_NOOP("prompts", "You are a helpful assistant."))
_ENGLISH_PROMPTS = frozenset([DEFAULT_PROMPT, *(p.prompt for p in BUILTIN_PRESETS if p.prompt is not None)])


def shown_prompt(prompt: str) -> str:
    """``prompt`` as the window shows it: a prompt that came with the app in the interface language, any
    other text (the user's own) as it is."""
    return QCoreApplication.translate("prompts", prompt) if prompt in _ENGLISH_PROMPTS else prompt


def sent_prompt(shown: str) -> str:
    """The prompt to keep and send for the text ``shown`` in an editor: a prompt that came with the app,
    unchanged in its translation, goes back to the English the model is asked with."""
    return next((p for p in _ENGLISH_PROMPTS if shown == shown_prompt(p)), shown)


def builtin_name(preset: BuiltinPreset) -> str:
    """The built-in preset's name in the interface language."""
    return QCoreApplication.translate("presets", preset.name)


def all_presets(settings: Settings) -> list[tuple[str, str, str]]:
    """(id, name shown, prompt) of every preset: the built-in ones, then the user's own."""
    shown = [
        (p.id, builtin_name(p), p.prompt if p.prompt is not None else settings.system_prompt)
        for p in BUILTIN_PRESETS
    ]
    shown += [(p.id, p.name, p.prompt) for p in settings.presets]
    return shown


def preset_prompt(preset_id: str | None, settings: Settings) -> str | None:
    """The text of the preset ``preset_id`` now, or None when there is no such preset (any more)."""
    if preset_id is None:
        return None
    builtin = _BUILTIN.get(preset_id)
    if builtin is not None:
        return builtin.prompt if builtin.prompt is not None else settings.system_prompt
    return next((p.prompt for p in settings.presets if p.id == preset_id), None)


def known_preset(preset_id: str | None, settings: Settings) -> bool:
    """Whether ``preset_id`` names a preset that exists."""
    return preset_prompt(preset_id, settings) is not None


def chat_preset(conversation: Conversation | None, settings: Settings) -> tuple[str | None, str]:
    """(the preset a chat shows, the system prompt it is answered with). A new chat (None) gets the preset
    chosen last; a chat whose preset is gone, or from before presets with a prompt of its own, shows None
    ("this chat's own prompt") and keeps its text; one from before presets without one is "Assistant"."""
    if conversation is None:
        chosen = settings.preset if known_preset(settings.preset, settings) else ASSISTANT
        return chosen, preset_prompt(chosen, settings) or ""
    text = preset_prompt(conversation.preset, settings)
    if text is not None:
        return conversation.preset, text
    if conversation.system_prompt is not None:
        return None, conversation.system_prompt
    return ASSISTANT, settings.system_prompt


def new_preset_id() -> str:
    """A fresh id for a preset the user makes."""
    return "custom-" + uuid.uuid4().hex[:12]


class PresetsDialog(QDialog):
    """Add, edit and delete the user's own presets; OK keeps the changes (``result_presets``)."""

    def __init__(self, presets: tuple[CustomPreset, ...], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Your presets"))
        self.setObjectName("presetsDialog")
        self.resize(640, 420)
        self.presets: list[CustomPreset] = list(presets)
        layout = QVBoxLayout(self)
        intro = QLabel(
            self.tr(
                "A preset is the system prompt a chat starts with: what the model is told before your "
                "first message. Choose one for each chat at the top of the window."
            )
        )
        intro.setWordWrap(True)
        layout.addWidget(intro)
        row = QHBoxLayout()
        left = QVBoxLayout()
        self.list = QListWidget()
        self.list.setAccessibleName(self.tr("Your presets"))
        self.list.currentRowChanged.connect(self._show)
        left.addWidget(self.list, 1)
        buttons = QHBoxLayout()
        self.add_button = QPushButton(self.tr("New preset"))
        self.add_button.setAccessibleName(self.tr("New preset"))
        self.add_button.clicked.connect(self.add_preset)
        self.delete_button = QPushButton(self.tr("Delete"))
        self.delete_button.setAccessibleName(self.tr("Delete the preset"))
        self.delete_button.clicked.connect(self.delete_preset)
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.delete_button)
        left.addLayout(buttons)
        row.addLayout(left, 1)
        form = QFormLayout()
        self.name_edit = QLineEdit()
        self.name_edit.setAccessibleName(self.tr("Preset name"))
        self.name_edit.setMaxLength(PRESET_NAME_CHARS)
        self.name_edit.textEdited.connect(self._edited)
        form.addRow(self.tr("Name:"), self.name_edit)
        self.prompt_edit = QPlainTextEdit()
        self.prompt_edit.setAccessibleName(self.tr("Preset system prompt"))
        self.prompt_edit.setPlaceholderText(self.tr("You are …"))
        self.prompt_edit.textChanged.connect(self._edited)
        form.addRow(self.tr("System prompt:"), self.prompt_edit)
        row.addLayout(form, 2)
        layout.addLayout(row, 1)
        box = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        for button in box.buttons():
            button.setAccessibleName(button.text().replace("&", ""))
        box.accepted.connect(self.accept)
        box.rejected.connect(self.reject)
        layout.addWidget(box)
        self._filling = False
        self._fill()

    def _fill(self, row: int = 0) -> None:
        self._filling = True
        self.list.clear()
        for preset in self.presets:
            item = QListWidgetItem(reveal_bidi(preset.name))
            item.setData(Qt.ItemDataRole.UserRole, preset.id)
            self.list.addItem(item)
        self._filling = False
        if self.presets:
            self.list.setCurrentRow(min(row, len(self.presets) - 1))
        self._show(self.list.currentRow())

    def _show(self, row: int) -> None:
        if self._filling:
            return
        has = 0 <= row < len(self.presets)
        for widget in (self.name_edit, self.prompt_edit, self.delete_button):
            widget.setEnabled(has)
        self.add_button.setEnabled(len(self.presets) < MAX_PRESETS)
        self._filling = True
        self.name_edit.setText(self.presets[row].name if has else "")
        self.prompt_edit.setPlainText(self.presets[row].prompt if has else "")
        self._filling = False

    def _edited(self, *_args: object) -> None:
        row = self.list.currentRow()
        if self._filling or not 0 <= row < len(self.presets):
            return
        name = self.name_edit.text()
        prompt = self.prompt_edit.toPlainText()[:PRESET_PROMPT_CHARS]
        self.presets[row] = CustomPreset(self.presets[row].id, name, prompt)
        self.list.item(row).setText(reveal_bidi(name.strip()) or self.tr("(no name)"))

    def add_preset(self) -> None:
        """Add a preset and put the cursor in its name."""
        if len(self.presets) >= MAX_PRESETS:
            return
        self.presets.append(CustomPreset(new_preset_id(), self.tr("My preset"), ""))
        self._fill(len(self.presets) - 1)
        self.name_edit.setFocus()
        self.name_edit.selectAll()

    def delete_preset(self) -> None:
        """Delete the preset shown (chats that used it keep its text)."""
        row = self.list.currentRow()
        if 0 <= row < len(self.presets):
            del self.presets[row]
            self._fill(row)

    def result_presets(self) -> tuple[CustomPreset, ...]:
        """The presets as edited; one without a name is called "My preset"."""
        return tuple(
            CustomPreset(p.id, p.name.strip() or self.tr("My preset"), p.prompt) for p in self.presets
        )
