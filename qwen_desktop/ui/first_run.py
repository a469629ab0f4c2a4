"""The first-run page: "Choose a model", in plain words, with the choices that apply.

- a model that came with the app (``library.bundled``), when there is one the app is not using yet;
- download the catalogue's default model (Qwen2.5 0.5B Instruct): its size and how long it takes;
- a model file the user already has: one click opens the file picker (a folder has its own, smaller button);
  dropping a model file or folder anywhere on the window does the same (``MainWindow`` handles the drop, with
  :func:`model_paths`).

The page only says what to do; the main window starts the install (``MainWindow.start_install``) and
switches to the model once it is ready.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QMimeData, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCommandLinkButton,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.library.progress import build_plan, plan_minutes
from qwen_desktop.ui.icons import icon
from qwen_desktop.units import human_bytes
from qwen_desktop.worker import emit

if TYPE_CHECKING:
    from qwen_desktop.library.catalog import CatalogEntry
    from qwen_desktop.library.installed import InstalledModel

COLUMN_WIDTH = 560  # px: the page reads as one centred column
# The choices look like cards that can be pressed; palette() keeps them right in the light and dark themes.
CARD_STYLE = """
QCommandLinkButton {
    border: 1px solid palette(mid);
    border-radius: 8px;
    background: palette(base);
    padding: 12px;
}
QCommandLinkButton:hover { border-color: palette(highlight); }
QCommandLinkButton:focus { border: 2px solid palette(highlight); }
"""


def is_model_path(path: Path) -> bool:
    """True for what an import takes: a ``.gguf`` file, or a folder with a ``manifest.json`` (a model folder)
    or a ``config.json`` (a Hugging Face folder or an ONNX export)."""
    try:
        if path.is_file():
            return path.suffix.lower() == ".gguf"
        return path.is_dir() and ((path / "manifest.json").is_file() or (path / "config.json").is_file())
    except OSError:
        return False


def model_paths(mime: QMimeData) -> list[Path]:
    """The local files and folders in a drag that an import takes (see :func:`is_model_path`)."""
    if not mime.hasUrls():
        return []
    paths = [Path(url.toLocalFile()) for url in mime.urls() if url.isLocalFile()]
    return [p for p in paths if is_model_path(p)]


def prepare_minutes() -> int:
    """Minutes a default build and first load take on the 2-core machine the phase costs were measured on."""
    return plan_minutes(build_plan())


class FirstRunPage(QWidget):
    """ "Choose a model": the page the window shows while it has no model.

    Signals:
        bundled_chosen(InstalledModel): use the model that came with the app.
        download_chosen(CatalogEntry): download (then prepare) this catalogue model.
        import_chosen(Path): import this file or folder.
        more_chosen(): show the models page (other downloads, the models folder).
    """

    bundled_chosen = Signal(object)
    download_chosen = Signal(object)
    import_chosen = Signal(object)
    more_chosen = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName(self.tr("Choose a model"))
        self.setStyleSheet(CARD_STYLE)
        self.bundled: InstalledModel | None = None
        self.entry: CatalogEntry | None = None
        outer = QHBoxLayout(self)
        outer.addStretch(1)
        column = QWidget()
        column.setMaximumWidth(COLUMN_WIDTH)
        outer.addWidget(column, 4)
        outer.addStretch(1)
        layout = QVBoxLayout(column)
        layout.addStretch(1)

        self.title = QLabel(self.tr("<h2>Choose a model</h2>"))
        self.title.setAccessibleName(self.tr("Choose a model"))
        layout.addWidget(self.title)
        self.intro = QLabel(
            self.tr(
                "Qwen Desktop answers with a model that runs on this computer: what you type never leaves "
                "it. Pick one to start."
            )
        )
        self.intro.setWordWrap(True)
        self.intro.setAccessibleName(self.tr("About this page"))
        layout.addWidget(self.intro)
        layout.addSpacing(8)
        self.problem = QLabel()
        self.problem.setObjectName("firstRunProblem")
        self.problem.setAccessibleName(self.tr("What went wrong"))
        self.problem.setWordWrap(True)
        self.problem.hide()
        layout.addWidget(self.problem)

        self.bundled_button = QCommandLinkButton()
        self.bundled_button.setAccessibleName(self.tr("Use the model included with the app"))
        self.bundled_button.clicked.connect(lambda: self.bundled and emit(self.bundled_chosen, self.bundled))
        self.bundled_button.hide()
        layout.addWidget(self.bundled_button)
        layout.addSpacing(4)

        self.download_button = QCommandLinkButton()
        self.download_button.setAccessibleName(self.tr("Download a model"))
        self.download_button.clicked.connect(lambda: self.entry and emit(self.download_chosen, self.entry))
        self.download_button.hide()
        layout.addWidget(self.download_button)
        layout.addSpacing(4)

        self.import_button = QCommandLinkButton(
            self.tr("Use a model file you already have…"),
            self.tr(
                "For example one you downloaded for LM Studio or Ollama. It is prepared once "
                "for this app; the file itself is left as it is."
            ),
        )
        self.import_button.setAccessibleName(self.tr("Choose a model file on this computer"))
        self.import_button.clicked.connect(self.choose_file)
        layout.addWidget(self.import_button)

        row = QHBoxLayout()
        self.folder_button = QPushButton(self.tr("Choose a folder instead…"))
        self.folder_button.setAccessibleName(self.tr("Choose a model folder on this computer"))
        self.folder_button.setFlat(True)
        self.folder_button.clicked.connect(self.choose_folder)
        row.addWidget(self.folder_button)
        row.addStretch(1)
        self.more_button = QPushButton(self.tr("More models…"))
        self.more_button.setAccessibleName(self.tr("Show all the models you can download"))
        self.more_button.setFlat(True)
        self.more_button.clicked.connect(lambda: emit(self.more_chosen))
        row.addWidget(self.more_button)
        layout.addLayout(row)
        # Enter picks the focused choice as Space does (outside a dialog a button takes only Space by default)
        for button in (
            self.bundled_button,
            self.download_button,
            self.import_button,
            self.folder_button,
            self.more_button,
        ):
            button.setAutoDefault(True)
        layout.addSpacing(8)

        self.drop_hint = QLabel(self.tr("Or drop a model file or folder anywhere on this window."))
        self.drop_hint.setAccessibleName(self.tr("Drop a model here"))
        self.drop_hint.setEnabled(False)  # the palette's muted text
        self.drop_hint.setAlignment(Qt.AlignmentFlag.AlignCenter)
        layout.addWidget(self.drop_hint)
        layout.addStretch(2)
        self._draw_arrows()

    def _draw_arrows(self) -> None:
        # Fusion's command-link arrow is a fixed dark pixmap, lost on the dark theme: the app's own, in colour
        for link in (self.bundled_button, self.download_button, self.import_button):
            link.setIcon(icon("arrow", self.palette(), QPalette.ColorRole.Link))

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 - Qt's name
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._draw_arrows()

    def set_choices(self, bundled: InstalledModel | None, entry: CatalogEntry | None) -> None:
        """Offer ``bundled`` (a model that came with the app) and the download of ``entry``; None hides it."""
        self.bundled, self.entry = bundled, entry
        if bundled is not None:
            self.bundled_button.setText(self.tr("Start with %1").replace("%1", bundled.display_name))
            self.bundled_button.setDescription(
                self.tr("Included with the app, ready at once (%1 on disk).").replace(
                    "%1", human_bytes(bundled.bytes_on_disk)
                )
            )
        self.bundled_button.setVisible(bundled is not None)
        if entry is not None:
            self.download_button.setText(self.tr("Download %1").replace("%1", entry.display_name))
            size = human_bytes(entry.approx_bytes) if entry.approx_bytes else self.tr("a few hundred MB")
            self.download_button.setDescription(
                self.tr(
                    "Downloads %1, then takes about %2 min to get ready on a 2-core laptop. Only this step "
                    "uses the internet."
                )
                .replace("%1", size)
                .replace("%2", str(prepare_minutes()))
            )
        self.download_button.setVisible(entry is not None)

    def focus_first_choice(self) -> None:
        """Give the keyboard to the first choice on show (Enter or Space picks it)."""
        for button in (self.bundled_button, self.download_button, self.import_button):
            if not button.isHidden():
                button.setFocus(Qt.FocusReason.OtherFocusReason)
                return

    def show_problem(self, text: str) -> None:
        """Say in one sentence why the last choice did not work (the choices stay as they are); "" hides it."""
        red = self.palette().color(QPalette.ColorRole.BrightText).name()  # the theme's error colour
        self.problem.setStyleSheet(f"color: {red};")
        self.problem.setText(text)
        self.problem.setVisible(bool(text))

    def choose_file(self) -> None:
        """Ask for a model file (one click from the page) and import it."""
        path, _ = QFileDialog.getOpenFileName(
            self,
            self.tr("Choose a model file"),
            str(Path.home()),
            self.tr("Model files (*.gguf);;All files (*)"),
        )
        if path:
            emit(self.import_chosen, Path(path))

    def choose_folder(self) -> None:
        """Ask for a model folder and import it."""
        path = QFileDialog.getExistingDirectory(self, self.tr("Choose a model folder"), str(Path.home()))
        if path:
            emit(self.import_chosen, Path(path))
