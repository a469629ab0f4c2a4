"""Installing a model from the window: the first-run page, the install dialog, a model dropped on the window,
and switching to the model just installed."""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QWidget

from qwen_desktop.engine.host import ModelInfo
from qwen_desktop.ui.first_run import model_paths
from qwen_desktop.ui.window_parts import WindowParts

_DRAG_EVENTS = (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop)


def alive(widget: Any) -> bool:
    """False for None, and once Qt has deleted ``widget`` (a dialog closed with its parent)."""
    import shiboken6

    return widget is not None and bool(shiboken6.isValid(widget))


class ModelInstalling(WindowParts):
    """The first-run page's choices, the install dialog, model files dropped on the window."""

    def _fill_first_run(self) -> None:
        """Offer what applies on the first-run page: a model that came with the app, the default download."""
        from qwen_desktop.engine.errors import ModelError
        from qwen_desktop.library.catalog import load_app_catalog
        from qwen_desktop.library.registry import Registry

        bundled = None
        with contextlib.suppress(ModelError, OSError):
            bundled = next(
                (m for m in Registry(self.models_dir()).list_models() if m.bundled and not m.broken), None
            )
        entry = None
        with contextlib.suppress(ModelError):
            catalog = load_app_catalog()
            entry = next((e for e in catalog if e.is_default), catalog[0] if catalog else None)
        self.welcome.set_choices(bundled, entry)

    def _use_bundled(self, model: Any) -> None:
        from qwen_desktop.engine.errors import ModelError
        from qwen_desktop.library.registry import Registry

        with contextlib.suppress(ModelError, OSError):
            Registry(self.models_dir()).set_default(model.name)
        self.load_model(Path(model.folder))

    def start_install(self, source: Path | None = None, entry: Any = None) -> Any:
        """Import ``source`` (a file or a folder) or download the catalogue ``entry`` in the install dialog,
        then switch to the new model by itself. Returns the dialog (None when one is already running)."""
        from qwen_desktop.engine.errors import ModelError
        from qwen_desktop.library.catalog import load_app_catalog
        from qwen_desktop.ui.download_dialog import DownloadDialog

        if alive(self.install_dialog):
            if self.install_dialog.running or self.install_dialog.loading:
                self.install_dialog.raise_()
                return None
            self.install_dialog.deleteLater()
        try:
            catalog = load_app_catalog()
        except ModelError:  # a broken mirror catalogue does not stop an import from disk
            catalog = []
        dialog = DownloadDialog(self.models_dir(), catalog, self)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.follow_load = True
        self._follow_install(dialog)
        dialog.failed.connect(lambda kind, text: self._install_failed(dialog, kind, text))
        dialog.import_requested.connect(self.welcome.choose_file)
        self.welcome.show_problem("")
        self.install_dialog = dialog
        if entry is not None:
            dialog.start_download(entry)
        else:
            dialog.start_import(Path(source or "."))
        dialog.open()
        return dialog

    def _install_failed(self, dialog: Any, kind: str, text: str) -> None:
        """No connection while the first-run page is showing: the page says so in one sentence and keeps its
        other choices; the install dialog closes (other failures stay in the dialog, with their buttons)."""
        if kind == "offline" and self.pages.currentWidget() is self.welcome and alive(dialog):
            dialog.accept()
            self.welcome.show_problem(text)

    def _follow_install(self, dialog: Any) -> None:
        """Switch to what ``dialog`` installs, and report the first load in it."""
        dialog.installed.connect(lambda model: self.switch_to_installed(model, dialog))

    def switch_to_installed(self, model: Any, dialog: Any = None) -> None:
        """Use ``model`` (just installed) from now on: make it the default and load it, at once or, while an
        answer is being written, right after it. The status bar says so once it is ready."""
        from qwen_desktop.engine.errors import ModelError
        from qwen_desktop.library.registry import Registry

        with contextlib.suppress(ModelError, OSError):
            Registry(self.models_dir()).set_default(model.name)
        self.settings = replace(self.settings, model_path=str(model.folder))
        self._save_settings()
        if self._models_dialog is not None:
            self._models_dialog.model_switched(model)
        self._switch = (model, dialog)
        self._switch_after_answer = self.bridge.busy
        if self.bridge.busy:
            self.status_label.setText(
                self.tr("%1 is installed; the app switches to it when this answer is done.").replace(
                    "%1", model.display_name
                )
            )
            if alive(dialog):
                dialog.waiting_for_answer()
            return
        self.load_model(Path(model.folder))

    def _switched(self, info: ModelInfo) -> None:
        """A load ended: if it was the switch to a model just installed, say so and let its dialog close."""
        if self._switch is None:
            return
        model, dialog = self._switch
        if Path(info.folder).resolve() != Path(model.folder).resolve():
            return
        self._switch = None
        if alive(dialog):
            dialog.load_done(model.display_name)
        self.statusBar().showMessage(
            self.tr("Now using %1, the model just installed.").replace("%1", model.display_name), 15000
        )

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        """Take drags of model files and folders over any part of this window (see ``dropEvent``)."""
        kind = event.type()
        if kind in _DRAG_EVENTS and isinstance(watched, QWidget) and watched.window() is self:
            return self._on_drag(event)  # type: ignore[arg-type]
        return False

    def _on_drag(self, event: QDropEvent) -> bool:
        paths = model_paths(event.mimeData()) if not self._closing else []
        if not paths:
            return False  # not a model: the widget under it does what it does with drops
        event.acceptProposedAction()
        if event.type() == QEvent.Type.Drop:
            self.start_install(paths[0])
        return True

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:  # noqa: N802 - Qt's name
        """A drag over the window's own frame (the filter sees those over its widgets)."""
        if not self._on_drag(event):
            super().dragEnterEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:  # noqa: N802 - Qt's name
        """A model file or folder dropped on the window: the same as importing it from the first-run page."""
        if not self._on_drag(event):
            super().dropEvent(event)
