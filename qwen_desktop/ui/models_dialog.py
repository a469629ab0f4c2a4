"""The models page: what is installed (set as default, delete, where it is stored), what can be downloaded, and
import from disk.

Opening it reads only the models folder and the packaged catalogue: nothing touches the network until Download
is pressed. Downloads and imports run off the GUI thread in a ``DownloadDialog``.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QMargins, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.library.catalog import CatalogEntry, load_app_catalog
from qwen_desktop.library.download import partial_bytes
from qwen_desktop.library.registry import DOWNLOADS, InstalledModel, Registry, default_models_dir
from qwen_desktop.storage.errors import StorageError
from qwen_desktop.storage.settings import Settings, save_settings
from qwen_desktop.ui.catalog_texts import description
from qwen_desktop.ui.download_dialog import DownloadDialog
from qwen_desktop.units import human_bytes
from qwen_desktop.worker import emit

INSTALLED_COLUMNS = 6
AVAILABLE_COLUMNS = 5


CELL_PADDING = QMargins(6, 3, 6, 3)  # around a button in a table cell: it keeps its own size, off the grid


def _padded(button: QPushButton) -> QWidget:
    """``button`` in a table cell of its own natural size plus ``CELL_PADDING`` (the table sizes its column and
    row from this widget's size hint; a bare cell widget is stretched to the cell and touches the grid)."""
    # and half a line more room on each side of the text than the style's own (a long label, "继续（已保留
    # 123.5 MB）", touched the frame); set once: the page makes its buttons again when their text changes
    button.setMinimumWidth(button.sizeHint().width() + button.fontMetrics().height())
    cell = QWidget()
    layout = QHBoxLayout(cell)
    layout.setContentsMargins(CELL_PADDING)
    layout.addWidget(button)
    return cell


def _item(text: str, name: str, tip: str) -> QTableWidgetItem:
    """A read-only table cell that knows which model it belongs to (``Qt.UserRole``)."""
    item = QTableWidgetItem(text)
    item.setData(Qt.ItemDataRole.UserRole, name)
    if tip:
        item.setToolTip(tip)
    return item


def _same_folder(a: Path | None, b: Path | None) -> bool:
    if a is None or b is None:
        return False
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


class ModelsDialog(QDialog):
    """Installed models, the catalogue, import from disk, and the models folder.

    Args:
        settings: the app's settings (``models_dir`` says where models live).
        settings_file: where "Change folder…" saves the settings (None: the default settings file).
        model_in_use: the folder of the model the app runs now (default: ``settings.model_path``); it cannot
            be deleted.
        catalog: the catalogue to offer (default: ``library.catalog.load_app_catalog()``).
        parent: the main window.

    After it closes, :meth:`result_settings` gives the settings with the model to switch to (a new default, a
    model chosen with "Use this model", or the first model installed when none was in use) and the folder.

    With ``follow_load`` set (the main window sets it), every install dialog it opens covers the first load
    too and is announced with ``install_dialog_opened``, so the owner can switch to the new model itself and
    report that load; the owner then calls :meth:`model_switched`.

    Signals:
        default_changed(InstalledModel): the user made a model the default (or chose "Use this model").
        models_changed(): a model was installed or deleted, or the folder changed.
        install_dialog_opened(DownloadDialog): a download or import is about to start in this dialog.
    """

    default_changed = Signal(object)
    models_changed = Signal()
    install_dialog_opened = Signal(object)

    def __init__(
        self,
        settings: Settings,
        settings_file: Path | None = None,
        model_in_use: Path | None = None,
        catalog: list[CatalogEntry] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.settings = settings
        self.settings_file = settings_file
        # While a model is still loading the window has no folder to pass: the settings' choice is the one.
        in_use = model_in_use or settings.model_path
        self.model_in_use = Path(in_use) if in_use else None
        self.chosen: InstalledModel | None = None
        self.download_dialog: DownloadDialog | None = None
        self.catalog_error: str | None = None
        if catalog is None:
            try:
                catalog = load_app_catalog()
            except ModelError as exc:  # a broken mirror file must not hide the installed models
                catalog, self.catalog_error = [], str(exc)
        self.catalog = catalog
        self.installed: list[InstalledModel] = []
        self.follow_load = False

        self.setWindowTitle(self.tr("Models"))
        self.setAccessibleName(self.tr("Models"))
        # An explicit minimum keeps the window's size constraints fixed while labels change their text.
        self.setMinimumSize(760, 520)
        self.resize(980, 640)
        layout = QVBoxLayout(self)

        folder_row = QHBoxLayout()
        folder_row.addWidget(QLabel(self.tr("Models folder:")))
        self.folder_label = QLabel()
        self.folder_label.setAccessibleName(self.tr("Models folder"))
        self.folder_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        folder_row.addWidget(self.folder_label, 1)
        self.open_folder_button = QPushButton(self.tr("Open folder"))
        self.open_folder_button.setAccessibleName(self.tr("Open the models folder"))
        self.open_folder_button.clicked.connect(self.open_folder)
        folder_row.addWidget(self.open_folder_button)
        self.change_folder_button = QPushButton(self.tr("Change folder…"))
        self.change_folder_button.setAccessibleName(self.tr("Change where models are stored"))
        self.change_folder_button.clicked.connect(self.choose_folder)
        folder_row.addWidget(self.change_folder_button)
        layout.addLayout(folder_row)
        self.free_label = QLabel()
        self.free_label.setAccessibleName(self.tr("Free disk space"))
        self.free_label.setEnabled(False)
        layout.addWidget(self.free_label)

        installed_box = QGroupBox(self.tr("Installed"))
        installed_layout = QVBoxLayout(installed_box)
        self.installed_table = self._table(
            [
                self.tr("Default"),
                self.tr("Name"),
                self.tr("Precision"),
                self.tr("Size on disk"),
                self.tr("Source"),
                self.tr("Checksum"),
            ],
            self.tr("Installed models"),
        )
        header = self.installed_table.horizontalHeader()
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.installed_table.itemSelectionChanged.connect(self._update_buttons)
        installed_layout.addWidget(self.installed_table)
        self.empty_label = QLabel(
            self.tr("No model is installed yet: download one below, or import a file you already have.")
        )
        self.empty_label.setAccessibleName(self.tr("No models yet"))
        installed_layout.addWidget(self.empty_label)
        buttons = QHBoxLayout()
        self.default_button = QPushButton(self.tr("Set as default"))
        self.default_button.setAccessibleName(self.tr("Make the selected model the default"))
        self.default_button.clicked.connect(self.set_default)
        buttons.addWidget(self.default_button)
        self.delete_button = QPushButton(self.tr("Delete…"))
        self.delete_button.setAccessibleName(self.tr("Delete the selected model"))
        self.delete_button.clicked.connect(self.delete_selected)
        buttons.addWidget(self.delete_button)
        buttons.addStretch(1)
        self.import_button = QPushButton(self.tr("Import from disk…"))
        self.import_button.setAccessibleName(self.tr("Import a model from disk"))
        menu = QMenu(self.import_button)
        menu.addAction(self.tr("GGUF file…"), self.import_file)
        menu.addAction(self.tr("Hugging Face folder or model folder…"), self.import_folder)
        self.import_button.setMenu(menu)
        buttons.addWidget(self.import_button)
        installed_layout.addLayout(buttons)
        layout.addWidget(installed_box, 3)

        available_box = QGroupBox(self.tr("Available to download"))
        available_layout = QVBoxLayout(available_box)
        self.available_table = self._table(
            [self.tr("Name"), self.tr("About"), self.tr("Download"), self.tr("Licence"), ""],
            self.tr("Models available to download"),
        )
        self.available_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        # rows as tall as their Download button and its padding (the default row height squeezed it)
        self.available_table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.available_table.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        available_layout.addWidget(self.available_table)
        hub_note = QLabel(
            self.tr(
                "From the Hugging Face hub; nothing is fetched until you press Download. Each file is checked "
                "against the hub's SHA-256, then converted into a model folder here."
            )
        )
        hub_note.setWordWrap(True)
        hub_note.setEnabled(False)
        hub_note.setAccessibleName(self.tr("About downloads"))
        available_layout.addWidget(hub_note)
        layout.addWidget(available_box, 2)

        self.status = QLabel()
        self.status.setAccessibleName(self.tr("Status"))
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.close_button = close.button(QDialogButtonBox.StandardButton.Close)
        self.close_button.setAccessibleName(self.tr("Close"))
        close.rejected.connect(self.reject)
        layout.addWidget(close)
        # Enter closes the page, whatever has the focus: no other button here is a dialog default (a dialog's
        # buttons are, by default, and Enter pressed "Open folder", the first of them)
        for button in self.findChildren(QPushButton):
            button.setAutoDefault(False)
        self.close_button.setDefault(True)
        if self.catalog_error:
            self.status.setText(self.tr("The catalogue cannot be read: %1").replace("%1", self.catalog_error))
        self.refresh()

    def _table(self, headers: list[str], name: str) -> QTableWidget:
        table = QTableWidget(0, len(headers))
        table.setAccessibleName(name)
        corner = table.findChild(QAbstractButton)  # the "select all" button where the headers meet
        if corner is not None:
            corner.setAccessibleName(self.tr("Select all"))
        table.setHorizontalHeaderLabels(headers)
        table.verticalHeader().hide()
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        table.setAlternatingRowColors(True)
        table.setWordWrap(False)
        table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        return table

    # ----------------------------------------------------------------- reading

    @property
    def models_dir(self) -> Path:
        """The models folder in use (created if missing)."""
        return default_models_dir(self.settings.models_dir)

    @property
    def registry(self) -> Registry:
        """The registry of the models folder."""
        return Registry(self.models_dir)

    def refresh(self) -> None:
        """Read the models folder again and redraw both lists (no network)."""
        folder = self.models_dir
        self.folder_label.setText(str(folder))
        self.folder_label.setToolTip(str(folder))
        try:
            free = shutil.disk_usage(folder).free
            self.free_label.setText(self.tr("%1 free on this disk").replace("%1", human_bytes(free)))
        except OSError:
            self.free_label.setText("")
        selected = self.selected_model()
        try:
            self.installed = self.registry.list_models()
        except (ModelError, OSError) as exc:
            self.installed = []
            self.status.setText(self.tr("The models folder cannot be read: %1").replace("%1", str(exc)))
        self._fill_installed(selected.name if selected else None)
        self._fill_available()
        self._update_buttons()

    def _fill_installed(self, keep: str | None) -> None:
        table = self.installed_table
        table.setRowCount(len(self.installed))
        for row, model in enumerate(self.installed):
            in_use = _same_folder(model.folder, self.model_in_use)
            name = model.display_name
            if in_use:
                name += " " + self.tr("(in use)")
            if model.broken:
                name += " " + self.tr("(broken: delete it or import it again)")
            source = self.source_text(model)
            source_tip = source
            if model.bundled:
                source = self.tr("Included with the app")
                source_tip = self.tr(
                    "Included with the app, in %1 (read-only: it cannot be deleted)"
                ).replace("%1", str(model.folder.parent))
            tips = [
                self.tr("The default: opened when the app starts") if model.is_default else "",
                f"{model.name}\n{model.folder}",
                "",
                "",
                model.problem or source_tip,
                f"sha256 {model.checksum}",
            ]
            cells = [
                "★" if model.is_default else "",
                name,
                model.precision,
                human_bytes(model.bytes_on_disk),
                model.problem or source,
                model.checksum[:12],
            ]
            for column, (text, tip) in enumerate(zip(cells, tips, strict=True)):
                table.setItem(row, column, _item(text, model.name, tip))
            table.item(row, 0).setTextAlignment(Qt.AlignmentFlag.AlignCenter)  # type: ignore[union-attr]
            if model.name == keep:
                table.selectRow(row)
        if keep is None and self.installed:
            table.selectRow(0)
        table.setVisible(bool(self.installed))
        self.empty_label.setVisible(not self.installed)

    def source_text(self, model: InstalledModel) -> str:
        """Where ``model``'s weights came from, in the interface language (``InstalledModel.source_text`` is
        the command line's English)."""
        kind = model.source.get("kind")
        if kind == "import":
            return self.tr("imported from %1").replace("%1", str(model.source.get("path")))
        if kind == "hub" or model.bundled:
            return model.source_text  # "repo/file @ commit": names only (a bundled model is shown apart)
        return self.tr("unknown (a folder found without an install record)")

    def _fill_available(self) -> None:
        table = self.available_table
        installed = {m.name for m in self.installed}
        table.setRowCount(len(self.catalog))
        busy = self.download_dialog is not None and self.download_dialog.running
        for row, entry in enumerate(self.catalog):
            size = f"~{human_bytes(entry.approx_bytes)}" if entry.approx_bytes else "?"
            about = description(entry) or entry.source
            cells = [entry.display_name, about, size, entry.license]
            tips = [f"{entry.name}\n{entry.source}", about, "", entry.license_url]
            for column, (text, tip) in enumerate(zip(cells, tips, strict=True)):
                table.setItem(row, column, _item(text, entry.name, tip))
            button = QPushButton()
            button.setAutoDefault(False)  # Enter is Close (see __init__)
            button.setProperty("model_name", entry.name)
            if entry.name in installed:
                button.setText(self.tr("Installed"))
                button.setEnabled(False)
            else:
                kept = self.partial_download(entry)
                if kept:
                    button.setText(self.tr("Resume (%1 kept)").replace("%1", human_bytes(kept)))
                else:
                    button.setText(self.tr("Download"))
                button.setEnabled(not busy)
                button.clicked.connect(lambda _checked=False, e=entry: self.download(e))
            button.setAccessibleName(self.tr("Download %1").replace("%1", entry.display_name))
            table.setCellWidget(row, 4, _padded(button))

    def partial_download(self, entry: CatalogEntry) -> int:
        """Bytes of ``entry`` already downloaded by an earlier, interrupted attempt (0 when none)."""
        if entry.kind != "gguf":
            folder = self.models_dir / DOWNLOADS / entry.name
            return sum(partial_bytes(folder / f) for f in entry.files) if folder.is_dir() else 0
        return partial_bytes(self.models_dir / DOWNLOADS / entry.name / Path(entry.files[0]).name)

    def download_button(self, name: str) -> QPushButton:
        """The Download button of catalogue entry ``name``."""
        for row in range(self.available_table.rowCount()):
            cell = self.available_table.cellWidget(row, 4)
            button = cell.findChild(QPushButton) if cell is not None else None
            if isinstance(button, QPushButton) and button.property("model_name") == name:
                return button
        raise KeyError(name)

    def selected_model(self) -> InstalledModel | None:
        """The installed model selected in the table, or None."""
        rows = self.installed_table.selectionModel().selectedRows() if self.installed_table.model() else []
        if not rows:
            return None
        item = self.installed_table.item(rows[0].row(), 0)
        name = item.data(Qt.ItemDataRole.UserRole) if item else None
        return next((m for m in self.installed if m.name == name), None)

    def select(self, name: str) -> None:
        """Select the installed model called ``name``."""
        for row, model in enumerate(self.installed):
            if model.name == name:
                self.installed_table.selectRow(row)

    def _update_buttons(self) -> None:
        model = self.selected_model()
        self.default_button.setEnabled(model is not None and not model.is_default and not model.broken)
        self.delete_button.setEnabled(model is not None and not model.bundled)
        self.delete_button.setToolTip(
            self.tr("Included with the app: it is read-only and cannot be deleted")
            if model is not None and model.bundled
            else ""
        )
        busy = self.download_dialog is not None and self.download_dialog.running
        self.import_button.setEnabled(not busy)
        self.change_folder_button.setEnabled(not busy)

    # ----------------------------------------------------------------- changing

    def set_default(self) -> None:
        """Make the selected model the default (the app switches to it when this dialog closes)."""
        model = self.selected_model()
        if model is None:
            return
        try:
            self.registry.set_default(model.name)
        except ModelError as exc:
            self.status.setText(str(exc))
            return
        self.chosen = self.registry.get(model.name)
        self.status.setText(
            self.tr("%1 is now the default; the app switches to it when this window closes.").replace(
                "%1", model.display_name
            )
        )
        self.refresh()
        emit(self.default_changed, self.chosen)

    def delete_selected(self) -> None:
        """Delete the selected model after asking; the model in use is refused."""
        model = self.selected_model()
        if model is None or model.bundled:  # the button is disabled for these; never delete them
            return
        if _same_folder(model.folder, self.model_in_use):
            box = QMessageBox(
                QMessageBox.Icon.Information,
                self.tr("Model in use"),
                self.tr(
                    "%1 is the model in use, so it is not deleted. Make another model the default (Set as "
                    "default), close this window so the app switches to it, then delete this one."
                ).replace("%1", model.display_name),
                QMessageBox.StandardButton.Ok,
                self,
            )
            box.exec()
            return
        box = QMessageBox(
            QMessageBox.Icon.Question,
            self.tr("Delete model"),
            self.tr(
                "Delete %1? Its folder (%2, %3) is removed from disk. It can be downloaded or imported again."
            )
            .replace("%1", model.display_name)
            .replace("%2", str(model.folder))
            .replace("%3", human_bytes(model.bytes_on_disk)),
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self,
        )
        box.setDefaultButton(QMessageBox.StandardButton.No)
        if box.exec() != QMessageBox.StandardButton.Yes:
            return
        try:
            self.registry.delete_model(model.name)
        except ModelError as exc:
            self.status.setText(str(exc))
            return
        if self.chosen is not None and self.chosen.name == model.name:
            self.chosen = None
        self.status.setText(self.tr("Deleted %1.").replace("%1", model.display_name))
        self.installed_table.clearSelection()
        self.refresh()
        emit(self.models_changed)

    def open_folder(self) -> None:
        """Show the models folder in the file manager."""
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.models_dir)))

    def choose_folder(self) -> None:
        """Ask for another models folder and switch to it."""
        path = QFileDialog.getExistingDirectory(self, self.tr("Where to store models"), str(self.models_dir))
        if path:
            self.change_folder(Path(path))

    def change_folder(self, folder: Path) -> None:
        """Store models in ``folder`` from now on (saved in the settings). Models already in the old folder stay
        there."""
        old = self.models_dir
        self.settings = replace(self.settings, models_dir=str(folder))
        self.chosen = None
        self.refresh()
        text = self.tr(
            "Models are now stored in %1. The models in %2 stay there (move them by hand if you like)."
        )
        text = text.replace("%1", str(self.models_dir)).replace("%2", str(old))
        try:
            save_settings(self.settings, self.settings_file)
        except StorageError as exc:
            text += " " + self.tr("The setting could not be saved: %1").replace("%1", str(exc))
        self.status.setText(text)
        emit(self.models_changed)

    # ----------------------------------------------------------------- installing

    def _new_install_dialog(self) -> DownloadDialog | None:
        if self.download_dialog is not None and self.download_dialog.running:
            self.download_dialog.raise_()
            return None
        if self.download_dialog is not None:
            self.download_dialog.stop()
            self.download_dialog.deleteLater()
        dialog = DownloadDialog(self.models_dir, self.catalog, self)
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.follow_load = self.follow_load
        emit(self.install_dialog_opened, dialog)
        dialog.installed.connect(self._on_installed)
        dialog.use_requested.connect(self._on_use_requested)
        dialog.import_requested.connect(self.import_file)
        dialog.finished.connect(self._on_install_dialog_closed)
        self.download_dialog = dialog
        return dialog

    def download(self, entry: CatalogEntry | str) -> DownloadDialog | None:
        """Open the progress dialog and download ``entry`` (a catalogue entry or its name)."""
        if isinstance(entry, str):
            entry = next(e for e in self.catalog if e.name == entry)
        dialog = self._new_install_dialog()
        if dialog is None:
            return None
        dialog.start_download(entry)
        dialog.open()
        self._fill_available()
        self._update_buttons()
        return dialog

    def start_import(self, path: Path) -> DownloadDialog | None:
        """Open the progress dialog and import ``path`` (GGUF file, Hugging Face folder or model folder)."""
        dialog = self._new_install_dialog()
        if dialog is None:
            return None
        dialog.start_import(Path(path))
        dialog.open()
        self._update_buttons()
        return dialog

    def import_file(self) -> None:
        """Ask for a GGUF file and import it."""
        path, _ = QFileDialog.getOpenFileName(
            self, self.tr("Import a GGUF file"), str(Path.home()), self.tr("GGUF models (*.gguf)")
        )
        if path:
            self.start_import(Path(path))

    def import_folder(self) -> None:
        """Ask for a Hugging Face folder (config.json, *.safetensors) or a model folder and import it."""
        path = QFileDialog.getExistingDirectory(self, self.tr("Import a model folder"), str(Path.home()))
        if path:
            self.start_import(Path(path))

    def _on_installed(self, model: InstalledModel) -> None:
        self.status.setText(self.tr("Installed %1.").replace("%1", model.display_name))
        self.refresh()
        self.select(model.name)
        emit(self.models_changed)

    def model_switched(self, model: InstalledModel) -> None:
        """The app now runs ``model`` (installed here and loaded by the owner): show it as in use, and keep
        :meth:`result_settings` from switching back when this dialog closes."""
        self.model_in_use = model.folder
        self.settings = replace(self.settings, model_path=str(model.folder))
        self.chosen = None
        self.refresh()
        self.select(model.name)

    def _on_use_requested(self, model: InstalledModel) -> None:
        self.select(model.name)
        self.set_default()
        self.accept()

    def _on_install_dialog_closed(self, _result: int) -> None:
        self.refresh()

    def done(self, result: int) -> None:
        """Close; a download still running is cancelled (its partial file is kept) and its thread joined."""
        if self.download_dialog is not None:
            self.download_dialog.stop()
        super().done(result)

    # ----------------------------------------------------------------- result

    def result_settings(self) -> Settings:
        """The settings to apply once the dialog has closed.

        ``model_path`` is the model to switch to: the one made default or chosen with "Use this model", or,
        when no model was in use, the registry's default (so the first download is used at once).
        """
        target: Path | None = None
        if self.chosen is not None and self.chosen.folder.is_dir():
            target = self.chosen.folder
        elif self.model_in_use is None or not self.model_in_use.is_dir():
            default = self.registry.get_default()
            target = default.folder if default else None
        if target is None or _same_folder(target, self.model_in_use):
            return self.settings
        return replace(self.settings, model_path=str(target))
