"""Loading a model on the worker thread, and switching to another one (the header's picker)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from qwen_desktop.engine.host import ModelInfo
from qwen_desktop.engine.load_phase import LoadPhase
from qwen_desktop.storage import paths
from qwen_desktop.ui.markdown_render import render_markdown, reveal_bidi
from qwen_desktop.ui.model_install import alive
from qwen_desktop.ui.window_parts import WindowParts
from qwen_desktop.units import human_bytes
from qwen_desktop.worker import emit


class ModelLoading(WindowParts):
    """Which model to use, loading it on the worker, and the header's model picker."""

    def configured_model(self) -> Path | None:
        """The model folder to use: the settings' choice, else the registry's default, else None."""
        if self.settings.model_path:
            return Path(self.settings.model_path)
        try:
            from qwen_desktop.library.registry import Registry

            default = Registry(paths.models_dir(self.settings.models_dir)).get_default()
        except Exception:  # a damaged models folder must not stop the window
            return None
        return default.folder if default else None

    def load_configured_model(self) -> None:
        """Start loading the configured model on the worker thread, or show the welcome page."""
        folder = self.configured_model()
        if folder is None:
            self._fill_first_run()
            self.pages.setCurrentWidget(self.welcome)
            self.status_label.setText(self.tr("No model yet"))
            self._update_controls()
            return
        self.load_model(folder)

    def load_model(self, folder: Path) -> None:
        """Load ``folder`` (on the worker thread)."""
        self.model_info = None
        self.load_error = None
        if self.banner.about_the_model():  # a model problem: this load may fix it
            self.banner.hide()
        self.pages.setCurrentWidget(self.chat_view)
        self.status_label.setText(self.tr("Loading model…"))
        self._update_controls()
        self.bridge.load(folder, self.effective_threads(folder), self.settings.context_limit)

    def load_phase_text(self, phase: object) -> str:
        """The words for a step of the load (a ``LoadPhase``) in the window's language; a step this window
        does not know (a newer engine's) reads as loading the model."""
        texts = {
            LoadPhase.READ_FOLDER: self.tr("Reading model folder…"),
            LoadPhase.OPEN_GRAPHS: self.tr("Loading model…"),
            LoadPhase.WARM_UP: self.tr("Warming up…"),
        }
        known = phase if isinstance(phase, LoadPhase) else LoadPhase.OPEN_GRAPHS
        return texts.get(known, texts[LoadPhase.OPEN_GRAPHS])

    def _on_loading(self, phase: object) -> None:
        if self._closing:
            return
        self.status_label.setText(self.load_phase_text(phase))
        if self._switch is not None and alive(self._switch[1]):
            self._switch[1].load_phase(phase)

    def _on_loaded(self, info: ModelInfo) -> None:
        if self._closing:
            return
        self.model_info = info
        self._show_ready(info)
        self._update_controls()
        self.update_meter()
        render_markdown("Warm `up`.\n\n```python\nx = 1\n```\n")  # build the parser before the first answer
        self._switched(info)
        self._refresh_models()
        if self._picked is not None and Path(info.folder).resolve() == self._picked[0].resolve():
            self.statusBar().showMessage(
                self.tr("Now using %1.").replace("%1", reveal_bidi(self._picked[1])), 8000
            )
            self._picked = None
        # Auto threads never measured for this model here: measure once the window has been idle a while
        self._sweep_pending = self.settings.threads == 0 and self.measured_speeds(info.folder) is None
        self._restart_sweep_idle()
        emit(self.model_ready, info)

    def _show_ready(self, info: ModelInfo) -> None:
        self.status_bar.show_ready(info)

    def _on_load_failed(self, message: str) -> None:
        if self._closing:
            return
        self.model_info = None
        self.load_error = message
        self.show_banner(self.tr("The model could not be loaded: %1").replace("%1", message), model=True)
        self.status_label.setText(self.tr("No model loaded"))
        self._update_controls()
        if self._switch is not None:
            if alive(self._switch[1]):
                self._switch[1].load_failed(message)
            self._switch = None

    def _on_reconfigured(self, info: ModelInfo) -> None:
        self._on_loaded(info)

    def pick_model(self, folder: str) -> None:
        """Use the installed model in ``folder`` (the header's picker): it loads in the background and the
        chat stays; while an answer is written, right after it."""
        model = next((m for m in self._installed() if str(m.folder) == folder), None)
        if model is None or (self.model_info is not None and Path(self.model_info.folder) == model.folder):
            return
        self.settings = replace(self.settings, model_path=str(model.folder))
        self._save_settings()
        self._picked = (model.folder, model.display_name)
        if self.bridge.busy:
            self.statusBar().showMessage(
                self.tr("Switching to %1 when this answer is done.").replace(
                    "%1", reveal_bidi(model.display_name)
                )
            )
            return
        self._load_picked()

    def _load_picked(self) -> None:
        assert self._picked is not None
        folder, name = self._picked
        self.load_model(folder)
        self.statusBar().showMessage(
            self.tr("Loading %1… — your chat stays").replace("%1", reveal_bidi(name))
        )

    def _installed(self) -> list[Any]:
        """The usable installed models (library.installed.InstalledModel); none if the folder is unreadable."""
        from qwen_desktop.library.registry import Registry

        try:
            return [m for m in Registry(self.models_dir()).list_models() if not m.broken]
        except Exception:  # a damaged models folder must not stop the window
            return []

    def _refresh_models(self) -> None:
        current = self.model_info.folder if self.model_info is not None else self.configured_model()
        models = [(str(m.folder), m.display_name, human_bytes(m.bytes_on_disk)) for m in self._installed()]
        info = self.model_info
        if info is not None and str(info.folder) not in [folder for folder, _name, _size in models]:
            models.insert(0, (str(info.folder), info.display_name or info.name, ""))  # a folder elsewhere
        self.header.set_models(models, str(current) if current is not None else None)

    def models_dir(self) -> Path:
        """The models folder."""
        return paths.models_dir(self.settings.models_dir)

    def installed_models(self) -> list[tuple[str, str]]:
        """(label, folder) of the models in the models folder."""
        return [(m.display_name, str(m.folder)) for m in self._installed()]
