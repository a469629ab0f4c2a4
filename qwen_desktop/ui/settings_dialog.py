"""The settings dialog: threads, context, sampling, system prompt, theme, language and the model in use."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.storage.settings import CONTEXT_MAX, CONTEXT_MIN, Settings
from qwen_desktop.ui.presets import sent_prompt, shown_prompt
from qwen_desktop.worker import EngineBridge, emit

LANGUAGES: tuple[tuple[str, str | None], ...] = (("system", None), ("en", "English"), ("zh_CN", "简体中文"))


def physical_cores() -> int | None:
    """Physical CPU cores from /proc/cpuinfo (Linux), or None when this system does not say."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return None
    cores: set[tuple[str, str]] = set()
    physical = core = None
    for line in [*text.splitlines(), ""]:
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "physical id":
            physical = value.strip()
        elif key == "core id":
            core = value.strip()
        elif not line.strip():
            if physical is not None and core is not None:
                cores.add((physical, core))
            physical = core = None
    return len(cores) or None


class SettingsDialog(QDialog):
    """Edit a copy of the settings; ``result_settings()`` gives it back when accepted.

    The model list comes from the registry. "Import from disk…" hands over to the Models page's import: its
    menu asks the owner (``import_requested``) to run it, with the same file dialogs, install dialog and
    switch to the new model; the owner then calls :meth:`models_updated` with what changed.

    Signals:
        import_requested(str): "file" (a GGUF file) or "folder" (a Hugging Face or model folder) was chosen.
    """

    import_requested = Signal(str)

    def __init__(
        self,
        settings: Settings,
        models: list[tuple[str, str]],
        bridge: EngineBridge | None,
        parent: QWidget | None = None,
        measured: dict[int, float] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Settings"))
        self.setAccessibleName(self.tr("Settings"))
        self.settings = settings
        self.bridge = bridge
        layout = QVBoxLayout(self)
        form = QFormLayout()
        layout.addLayout(form)

        cpus = os.cpu_count() or 1
        phys = physical_cores()
        self.threads = QComboBox()
        if phys:
            auto = self.tr("Auto (fastest measured; %1 physical cores)").replace("%1", str(phys))
        else:
            auto = self.tr("Auto (fastest measured)")
        # What Auto measured for the model in use on this computer (at idle, once; storage.thread_sweeps)
        self.measured = QLabel()
        self.measured.setWordWrap(True)
        self.measured.setAccessibleName(self.tr("Measured speeds"))
        if measured:
            from qwen_desktop.engine.bench import fastest

            auto += " — " + self.tr("now %1").replace("%1", str(fastest(measured)))
            speeds = " · ".join(
                self.tr("%1 → %2 tokens/s").replace("%1", str(n)).replace("%2", f"{measured[n]:.0f}")
                for n in sorted(measured)
            )
            self.measured.setText(
                self.tr("Measured on this computer (threads → speed): %1").replace("%1", speeds)
            )
        else:
            self.measured.setText(
                self.tr("Auto measures the speed of each count once, when the app is idle.")
            )
        self.threads.addItem(auto, 0)
        for n in range(1, cpus + 1):
            self.threads.addItem(str(n), n)
        self.threads.setCurrentIndex(max(0, self.threads.findData(settings.threads)))
        self.threads.setAccessibleName(self.tr("CPU threads"))
        form.addRow(self.tr("CPU threads:"), self.threads)
        form.addRow("", self.measured)

        self.context = self._spin(CONTEXT_MIN, CONTEXT_MAX, settings.context_limit, self.tr("Context limit"))
        self.context.setSingleStep(256)
        self.context.setSuffix(self.tr(" tokens"))
        form.addRow(self.tr("Context limit:"), self.context)
        self.max_tokens = self._spin(1, CONTEXT_MAX, settings.max_tokens, self.tr("Maximum reply length"))
        self.max_tokens.setSuffix(self.tr(" tokens"))
        form.addRow(self.tr("Maximum reply length:"), self.max_tokens)
        self.temperature = self._double(0.0, 2.0, settings.temperature, self.tr("Temperature"))
        form.addRow(self.tr("Temperature:"), self.temperature)
        self.top_p = self._double(0.0, 1.0, settings.top_p, self.tr("Top-p"))
        form.addRow(self.tr("Top-p:"), self.top_p)
        self.top_k = self._spin(0, 1000, settings.top_k, self.tr("Top-k"))
        self.top_k.setSpecialValueText(self.tr("off"))
        form.addRow(self.tr("Top-k:"), self.top_k)
        self.repetition = self._double(1.0, 2.0, settings.repetition_penalty, self.tr("Repetition penalty"))
        form.addRow(self.tr("Repetition penalty:"), self.repetition)
        self.seed = self._spin(-1, 2**31 - 1, -1 if settings.seed is None else settings.seed, self.tr("Seed"))
        self.seed.setSpecialValueText(self.tr("random"))
        form.addRow(self.tr("Seed:"), self.seed)

        # the prompt that came with the app shows translated, and is kept and sent in English (ui/presets.py)
        self.system_prompt = QPlainTextEdit(shown_prompt(settings.system_prompt))
        self.system_prompt.setAccessibleName(self.tr("System prompt"))
        self.system_prompt.setFixedHeight(70)
        form.addRow(self.tr("System prompt:"), self.system_prompt)

        self.theme = QComboBox()
        for value, label in (
            ("system", self.tr("Same as the system")),
            ("light", self.tr("Light")),
            ("dark", self.tr("Dark")),
        ):
            self.theme.addItem(label, value)
        self.theme.setCurrentIndex(max(0, self.theme.findData(settings.theme)))
        self.theme.setAccessibleName(self.tr("Theme"))
        form.addRow(self.tr("Theme:"), self.theme)

        self.language = QComboBox()
        for code, name in LANGUAGES:
            self.language.addItem(name or self.tr("Same as the system"), code)
        self.language.setCurrentIndex(max(0, self.language.findData(settings.language)))
        self.language.setAccessibleName(self.tr("Language (applies at the next start)"))
        form.addRow(self.tr("Language (next start):"), self.language)

        model_row = QHBoxLayout()
        self.model = QComboBox()
        self.model.setAccessibleName(self.tr("Model in use"))
        self.model.setMinimumWidth(260)
        self._fill_models(models, settings.model_path)
        model_row.addWidget(self.model, 1)
        self.import_button = QPushButton(self.tr("Import from disk…"))
        self.import_button.setAccessibleName(self.tr("Import a model from disk"))
        menu = QMenu(self.import_button)
        menu.addAction(self.tr("GGUF file…"), lambda: emit(self.import_requested, "file"))
        menu.addAction(
            self.tr("Hugging Face folder or model folder…"), lambda: emit(self.import_requested, "folder")
        )
        self.import_button.setMenu(menu)
        self.import_button.setEnabled(bridge is not None)
        model_row.addWidget(self.import_button)
        form.addRow(self.tr("Model:"), model_row)
        note = QLabel(self.tr("To download models, use the Models page."))
        note.setEnabled(False)
        form.addRow("", note)

        # Local server: the loaded model over an OpenAI-compatible API on 127.0.0.1 (docs/server.md).
        self.server_enabled = QCheckBox(self.tr("Serve the model to other apps on this computer"))
        self.server_enabled.setAccessibleName(self.tr("Local server"))
        self.server_enabled.setChecked(settings.server_enabled)
        form.addRow(self.tr("Local server:"), self.server_enabled)
        self.server_port = self._spin(1024, 65535, settings.server_port, self.tr("Local server port"))
        form.addRow(self.tr("Port:"), self.server_port)
        self.server_key = QLineEdit(settings.server_api_key)
        self.server_key.setPlaceholderText(self.tr("none (any app on this computer may use it)"))
        self.server_key.setAccessibleName(self.tr("Local server API key"))
        form.addRow(self.tr("API key:"), self.server_key)
        self.server_url = QLabel()
        self.server_url.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.server_url.setAccessibleName(self.tr("Local server address"))
        form.addRow("", self.server_url)
        self.server_enabled.toggled.connect(self._show_server)
        self.server_port.valueChanged.connect(self._show_server)
        self._show_server()

        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.button(QDialogButtonBox.StandardButton.Ok).setAccessibleName(self.tr("Apply settings"))
        buttons.button(QDialogButtonBox.StandardButton.Cancel).setAccessibleName(self.tr("Cancel"))
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _show_server(self) -> None:
        on = self.server_enabled.isChecked()
        self.server_port.setEnabled(on)
        self.server_key.setEnabled(on)
        url = f"http://127.0.0.1:{self.server_port.value()}"
        self.server_url.setText(
            self.tr("OpenAI base URL %1/v1, chat page %1/").replace("%1", url)
            if on
            else self.tr("Off: nothing listens on the network.")
        )

    def _fill_models(self, models: list[tuple[str, str]], model_path: str) -> None:
        self.model.clear()
        for label, folder in models:
            self.model.addItem(label, folder)
        if model_path and self.model.findData(model_path) < 0:
            self.model.addItem(Path(model_path).name, model_path)
        if model_path:
            self.model.setCurrentIndex(self.model.findData(model_path))

    def models_updated(self, models: list[tuple[str, str]], settings: Settings) -> None:
        """The Models page ran (an import, a switch, a new folder): show its ``models`` and the model in use,
        and build :meth:`result_settings` on the app's ``settings`` from now on, keeping the edits here."""
        self.settings = settings
        self._fill_models(models, settings.model_path)

    def _spin(self, low: int, high: int, value: int, name: str) -> QSpinBox:
        box = QSpinBox()
        box.setRange(low, high)
        box.setValue(value)
        box.setAccessibleName(name)
        return box

    def _double(self, low: float, high: float, value: float, name: str) -> QDoubleSpinBox:
        box = QDoubleSpinBox()
        box.setRange(low, high)
        box.setDecimals(2)
        box.setSingleStep(0.05)
        box.setValue(value)
        box.setAccessibleName(name)
        return box

    def result_settings(self) -> Settings:
        """The settings as edited."""
        seed = self.seed.value()
        return replace(
            self.settings,
            threads=int(self.threads.currentData()),
            context_limit=self.context.value(),
            max_tokens=self.max_tokens.value(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            repetition_penalty=self.repetition.value(),
            seed=None if seed < 0 else seed,
            system_prompt=sent_prompt(self.system_prompt.toPlainText()),
            theme=str(self.theme.currentData()),
            language=str(self.language.currentData()),
            model_path=self.model.currentData() or self.settings.model_path,
            server_enabled=self.server_enabled.isChecked(),
            server_port=self.server_port.value(),
            server_api_key=self.server_key.text().strip(),
        ).clamped()
