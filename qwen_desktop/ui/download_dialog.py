"""Installing a model off the GUI thread: a download from the hub (then a build), or an import from disk.

``InstallWorker`` runs ``Registry.install_from_download`` or ``Registry.import_model`` on its own ``QThread``;
``InstallTask`` is the GUI side's handle (it owns the thread, queues jobs, cancels, joins). The only things that
cross threads are signals and the cancel ``threading.Event``; the registry's progress callbacks are plain
callables that emit signals, at most ~10 a second.

``DownloadDialog`` shows one install on one bar that only moves forward over every phase (download, build,
and, when its owner loads the model, the first load; ``library.progress``), with the time since the start, the
time left and the phase in plain words, then the result. Cancel keeps the partial download, so a later Download
resumes it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from PySide6.QtCore import QObject, Qt, QThread, QTimer, Signal, Slot
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.engine.errors import ModelError
from qwen_desktop.library import progress as phases
from qwen_desktop.library.catalog import CatalogEntry
from qwen_desktop.library.download import (
    ChecksumError,
    ConnectionLostError,
    DiskSpaceError,
    DownloadCancelledError,
    DownloadProgress,
    HubAuthError,
    HubNotFoundError,
    HubOfflineError,
    HubServerError,
    hub_endpoint,
    offline_message,
)
from qwen_desktop.library.progress import InstallProgress, ProgressState, download_plan, import_plan
from qwen_desktop.library.registry import InstalledModel, Registry
from qwen_desktop.units import human_bytes, human_seconds
from qwen_desktop.worker import emit, forward_signals, signal_names

PROGRESS_INTERVAL = 0.1  # seconds between progress signals: the registry reports every 64 KiB chunk
BAR_STEPS = 1000  # the bar counts per mille of the whole install
TICK_MS = 1000  # the elapsed time and the time left are redrawn this often between reports
RATE_REFRESH = 1.0  # seconds between redraws of the download's speed and time left (readable, not a flicker)

ERROR_KINDS: tuple[tuple[type[Exception], str], ...] = (
    (HubOfflineError, "offline"),
    (HubNotFoundError, "not_found"),
    (HubAuthError, "auth"),
    (ChecksumError, "checksum"),
    (DiskSpaceError, "disk"),
    (HubServerError, "server"),
    (ConnectionLostError, "connection"),
)


def error_kind(exc: BaseException) -> str:
    """A short name for what went wrong ("offline", "not_found", "auth", ..., "other")."""
    return next((kind for cls, kind in ERROR_KINDS if isinstance(exc, cls)), "other")


class InstallSignals(QObject):
    """The events of a download or import, declared once: ``InstallWorker`` emits them on its thread and
    ``InstallTask`` repeats each on the GUI thread (``worker.forward_signals``, as the engine's bridge does).

    Signals:
        download_progress(DownloadProgress): bytes done and total, speed, time left (throttled, and always
            once at the start and once when the last byte arrives).
        build_progress(str, int, int): build stage, steps done, steps in all.
        installed(InstalledModel): the model is built and registered.
        failed(str, str): error kind (see :func:`error_kind`) and the registry's one-line message.
        cancelled(str): the job stopped on request; the message says what was kept.
    """

    download_progress = Signal(object)
    build_progress = Signal(str, int, int)
    installed = Signal(object)
    failed = Signal(str, str)
    cancelled = Signal(str)


class InstallWorker(InstallSignals):
    """Runs one install at a time on the thread it is moved to; its signals are ``InstallSignals``'.

    Args:
        models_dir: the models folder the registry installs into.
        catalog: the catalogue that names the downloads.
        cancel: set from any thread to stop the running job at its next chunk or build step.
    """

    def __init__(self, models_dir: Path, catalog: list[CatalogEntry], cancel: threading.Event) -> None:
        super().__init__()
        self.models_dir = Path(models_dir)
        self.catalog = catalog
        self.cancel = cancel
        self._last = 0.0

    def _on_download(self, progress: DownloadProgress) -> None:
        now = time.monotonic()
        if progress.done >= progress.total or now - self._last >= PROGRESS_INTERVAL or not self._last:
            self._last = now
            emit(self.download_progress, progress)

    def _on_build(self, stage: str, done: int, total: int) -> None:
        emit(self.build_progress, stage, done, total)

    def _run(self, job: str, target: str) -> None:
        self._last = 0.0
        registry = Registry(self.models_dir)
        try:
            if job == "download":
                model = registry.install_from_download(
                    target,
                    catalog=self.catalog,
                    on_download=self._on_download,
                    on_build=self._on_build,
                    cancel=self.cancel,
                )
            else:
                model = registry.import_model(Path(target), on_build=self._on_build, cancel=self.cancel)
        except DownloadCancelledError as exc:
            emit(self.cancelled, str(exc))
        except ModelError as exc:
            emit(self.failed, error_kind(exc), str(exc))
        except Exception as exc:  # a bug or an OS error the registry did not foresee: say it, keep the app
            emit(self.failed, "other", f"{type(exc).__name__}: {exc}")
        else:
            emit(self.installed, model)
        finally:
            self.cancel.clear()

    @Slot(str)
    def download(self, name: str) -> None:
        """Download, verify, build and register the catalogue model ``name``."""
        self._run("download", name)

    @Slot(str)
    def import_path(self, path: str) -> None:
        """Build or copy the GGUF file or folder at ``path`` into the models folder."""
        self._run("import", path)


class InstallTask(InstallSignals):
    """The GUI thread's handle on an ``InstallWorker`` and its thread.

    Signals:
        every ``InstallSignals`` signal, as the worker emits it, on the GUI thread.
        request_download(str): queued to ``InstallWorker.download``.
        request_import(str): queued to ``InstallWorker.import_path``.
    """

    request_download = Signal(str)
    request_import = Signal(str)

    def __init__(self, models_dir: Path, catalog: list[CatalogEntry], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.cancel_event = threading.Event()
        self.install_thread = QThread(self)
        self.install_thread.setObjectName("model-install")
        self.worker = InstallWorker(models_dir, catalog, self.cancel_event)
        self.worker.moveToThread(self.install_thread)
        self.request_download.connect(self.worker.download)
        self.request_import.connect(self.worker.import_path)
        self.install_thread.finished.connect(self.worker.deleteLater)
        forward_signals(self.worker, self, signal_names(InstallSignals))
        self.install_thread.start()

    def download(self, name: str) -> None:
        """Queue the download of catalogue model ``name``."""
        self.cancel_event.clear()
        emit(self.request_download, name)

    def import_path(self, path: Path | str) -> None:
        """Queue the import of ``path``."""
        self.cancel_event.clear()
        emit(self.request_import, str(path))

    def cancel(self) -> None:
        """Stop the running job at its next chunk (download) or step (build)."""
        self.cancel_event.set()

    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Cancel what runs, stop the thread and wait for it. Returns False if it did not stop in time."""
        if not self.install_thread.isRunning():
            return True
        self.cancel()
        self.install_thread.quit()
        return bool(self.install_thread.wait(timeout_ms))


class DownloadDialog(QDialog):
    """Progress of one download (then build) or import, and how it ended.

    Args:
        models_dir: the models folder to install into.
        catalog: the catalogue that names the downloads.
        parent: the models dialog (or the main window).

    Set ``follow_load`` before starting when the owner loads the new model once it is installed (the main
    window does): the bar then also covers that first load, which the owner reports with :meth:`load_phase`,
    :meth:`waiting_for_answer`, :meth:`load_done` and :meth:`load_failed`; the dialog closes itself once the
    model is ready.

    Signals:
        installed(InstalledModel): the model is registered and appears in the installed list.
        use_requested(InstalledModel): "Use this model" was pressed (the dialog then closes).
        import_requested(): "Use a model file you already have…" was pressed after the hub could not be
            reached.
        progress_changed(ProgressState): the bar, phase or times changed.
        failed(str, str): the install failed: error kind (``error_kind``) and the sentence shown.
    """

    installed = Signal(object)
    use_requested = Signal(object)
    import_requested = Signal()
    progress_changed = Signal(object)
    failed = Signal(str, str)

    def __init__(self, models_dir: Path, catalog: list[CatalogEntry], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.models_dir = Path(models_dir)
        self.catalog = catalog
        self.task = InstallTask(self.models_dir, catalog, self)
        self.task.download_progress.connect(self._on_download_progress)
        self.task.build_progress.connect(self._on_build_progress)
        self.task.installed.connect(self._on_installed)
        self.task.failed.connect(self._on_failed)
        self.task.cancelled.connect(self._on_cancelled)
        self.running = False
        self.entry: CatalogEntry | None = None
        self.source: Path | None = None
        self.model: InstalledModel | None = None
        self.error: tuple[str, str] | None = None
        self._close_when_stopped = False
        self._last_progress: DownloadProgress | None = None
        self._building = False
        self.follow_load = False
        self.loading = False  # installed; the owner is loading it (follow_load)
        self._waiting = False  # installed; the owner loads it once the answer being written is done
        self.tracker: InstallProgress | None = None
        self.state: ProgressState | None = None
        self._bytes_text = ""
        self._rate_text = ""
        self._rate_at: float | None = None
        self._ticker = QTimer(self)
        self._ticker.setInterval(TICK_MS)
        self._ticker.timeout.connect(self._tick)

        self.setWindowTitle(self.tr("Download a model"))
        self.setAccessibleName(self.tr("Model download"))
        # An explicit minimum keeps the window's size constraints fixed while labels change their text.
        self.setMinimumSize(560, 260)
        layout = QVBoxLayout(self)
        self.title = QLabel()
        self.title.setAccessibleName(self.tr("What is being installed"))
        self.title.setWordWrap(True)
        layout.addWidget(self.title)
        self.source_label = QLabel()
        self.source_label.setAccessibleName(self.tr("Where it comes from"))
        self.source_label.setWordWrap(True)
        self.source_label.setEnabled(False)  # the palette's muted text
        self.source_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.source_label)
        self.bar = QProgressBar()
        self.bar.setAccessibleName(self.tr("Progress"))
        self.bar.setRange(0, BAR_STEPS)
        self.bar.setValue(0)
        layout.addWidget(self.bar)
        self.stage = QLabel()
        self.stage.setAccessibleName(self.tr("Stage"))
        layout.addWidget(self.stage)
        self.times = QLabel()
        self.times.setAccessibleName(self.tr("Time taken and time left"))
        layout.addWidget(self.times)
        self.detail = QLabel()
        self.detail.setAccessibleName(self.tr("Bytes, speed and time left"))
        self.detail.setWordWrap(True)
        layout.addWidget(self.detail)
        self.note = QLabel()
        self.note.setAccessibleName(self.tr("Note"))
        self.note.setWordWrap(True)
        self.note.setEnabled(False)
        layout.addWidget(self.note)
        self.error_label = QLabel()
        self.error_label.setObjectName("downloadError")
        self.error_label.setAccessibleName(self.tr("Problem"))
        self.error_label.setWordWrap(True)
        self.error_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error_label.hide()
        layout.addWidget(self.error_label)

        row = QHBoxLayout()
        self.import_button = QPushButton(self.tr("Use a model file you already have…"))
        self.import_button.setAccessibleName(self.tr("Import a model from disk instead"))
        self.import_button.clicked.connect(self._on_import_clicked)
        self.import_button.hide()
        row.addWidget(self.import_button)
        self.retry_button = QPushButton(self.tr("Resume"))
        self.retry_button.setAccessibleName(self.tr("Resume or retry the download"))
        self.retry_button.clicked.connect(self.retry)
        self.retry_button.hide()
        row.addWidget(self.retry_button)
        row.addStretch(1)
        self.use_button = QPushButton(self.tr("Use this model"))
        self.use_button.setAccessibleName(self.tr("Use this model now"))
        self.use_button.clicked.connect(self._on_use_clicked)
        self.use_button.hide()
        row.addWidget(self.use_button)
        self.close_button = QPushButton(self.tr("Cancel"))
        self.close_button.setAccessibleName(self.tr("Cancel or close"))
        self.close_button.clicked.connect(self.reject)
        row.addWidget(self.close_button)
        layout.addLayout(row)
        # Enter must not press Cancel while a download or build runs (a dialog's first button is its
        # default otherwise); Space still presses the focused button, Esc still cancels. Close becomes the
        # default once the job has ended (_ended), "Use this model" where it is offered.
        for button in (self.import_button, self.retry_button, self.use_button, self.close_button):
            button.setAutoDefault(False)

    # ----------------------------------------------------------------- starting

    def start_download(self, entry: CatalogEntry) -> None:
        """Download, verify, build and register ``entry`` (resuming a partial download if one is kept)."""
        self.entry, self.source = entry, None
        self.setWindowTitle(self.tr("Download a model"))
        self.title.setText(self.tr("<b>Downloading %1</b>").replace("%1", _escape(entry.display_name)))
        size = (
            self.tr("about %1").replace("%1", human_bytes(entry.approx_bytes)) if entry.approx_bytes else ""
        )
        parts = [entry.source, self.tr("licence %1").replace("%1", entry.license), size]
        self.source_label.setText(" · ".join(p for p in parts if p))
        self.note.setText(
            self.tr(
                "Cancel keeps what has arrived: pressing Download again later continues from there. "
                "The file is checked against the hub's SHA-256 before it is used."
            )
        )
        self._begin(
            self.tr("Connecting to the Hugging Face hub…"), download_plan(entry.kind, self.follow_load)
        )
        self.task.download(entry.name)

    def start_import(self, path: Path) -> None:
        """Build (GGUF file, Hugging Face folder) or copy (model folder) ``path`` into the models folder."""
        self.entry, self.source = None, Path(path)
        self.setWindowTitle(self.tr("Import a model"))
        self.title.setText(self.tr("<b>Importing %1</b>").replace("%1", _escape(self.source.name)))
        self.source_label.setText(str(self.source))
        plan = import_plan(self.source, self.follow_load)
        if phases.QUANTIZE in plan:
            minutes = phases.plan_minutes(plan)
            self.note.setText(
                self.tr(
                    "The file is prepared once for this app; that takes about %1 min on a 2-core laptop "
                    "(less on a faster computer). Cancel stops it and leaves nothing behind."
                ).replace("%1", str(minutes))
            )
        else:
            self.note.setText(self.tr("The model is copied into the models folder."))
        self._begin(self.tr("Reading…"), plan)
        self.task.import_path(self.source)

    def retry(self) -> None:
        """Start the same download or import again (a download resumes from its partial file)."""
        if self.running:
            return
        if self.entry is not None:
            self.start_download(self.entry)
        elif self.source is not None:
            self.start_import(self.source)

    def _begin(self, stage: str, plan: tuple[str, ...]) -> None:
        self.running = True
        self.loading = False
        self._waiting = False
        self.model = None
        self.error = None
        self._close_when_stopped = False
        self.tracker = InstallProgress(plan)
        self.state = None
        self._bytes_text = ""
        self._rate_text = ""
        self._rate_at = None
        self.stage.setText(stage)
        self.bar.setValue(0)
        self.times.setText("")
        self.detail.setText("")
        self.detail.setToolTip("")
        self._last_progress = None
        self._building = False
        self._show(self.tracker.state())
        self._ticker.start()
        self.error_label.hide()
        for button in (self.import_button, self.retry_button, self.use_button):
            button.hide()
        self.close_button.setText(self.tr("Cancel"))
        self.close_button.setEnabled(True)
        self.close_button.setDefault(False)  # running again: Enter presses nothing
        self.use_button.setDefault(False)

    # ----------------------------------------------------------------- progress

    def _on_download_progress(self, progress: DownloadProgress) -> None:
        if not self.running or self.tracker is None:
            return
        self._last_progress = progress
        total = max(progress.total, 1)
        text = self.tr("%1 of %2").replace("%1", human_bytes(progress.done)).replace("%2", human_bytes(total))
        now = time.monotonic()
        if self._rate_at is None:
            self._rate_at = now  # the first report: no speed yet (the first chunks come in a burst)
        elif progress.done >= total:
            self._rate_text = ""
        elif progress.speed > 0 and now - self._rate_at >= RATE_REFRESH:
            self._rate_at = now
            self._rate_text = " · " + self.tr("%1/s").replace("%1", human_bytes(progress.speed))
            if progress.eta is not None:
                self._rate_text += " · " + self.tr("about %1 left").replace("%1", _about(progress.eta))
        self._bytes_text = text + self._rate_text
        self._show(self.tracker.download(progress.done, progress.total, progress.eta))

    def _on_build_progress(self, stage: str, done: int, total: int) -> None:
        if not self.running or self.tracker is None:
            return
        self._building = True
        self._bytes_text = ""
        self._show(self.tracker.build(stage, done, total))

    def _tick(self) -> None:
        if self.tracker is not None and (self.running or self.loading):
            self._show(self.tracker.state())

    def phase_text(self, phase: str) -> str:
        """What ``phase`` (a ``library.progress`` phase) is doing, in plain words."""
        texts = {
            phases.FETCH: self.tr("Downloading the model"),
            phases.READ: self.tr("Reading the file"),
            phases.CALIBRATE: self.tr("Trying the model on a sample text"),
            phases.QUANTIZE: self.tr("Making the model smaller so it runs fast"),
            phases.WRITE: self.tr("Saving"),
            phases.PREFILL: self.tr("Preparing quick reading of long messages"),
            phases.WRITE_PREFILL: self.tr("Saving"),
            phases.HEAD: self.tr("Finishing the model"),
            phases.VERIFY: self.tr("Checking the files"),
            phases.COPY: self.tr("Copying the model"),
            phases.LOAD: self.tr("Starting the model"),
        }
        return texts.get(phase, phase)

    def _show(self, state: ProgressState) -> None:
        """Draw ``state``: the bar (it only moves forward), the phase, the time taken and the time left."""
        self.state = state
        self.bar.setValue(max(self.bar.value(), round(state.fraction * BAR_STEPS)))
        if self._waiting:
            pass  # the stage says what it waits for
        elif state.phase != phases.FETCH or self._last_progress is not None or state.fraction > 0:
            self.stage.setText(self.phase_text(state.phase) + "…")
        times = self.tr("%1 so far").replace("%1", human_seconds(state.elapsed))
        if state.fraction >= 1.0 and state.remaining == 0.0:  # finished: no "about 5 s left" under Ready
            times = self.tr("Done in %1").replace("%1", human_seconds(state.elapsed))
        elif state.remaining is None:
            times += " · " + self.tr("working out the time left…")
        elif state.phase == phases.FETCH and self.tracker is not None and len(self.tracker.plan) > 1:
            # the download's own time left is beside its bytes: this one also counts what comes after it
            times += " · " + self.tr("about %1 left in all").replace("%1", _about(state.remaining))
        else:
            times += " · " + self.tr("about %1 left").replace("%1", _about(state.remaining))
        self.times.setText(times)
        self.detail.setText(self._bytes_text)
        emit(self.progress_changed, state)

    # ----------------------------------------------------------------- the first load (follow_load)

    def load_phase(self, phase: object) -> None:
        """The owner's load of the new model began ``phase`` (an ``engine.load_phase.LoadPhase``)."""
        if self.loading and self.tracker is not None:
            self._waiting = False
            self._show(self.tracker.load(phase))

    def waiting_for_answer(self) -> None:
        """The owner switches to the new model once the answer being written has finished."""
        if self.loading:
            self._waiting = True
            self.stage.setText(
                self.tr("Installed. Switching to it as soon as the answer being written is done…")
            )

    def load_done(self, name: str) -> None:
        """The new model is loaded and in use: show it, then close."""
        if not self.loading or self.tracker is None:
            return
        self.loading = False
        self._ticker.stop()
        self._show(self.tracker.finish())
        self.stage.setText(self.tr("Ready: the app now uses %1.").replace("%1", name))
        self._ended()
        QTimer.singleShot(0, self.accept)

    def load_failed(self, message: str) -> None:
        """The new model is installed but could not be loaded."""
        if not self.loading:
            return
        self.loading = False
        self._ticker.stop()
        self.stage.setText(self.tr("Installed, but it could not be started"))
        self.error_label.setText(_escape(message))
        self.error_label.show()
        self._ended()

    # ----------------------------------------------------------------- endings

    def _ended(self) -> None:
        self.running = False
        if not self.loading:
            self._ticker.stop()
        self.close_button.setText(self.tr("Close"))
        self.close_button.setEnabled(True)
        if not self.use_button.isDefault():
            self.close_button.setDefault(True)
        if self._close_when_stopped:
            self.done(QDialog.DialogCode.Rejected)

    def _on_installed(self, model: InstalledModel) -> None:
        self.model = model
        self._bytes_text = ""
        self.detail.setText(
            self.tr("%1 · %2 on disk · in %3")
            .replace("%1", model.precision)
            .replace("%2", human_bytes(model.bytes_on_disk))
            .replace("%3", str(model.folder))
        )
        if self.follow_load and self.tracker is not None:
            self.loading = True  # the owner loads it now and reports here
            self._show(self.tracker.update(phases.LOAD, 0.0))
            self.note.setText(self.tr("The model is installed; the app switches to it by itself."))
        else:
            if self.tracker is not None:
                self._show(self.tracker.finish())
            self.stage.setText(self.tr("Installed"))
            self.note.setText(self.tr("The model is ready. It is listed among the installed models."))
            self.use_button.show()
            self.use_button.setDefault(True)
        self._ended()
        emit(self.installed, model)

    def _on_cancelled(self, message: str) -> None:
        self.stage.setText(self.tr("Paused"))
        kept = self.entry is not None
        if kept:
            self.note.setText(
                self.tr(
                    "What has arrived is kept in the models folder; Resume (or Download later) continues "
                    "from there."
                )
            )
            self.retry_button.setText(self.tr("Resume"))
            self.retry_button.show()
        else:
            self.note.setText(self.tr("The import was cancelled; nothing was installed."))
        last = self._last_progress
        if kept and self._building:
            self.detail.setText(
                self.tr("Stopped while building. The downloaded file is kept: Resume only builds it.")
            )
        elif kept and last is not None:
            self.detail.setText(
                self.tr("Paused at %1 of %2.")
                .replace("%1", human_bytes(last.done))
                .replace("%2", human_bytes(last.total))
            )
        else:
            self.detail.setText(self.tr("Stopped."))
        self.detail.setToolTip(message)
        self._ended()

    def _on_failed(self, kind: str, message: str) -> None:
        self.error = (kind, message)
        headlines = {
            "offline": self.tr("The Hugging Face hub cannot be reached."),
            "not_found": self.tr("This model was not found on the hub."),
            "auth": self.tr("This model needs a Hugging Face login."),
            "checksum": self.tr("The download arrived damaged and was deleted; nothing was installed."),
            "disk": self.tr("Not enough disk space."),
            "server": self.tr("The hub keeps answering with an error."),
            "connection": self.tr("The connection keeps dropping; what arrived is kept."),
        }
        headline = headlines.get(kind, self.tr("The model could not be installed."))
        if kind == "offline":
            # No connection (or the proxy or a certificate in the way): one sentence, nothing to add.
            headline, detail = "", self.no_connection_text() if message == offline_message() else message
        else:
            detail = message
        self.stage.setText(self.tr("Failed"))
        self.times.setText("")
        if kind == "connection" or (kind == "server" and self._last_progress is not None):
            self.note.setText(self.tr("What has arrived is kept; Resume continues from there."))
        else:
            self.note.setText("")
        red = self.palette().color(QPalette.ColorRole.BrightText).name()  # the theme's error colour
        self.error_label.setStyleSheet(f"color: {red};")
        self.error_label.setText(
            f"<b>{_escape(headline)}</b><br>{_escape(detail)}" if headline else _escape(detail)
        )
        self.error_label.show()
        self.import_button.setVisible(kind in ("offline", "not_found", "auth") and self.entry is not None)
        if self.entry is not None and kind != "disk":
            self.retry_button.setText(self.tr("Resume") if kind == "connection" else self.tr("Try again"))
            self.retry_button.show()
        self._ended()
        emit(self.failed, kind, headline or detail)

    def no_connection_text(self) -> str:
        """The one sentence for a machine that cannot reach the hub."""
        host = urlsplit(hub_endpoint()).hostname or hub_endpoint()
        return self.tr(
            "No connection to %1 — check the network, or use a model file you already have."
        ).replace("%1", host)

    # ----------------------------------------------------------------- buttons

    def _on_use_clicked(self) -> None:
        if self.model is not None:
            emit(self.use_requested, self.model)
        self.accept()

    def _on_import_clicked(self) -> None:
        self.reject()
        emit(self.import_requested)

    def cancel(self) -> None:
        """Stop the running download or build; the dialog stays open and says what was kept."""
        if self.running:
            self.stage.setText(self.tr("Stopping…"))
            self.close_button.setEnabled(False)
            self.task.cancel()

    def stop(self) -> None:
        """Cancel a running job, join the thread and close at once (the owner is closing)."""
        self.task.shutdown()
        self.running = False
        self._close_when_stopped = False
        if self.isVisible():
            super().done(QDialog.DialogCode.Rejected)

    def reject(self) -> None:
        """Cancel (first press, while running) or close."""
        if self.running:
            self.cancel()
            return
        super().reject()

    def done(self, result: int) -> None:
        """Close; a job still running is cancelled and its thread joined first."""
        if self.running:
            self._close_when_stopped = True
            self.task.cancel()
            return
        self.task.shutdown()
        super().done(result)

    def closeEvent(self, event: object) -> None:  # noqa: N802 - Qt's name
        """The window's close button: cancel first, close once the job has stopped."""
        if self.running:
            self._close_when_stopped = True
            self.cancel()
            event.ignore()  # type: ignore[attr-defined]
            return
        super().closeEvent(event)  # type: ignore[arg-type]


def _about(seconds: float) -> str:
    """A time left as people say it: to 5 s under a minute, to the minute above (an estimate, not a clock)."""
    if seconds < 60:
        return human_seconds(max(5, 5 * round(seconds / 5)))
    return human_seconds(60 * round(seconds / 60)).replace(" 00 s", "")


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
