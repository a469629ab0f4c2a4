"""The main window: conversations on the left, the chat and the composer on the right, figures below.

The window owns the chat store and an ``EngineBridge``; the model loads on the worker thread after the
window is up. This module builds the widgets and wires them; what the window does lives in its parts, one
module each (``ui/window_parts.py`` lists them): answers in ``ui/answering.py``, the chat on show in
``ui/conversations.py``, the context meter in ``ui/context_counting.py``, models in ``ui/model_loading.py``
and ``ui/model_install.py``, the "Auto" thread count in ``ui/thread_sweep.py``, the local server in
``ui/local_server.py``.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QApplication, QLabel, QSplitter, QStackedWidget, QVBoxLayout, QWidget

from qwen_desktop.storage import paths
from qwen_desktop.storage.chats import ChatStore, Message, open_chat_store
from qwen_desktop.storage.errors import NotFoundError, StorageError
from qwen_desktop.storage.settings import Settings, load_settings, save_settings
from qwen_desktop.storage.thread_sweeps import FILE_NAME as THREAD_SWEEPS_FILE
from qwen_desktop.storage.thread_sweeps import ThreadSweeps
from qwen_desktop.ui.answering import Answering
from qwen_desktop.ui.banner import ProblemBanner
from qwen_desktop.ui.chat_view import ChatView
from qwen_desktop.ui.composer import ComposerBox
from qwen_desktop.ui.context_counting import ContextCounting
from qwen_desktop.ui.context_meter import ContextWarning
from qwen_desktop.ui.conversations import Conversations
from qwen_desktop.ui.first_run import FirstRunPage
from qwen_desktop.ui.header import ChatHeader
from qwen_desktop.ui.local_server import LocalServerSwitch
from qwen_desktop.ui.model_install import ModelInstalling, alive
from qwen_desktop.ui.model_loading import ModelLoading
from qwen_desktop.ui.sidebar import Sidebar
from qwen_desktop.ui.status_bar import WindowStatusBar
from qwen_desktop.ui.theme import apply_theme
from qwen_desktop.ui.thread_sweep import AutoThreads
from qwen_desktop.ui.throttle import Throttle
from qwen_desktop.ui.window_parts import WindowParts
from qwen_desktop.worker import EngineBridge, ModelInfo

if TYPE_CHECKING:
    from qwen_desktop.engine.context import ContextPlan


class MainWindow(
    Answering,
    Conversations,
    ContextCounting,
    ModelLoading,
    ModelInstalling,
    AutoThreads,
    LocalServerSwitch,
    WindowParts,
):
    """The app's window.

    Args:
        settings_file: where the settings live (``paths.settings_path()`` by default).
        database: the chat database (``paths.database_path()`` by default).
        load_model: start loading the configured model at once (tests turn it off to look at the welcome).

    Signals:
        answer_finished(AnswerResult): an answer ended and the window has shown and saved it.
        model_ready(ModelInfo): a model loaded (or the session was rebuilt) and can answer.
    """

    answer_finished = Signal(object)
    model_ready = Signal(object)

    def __init__(
        self,
        settings_file: Path | None = None,
        database: Path | None = None,
        load_model: bool = True,
    ) -> None:
        super().__init__()
        self.settings_file = settings_file or paths.settings_path()
        self.settings, settings_warning = load_settings(self.settings_file)
        self.store: ChatStore
        try:
            self.store, store_warning = open_chat_store(database)
        except StorageError as exc:  # no permission, full disk, a newer schema: chat, but say it is not kept
            self.store = ChatStore(":memory:")
            store_warning = self.tr("Chats cannot be saved this time: %1").replace("%1", str(exc))
        self.bridge = EngineBridge(self.store, self)
        self.model_info: ModelInfo | None = None
        self.conversation_id: int | None = None
        self.job_id: int | None = None
        self.streaming_id: int | None = None
        self.edit_target: Message | None = None
        self.load_error: str | None = None
        self._tokens = 0
        self._first_token_at = 0.0
        self._status_at = 0.0  # when the status bar last showed the answer's speed
        self._ttft = 0.0
        self._sweeping = False
        # "Auto" threads: measured once per machine and model, at idle, never in front of the user
        self.thread_sweeps = ThreadSweeps(paths.cache_dir() / THREAD_SWEEPS_FILE)
        self._sweep_pending = False
        self._sweep_idle = QTimer(self)
        self._sweep_idle.setSingleShot(True)
        self._sweep_idle.setInterval(self.SWEEP_IDLE_MS)
        self._sweep_idle.timeout.connect(self._sweep_when_idle)
        self._closing = False
        self._plan_request = 0  # the newest context-meter count asked for
        self.last_plan: ContextPlan | None = None
        self.server: Any = None  # the local API server (qwen_desktop.server.LocalServer) while it is on
        self.install_dialog: Any = None  # the install the window started (first-run page, a drop)
        self._models_dialog: Any = None  # the models page while it is open
        self._switch: tuple[Any, Any] | None = None  # (InstalledModel, DownloadDialog): switch to it next
        self._switch_after_answer = False  # ... once the answer being written is done
        self._picked: tuple[Path, str] | None = None  # (folder, name) picked in the header, loading or next
        app = QApplication.instance()
        self.colors = apply_theme(app, self.settings.theme)  # type: ignore[arg-type]

        self.setWindowTitle(self.tr("Qwen Desktop"))
        self.resize(1100, 720)
        # An explicit minimum keeps the window's size constraints fixed while labels change their text
        # (the layout would otherwise recompute them, which some platforms cannot pass on).
        self.setMinimumSize(760, 520)
        self._build_ui()
        self._build_actions()
        self._connect_worker()
        self.chat_view.colors = self.colors
        self.refresh_conversations()
        conversations = self.store.list_conversations()
        if conversations:
            self.open_conversation(conversations[0].id)
        self._refresh_header()
        self._refresh_models()
        for warning in (settings_warning, store_warning):
            if warning:
                self.show_banner(warning)
        QGuiApplication.styleHints().colorSchemeChanged.connect(self._on_color_scheme)
        # A model file or folder dropped anywhere on the window is imported: the filter sees the drag before
        # the widget under it (the message box would paste the path).
        self.setAcceptDrops(True)
        QApplication.instance().installEventFilter(self)
        self.sync_server()
        self._meter_throttle = Throttle(self.update_meter, 250, self)
        self.composer_box.draft_changed.connect(self._meter_throttle)
        self.composer_box.draft_changed.connect(self._restart_sweep_idle)
        self._update_controls()
        self._focus_page()
        if load_model:
            if self.configured_model() is None:
                self.load_configured_model()  # the welcome page, at once
            else:
                QTimer.singleShot(0, self.load_configured_model)  # after the window is up

    # ----------------------------------------------------------------- building

    def _build_ui(self) -> None:
        splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.setCentralWidget(splitter)

        self.sidebar = Sidebar(self.store)
        self.sidebar.chat_chosen.connect(self._on_chat_chosen)
        self.sidebar.new_chat_requested.connect(self.new_conversation)
        self.sidebar.chat_deleted.connect(self._on_chat_deleted)
        self.sidebar.models_requested.connect(self.open_models)
        self.sidebar.settings_requested.connect(self.open_settings)
        self.sidebar.notice.connect(lambda text: self.statusBar().showMessage(text, 10000))
        splitter.addWidget(self.sidebar)

        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(4, 8, 8, 4)
        self.header = ChatHeader()
        self.header.model_chosen.connect(self.pick_model)
        self.header.preset_chosen.connect(self.choose_preset)
        self.header.edit_presets_requested.connect(self.edit_presets)
        right_layout.addWidget(self.header)
        self.banner = ProblemBanner()
        self.banner_label = self.banner.label
        self.banner_settings = self.banner.choose_button
        self.banner_settings.clicked.connect(self.open_settings)
        right_layout.addWidget(self.banner)

        self.pages = QStackedWidget()
        self.welcome = self._build_welcome()
        self.chat_view = ChatView()
        self.chat_view.edit_requested.connect(self.edit_message)
        self.chat_view.regenerate_requested.connect(self.regenerate)
        self.chat_view.branch_requested.connect(self.switch_branch)
        self.pages.addWidget(self.chat_view)
        self.pages.addWidget(self.welcome)
        right_layout.addWidget(self.pages, 1)

        self.edit_label = QLabel()
        self.edit_label.setWordWrap(True)
        self.edit_label.setAccessibleName(self.tr("Editing notice"))
        self.edit_label.hide()
        right_layout.addWidget(self.edit_label)
        self.context_warning = ContextWarning()
        right_layout.addWidget(self.context_warning)

        self.composer_box = ComposerBox()
        self.composer = self.composer_box.editor
        self.send_button = self.composer_box.send_button
        self.composer_box.send_requested.connect(self.send)
        self.composer_box.stop_requested.connect(self.stop)
        self.composer_box.context_check = self._attachment_too_long
        right_layout.addWidget(self.composer_box)
        self.pages.currentChanged.connect(self._on_page)
        splitter.addWidget(right)
        splitter.setStretchFactor(1, 1)
        splitter.setCollapsible(0, False)
        splitter.setSizes([260, 840])

        self.status_bar = bar = WindowStatusBar()
        self.setStatusBar(bar)
        self.status_label = bar.status_label
        self.speed_label = bar.speed_label
        self.server_label = bar.server_label
        self.meter = bar.meter

    def _on_page(self, _index: int) -> None:
        """The welcome page has no model to pick and nothing to send to: the header and the message box
        show with the conversation only."""
        chatting = self.pages.currentWidget() is self.chat_view
        self.composer_box.setVisible(chatting)
        self.header.setVisible(chatting)
        self._focus_page()

    def _focus_page(self) -> None:
        """Put the keyboard where the page on show starts: the message box on the conversation, so the first
        question is typed with no click (Qt's picks, New chat or the conversation column, took the letters,
        and New chat pressed itself on a space); the first choice on the welcome page. Left alone while it
        is in the sidebar's search or list."""
        focused = self.focusWidget()
        in_sidebar = focused is not None and focused.isVisible() and self.sidebar.isAncestorOf(focused)
        if in_sidebar and focused is not self.sidebar.new_button:
            return
        if self.pages.currentWidget() is self.chat_view:
            self.composer.setFocus(Qt.FocusReason.OtherFocusReason)
        else:
            self.welcome.focus_first_choice()

    def _build_welcome(self) -> FirstRunPage:
        page = FirstRunPage()
        page.bundled_chosen.connect(self._use_bundled)
        page.download_chosen.connect(lambda entry: self.start_install(entry=entry))
        page.import_chosen.connect(self.start_install)
        page.more_chosen.connect(self.open_models)
        return page

    def _build_actions(self) -> None:
        def action(name: str, keys: QKeySequence | str, slot: object) -> QAction:
            act = QAction(name, self)
            act.setShortcut(QKeySequence(keys))
            act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
            act.triggered.connect(slot)
            self.addAction(act)
            return act

        self.new_action = action(self.tr("New chat"), "Ctrl+N", self.new_conversation)
        self.focus_action = action(self.tr("Focus the message box"), "Ctrl+L", self.composer.setFocus)
        self.stop_action = action(self.tr("Stop"), "Esc", self.stop)
        self.settings_action = action(self.tr("Settings"), "Ctrl+,", self.open_settings)
        self.copy_action = action(self.tr("Copy the last answer"), "Ctrl+Shift+C", self.copy_last_answer)

    def _connect_worker(self) -> None:
        worker = self.bridge
        worker.loading.connect(self._on_loading)
        worker.api_activity.connect(self._on_api_activity)
        worker.loaded.connect(self._on_loaded)
        worker.load_failed.connect(self._on_load_failed)
        worker.first_token.connect(self._on_first_token)
        worker.piece.connect(self._on_piece)
        worker.finished.connect(self._on_finished)
        worker.reconfigured.connect(self._on_reconfigured)
        worker.planned.connect(self._on_planned)
        worker.sweep_progress.connect(self._on_sweep_progress)
        worker.sweep_done.connect(self._on_sweep_done)
        worker.job_failed.connect(self._on_job_failed)

    def _on_job_failed(self, kind: str, message: str) -> None:
        if self._closing:
            return
        if kind == "sweep":
            self._sweeping = False
        if kind != "import":
            self.show_banner(message)
        self._update_controls()

    # ----------------------------------------------------------------- settings

    def open_settings(self) -> None:
        """Open the settings dialog (Ctrl+,) and apply what changed."""
        from qwen_desktop.ui.settings_dialog import SettingsDialog

        measured = self.measured_speeds(self.model_info.folder) if self.model_info is not None else None
        dialog = SettingsDialog(self.settings, self.installed_models(), self.bridge, self, measured=measured)
        dialog.import_requested.connect(lambda kind: self._import_from_settings(dialog, kind))
        if dialog.exec():
            self.apply_settings(dialog.result_settings())

    def _import_from_settings(self, dialog: Any, kind: str) -> None:
        """Settings' "Import from disk…": the Models page's own import, then Settings shows what it did."""
        self.open_models(import_kind=kind)
        dialog.models_updated(self.installed_models(), self.settings)

    def open_models(self, import_kind: str | None = None) -> None:
        """Open the models page (installed models, downloads, import) and switch to the model chosen there.
        ``import_kind`` "file" or "folder" starts its "Import from disk…" with that choice once it is open."""
        from qwen_desktop.ui.models_dialog import ModelsDialog

        in_use = self.model_info.folder if self.model_info is not None else None
        dialog = ModelsDialog(self.settings, self.settings_file, model_in_use=in_use, parent=self)
        dialog.follow_load = True
        dialog.install_dialog_opened.connect(self._follow_install)
        self._models_dialog = dialog
        if import_kind is not None:
            QTimer.singleShot(0, dialog.import_file if import_kind == "file" else dialog.import_folder)
        try:
            dialog.exec()
        finally:
            self._models_dialog = None
        new = dialog.result_settings()
        self._refresh_models()  # installed or deleted there
        if new != self.settings:
            self.apply_settings(new)
        elif self.model_info is None and self.load_error is None and self.configured_model() is not None:
            self.load_configured_model()

    def apply_settings(self, new: Settings) -> None:
        """Save ``new`` and apply it now: theme, model, session (threads, context) — no restart."""
        old = self.settings
        if new.threads != 0:
            new = replace(new, auto_threads=old.auto_threads)
        self.settings = new
        self._save_settings()
        if new.theme != old.theme:
            self.colors = apply_theme(QApplication.instance(), new.theme)  # type: ignore[arg-type]
            self.chat_view.set_colors(self.colors)
        model_changed = (new.model_path or None) != (old.model_path or None)
        if model_changed and new.model_path:
            self.load_model(Path(new.model_path))
        elif self.model_info is not None:
            self._sweep_pending = new.threads == 0 and self.measured_speeds(self.model_info.folder) is None
            self._restart_sweep_idle()
            threads = self.effective_threads()  # 0: all cores, until Auto has measured this model
            threads_changed = threads != self.model_info.threads and (threads or new.threads != old.threads)
            if threads_changed or new.context_limit != old.context_limit:
                self.status_label.setText(self.tr("Applying settings…"))
                self.bridge.reconfigure(threads, new.context_limit)
        elif self.load_error is not None and new.model_path:
            self.load_model(Path(new.model_path))
        self._refresh_header()
        self.update_meter()
        self.sync_server()

    def _on_color_scheme(self, _scheme: object) -> None:
        """The system switched between light and dark: follow it when the theme is "system"."""
        if self.settings.theme == "system" and not self._closing:
            self.colors = apply_theme(QApplication.instance(), "system")  # type: ignore[arg-type]
            self.chat_view.set_colors(self.colors)

    def _save_settings(self) -> None:
        try:
            save_settings(self.settings, self.settings_file)
        except StorageError as exc:
            self.show_banner(str(exc))

    # ----------------------------------------------------------------- state

    def show_banner(self, text: str, model: bool = False) -> None:
        """Show a problem above the chat; the app stays usable."""
        self.banner.show_problem(text, model)

    def _update_controls(self) -> None:
        busy = self.bridge.busy
        self.composer_box.set_answering(busy)
        self.send_button.setEnabled(busy or self.can_send())
        self.composer.setReadOnly(False)
        self.sidebar.set_busy(self._answering_in())
        for view in self.chat_view.views:
            for button in (view.edit_button, view.regenerate_button):
                if button is not None:
                    button.setEnabled(not busy and self.model_info is not None)

    def focusNextPrevChild(self, next: bool) -> bool:  # noqa: N802 - Qt's name
        """Tab and Shift+Tab: backwards, a message's quiet actions are shown before the focus lands on them,
        so Shift+Tab walks the exact reverse of Tab."""
        revealed = None if next else self.chat_view.reveal_actions_before(QApplication.focusWidget())
        moved = super().focusNextPrevChild(next)
        if revealed is not None:
            revealed.show_actions_if_wanted()  # hidden again if the focus went elsewhere after all
        return moved

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        """Stop a running answer, join the worker thread, keep the partial answer, close the database."""
        self._closing = True
        QApplication.instance().removeEventFilter(self)
        if alive(self.install_dialog):
            self.install_dialog.stop()  # cancels a running install (nothing half-made is left) and joins
        self._meter_throttle.cancel()
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.bridge.shutdown()
        if self.streaming_id is not None:
            # The worker saved the text as "cancelled"; make sure nothing is left "streaming".
            with contextlib.suppress(NotFoundError):  # it may have been deleted under us
                message = self.store.get_message(self.streaming_id)
                if message.status == "streaming":
                    self.store.update_message(self.streaming_id, status="cancelled")
        self.store.close()
        super().closeEvent(event)
