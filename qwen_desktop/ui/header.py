"""The bar above the conversation: the model picker and the chat's system-prompt preset.

It only shows choices and reports what the user picked; the window does the work (``MainWindow.pick_model``,
``MainWindow.choose_preset``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFrame, QHBoxLayout, QLabel, QToolButton, QWidget

from qwen_desktop.ui.markdown_render import reveal_bidi
from qwen_desktop.ui.presets import shown_prompt
from qwen_desktop.worker import emit

OWN_PROMPT = ""  # the preset combo's item for a chat's own prompt (a preset since deleted, an old chat)
PROMPT_TIP_CHARS = 400
TIP = Qt.ItemDataRole.ToolTipRole


def _tip(prompt: str) -> str:
    prompt = reveal_bidi(shown_prompt(prompt).strip())
    return prompt if len(prompt) <= PROMPT_TIP_CHARS else prompt[: PROMPT_TIP_CHARS - 1] + "…"


class ChatHeader(QFrame):
    """The chat's header.

    Signals:
        model_chosen(str): the user picked an installed model (its folder).
        preset_chosen(str): the user picked a preset (its id).
        edit_presets_requested(): "Edit presets…" was clicked.
    """

    model_chosen = Signal(str)
    preset_chosen = Signal(str)
    edit_presets_requested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatHeader")
        self.row = QHBoxLayout(self)
        self.row.setContentsMargins(8, 4, 8, 4)
        self.row.setSpacing(8)
        self.model_combo = QComboBox()
        self.model_combo.setObjectName("modelPicker")
        self.model_combo.setAccessibleName(self.tr("Model"))
        self.model_combo.setToolTip(self.tr("The model that answers; another one loads in the background"))
        self.model_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.model_combo.activated.connect(self._on_model)
        self.row.addWidget(self.model_combo)
        self.row.addStretch(1)
        self.preset_label = QLabel(self.tr("Preset"))
        self.preset_label.setObjectName("headerLabel")
        self.row.addWidget(self.preset_label)
        self.preset_combo = QComboBox()
        self.preset_combo.setObjectName("presetPicker")
        self.preset_combo.setAccessibleName(self.tr("System-prompt preset"))
        self.preset_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.preset_combo.activated.connect(self._on_preset)
        self.preset_label.setBuddy(self.preset_combo)
        self.row.addWidget(self.preset_combo)
        self.edit_presets_button = QToolButton()
        self.edit_presets_button.setObjectName("editPresets")
        self.edit_presets_button.setText("✎")
        self.edit_presets_button.setAutoRaise(True)
        self.edit_presets_button.setAccessibleName(self.tr("Edit your presets"))
        self.edit_presets_button.setToolTip(self.tr("Add, edit or delete your own presets"))
        self.edit_presets_button.clicked.connect(lambda _checked=False: emit(self.edit_presets_requested))
        self.row.addWidget(self.edit_presets_button)

    def set_models(self, models: list[tuple[str, str, str]], current: str | None) -> None:
        """Offer ``models`` ((folder, name, details)) with the one in ``current`` (a folder) chosen."""
        combo = self.model_combo
        combo.blockSignals(True)
        combo.clear()
        for folder, name, details in models:
            combo.addItem(f"{reveal_bidi(name)}  ·  {details}" if details else reveal_bidi(name), folder)
            combo.setItemData(combo.count() - 1, folder, TIP)
        if not models:
            combo.addItem(self.tr("No model installed"), "")
        index = combo.findData(current) if current is not None else -1
        combo.setCurrentIndex(max(index, 0))
        combo.setEnabled(bool(models))
        combo.blockSignals(False)

    def _on_model(self, index: int) -> None:
        folder = self.model_combo.itemData(index)
        if folder:
            emit(self.model_chosen, str(folder))

    def set_presets(self, presets: list[tuple[str, str, str]], current: str | None, own: str = "") -> None:
        """Offer ``presets`` ((id, name, prompt)) with ``current`` chosen; None shows the chat's own prompt
        ``own`` as an extra item."""
        combo = self.preset_combo
        combo.blockSignals(True)
        combo.clear()
        for preset_id, name, prompt in presets:
            combo.addItem(reveal_bidi(name), preset_id)
            combo.setItemData(combo.count() - 1, _tip(prompt), TIP)
        if current is None:
            combo.addItem(self.tr("This chat's own prompt"), OWN_PROMPT)
            combo.setItemData(combo.count() - 1, _tip(own), TIP)
            combo.setCurrentIndex(combo.count() - 1)
        else:
            combo.setCurrentIndex(max(combo.findData(current), 0))
        combo.setToolTip(_tip(combo.itemData(combo.currentIndex(), TIP) or ""))
        combo.blockSignals(False)

    def current_preset(self) -> str | None:
        """The id of the preset shown (None: the chat's own prompt)."""
        data = self.preset_combo.currentData()
        return None if data in (None, OWN_PROMPT) else str(data)

    def _on_preset(self, index: int) -> None:
        data = self.preset_combo.itemData(index)
        self.preset_combo.setToolTip(_tip(self.preset_combo.itemData(index, TIP) or ""))
        if data not in (None, OWN_PROMPT):
            emit(self.preset_chosen, str(data))
