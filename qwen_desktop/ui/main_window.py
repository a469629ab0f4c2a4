"""The main window: conversations on the left, the chat and the composer on the right, figures below.

The window owns the chat store and an ``EngineBridge``; the model loads on the worker thread after the
window is up. Editing a question or regenerating an answer adds a branch in the store (nothing is deleted);
"‹ 1/2 ›" on the message flips between branches.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from qwen_desktop.storage import paths
from qwen_desktop.storage.chats import (
    DEFAULT_TITLE,
    ChatStore,
    Conversation,
    Message,
    open_chat_store,
    title_from_text,
)
from qwen_desktop.storage.errors import DamagedChatError, NotFoundError, StorageError
from qwen_desktop.storage.settings import Settings, load_settings, save_settings
from qwen_desktop.storage.thread_sweeps import FILE_NAME as THREAD_SWEEPS_FILE
from qwen_desktop.storage.thread_sweeps import ThreadSweeps
from qwen_desktop.ui.banner import ProblemBanner
from qwen_desktop.ui.chat_view import Branch, ChatView
from qwen_desktop.ui.composer import ComposerBox
from qwen_desktop.ui.context_meter import ContextWarning
from qwen_desktop.ui.first_run import FirstRunPage, model_paths
from qwen_desktop.ui.header import ChatHeader
from qwen_desktop.ui.markdown_render import render_markdown, reveal_bidi
from qwen_desktop.ui.presets import PresetsDialog, all_presets, chat_preset, known_preset, preset_prompt
from qwen_desktop.ui.sidebar import Sidebar
from qwen_desktop.ui.status_bar import WindowStatusBar
from qwen_desktop.ui.theme import apply_theme
from qwen_desktop.ui.throttle import Throttle
from qwen_desktop.units import human_bytes
from qwen_desktop.worker import AnswerResult, EngineBridge, ModelInfo, emit

if TYPE_CHECKING:
    from qwen_desktop.engine.context import ContextPlan
    from qwen_desktop.engine.generate import SamplingParams

SENDABLE = ("complete", "cancelled", "interrupted")  # answers that go back to the model as history
_DRAG_EVENTS = (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop)


class MainWindow(QMainWindow):
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

    def _build_welcome(self) -> FirstRunPage:
        page = FirstRunPage()
        page.bundled_chosen.connect(self._use_bundled)
        page.download_chosen.connect(lambda entry: self.start_install(entry=entry))
        page.import_chosen.connect(self.start_install)
        page.more_chosen.connect(self.open_models)
        return page

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

    # ----------------------------------------------------------------- model

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

    def effective_threads(self, folder: Path | None = None) -> int:
        """Threads to run with: the setting, or for Auto the count measured fastest for ``folder`` (the model
        in use by default) on this machine, else the last pick (0 = all cores until one is measured)."""
        if self.settings.threads:
            return self.settings.threads
        if folder is None and self.model_info is not None:
            folder = self.model_info.folder
        measured = self.measured_speeds(folder) if folder is not None else None
        if measured:
            from qwen_desktop.engine.bench import fastest  # onnxruntime: not imported before the window is up

            return fastest(measured)
        return self.settings.auto_threads or 0

    def measured_speeds(self, folder: Path) -> dict[int, float] | None:
        """Decode tokens/s by thread count measured for the model in ``folder`` on this machine, if any."""
        from qwen_desktop.engine.bench import sweep_key

        return self.thread_sweeps.get(sweep_key(folder))

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

    def _on_loading(self, what: str) -> None:
        if self._closing:
            return
        texts = {
            "Reading model folder…": self.tr("Reading model folder…"),
            "Loading model…": self.tr("Loading model…"),
            "Warming up…": self.tr("Warming up…"),
        }
        self.status_label.setText(texts.get(what, what))
        if self._switch is not None and _alive(self._switch[1]):
            self._switch[1].load_phase(what)

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
            if _alive(self._switch[1]):
                self._switch[1].load_failed(message)
            self._switch = None

    def _on_reconfigured(self, info: ModelInfo) -> None:
        self._on_loaded(info)

    SWEEP_IDLE_MS = 20_000  # how long the window is left alone before "Auto" measures the thread counts

    def _restart_sweep_idle(self) -> None:
        """(Re)start the idle wait before a pending thread measurement: any use of the window pushes it back."""
        if self._sweep_pending and not self._sweeping and not self._closing:
            self._sweep_idle.start()

    def _sweep_when_idle(self) -> None:
        if not self._sweep_pending or self.bridge.busy or self._closing:
            self._restart_sweep_idle()
            return
        self.run_thread_sweep()

    def run_thread_sweep(self) -> None:
        """Measure decode speed for 1..cores threads on the worker and use the fastest ("Auto"). Sending a
        message meanwhile stops it (it runs again at the next idle time)."""
        if self.model_info is None or self._sweeping:
            return
        self._sweeping = True
        self._sweep_pending = False
        self._sweep_idle.stop()
        self.status_label.setText(self.tr("Measuring the best thread count…"))
        self._update_controls()
        self.bridge.sweep(self.model_info.folder, self._sweep_counts())

    @staticmethod
    def _sweep_counts() -> list[int]:
        return list(range(1, (os.cpu_count() or 1) + 1))

    def _on_sweep_progress(self, done: int, total: int) -> None:
        self.status_label.setText(
            self.tr("Measuring the best thread count… %1/%2")
            .replace("%1", str(done))
            .replace("%2", str(total))
        )

    def _on_sweep_done(self, result: dict[int, float] | None) -> None:
        if self._closing:
            return
        from qwen_desktop.engine.bench import fastest, sweep_key

        self._sweeping = False
        info = self.model_info
        result = dict(result or {})  # a measurement stopped before it began has no figures
        if info is None or set(result) != set(self._sweep_counts()):  # stopped by a message: measure later
            self._sweep_pending = info is not None and self.settings.threads == 0
            self._restart_sweep_idle()
            if info is not None and not self.bridge.busy:
                self._show_ready(info)
            self._update_controls()
            return
        with contextlib.suppress(StorageError):  # not saved: measured again next time
            self.thread_sweeps.put(sweep_key(info.folder), result)
        best = fastest(result)
        self.settings = replace(self.settings, auto_threads=best)
        self._save_settings()
        if best == info.threads or self.settings.threads != 0:
            self._show_ready(info)
            self._update_controls()
            return
        self.status_label.setText(self.tr("Switching to %1…").replace("%1", self.status_bar.threads_text(best)))
        self.bridge.reconfigure(best, self.settings.context_limit)

    def _on_job_failed(self, kind: str, message: str) -> None:
        if self._closing:
            return
        if kind == "sweep":
            self._sweeping = False
        if kind != "import":
            self.show_banner(message)
        self._update_controls()

    # ----------------------------------------------------------------- conversations

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

    # ----------------------------------------------------------------- answering

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

    def sampling(self) -> SamplingParams:
        """Sampling settings from the user's settings."""
        from qwen_desktop.engine.generate import SamplingParams

        return SamplingParams.from_settings(self.settings)

    def can_send(self) -> bool:
        """A model is loaded, nothing else is running."""
        return self.model_info is not None and not self.bridge.busy

    def send(self) -> None:
        """Send the composer's text (Enter): a new turn, or a new branch when editing."""
        text = self.composer_box.message_text()
        if not text or not self.can_send():
            return
        if self.conversation_id is None:
            self.conversation_id = self._create_conversation().id
        conversation = self._conversation()
        if conversation is not None and conversation.preset is not None:  # keep the text it is sent with
            shown, prompt = chat_preset(conversation, self.settings)
            if shown is not None and prompt != conversation.system_prompt:
                self.store.set_preset(conversation.id, shown, prompt)
        parent: int | None
        if self.edit_target is not None:
            parent = self.edit_target.parent_id
        else:
            try:
                path = self.store.path(self.conversation_id)
            except DamagedChatError as exc:
                self.show_banner(str(exc))
                return
            parent = path[-1].id if path else None
        user = self.store.add_message(self.conversation_id, "user", text, parent_id=parent)
        if self.store.get_conversation(self.conversation_id).title in (DEFAULT_TITLE, self.tr("New chat")):
            self.store.rename_conversation(self.conversation_id, title_from_text(text) or text[:40])
        self.composer_box.clear()
        self.cancel_edit()
        self._start_answer(user.id)

    def regenerate(self, message_id: int) -> None:
        """Write a new answer beside ``message_id`` (kept as another version)."""
        if not self.can_send():
            return
        old = self.store.get_message(message_id)
        if old.parent_id is None:
            return
        self._start_answer(old.parent_id)

    def _start_answer(self, parent_id: int) -> None:
        assert self.conversation_id is not None
        path = self.store.path(self.conversation_id)
        if parent_id not in [m.id for m in path]:  # an older branch: show the one through parent_id
            path = self.store.switch_to(parent_id)
        path = path[: [m.id for m in path].index(parent_id) + 1]
        messages = self.prompt_messages(path)
        answer = self.store.add_message(
            self.conversation_id, "assistant", "", parent_id=parent_id, status="streaming"
        )
        self.streaming_id = answer.id
        self._tokens = 0
        if self._sweeping:  # measuring threads gives way to the user: it runs again at the next idle time
            self.bridge.cancel()
        self.status_bar.show_waiting()
        self._status_at = 0.0
        self.job_id = self.bridge.answer(messages, self.sampling(), answer.id)
        self.reload_messages()
        self.refresh_conversations()
        self._update_controls()
        self.update_meter()

    def stop(self) -> None:
        """Stop the running answer (Esc), or cancel an edit."""
        if self.bridge.busy or self._sweeping:
            self.bridge.cancel()
        elif self.edit_target is not None:
            self.cancel_edit()

    def _on_first_token(self, job_id: int, seconds: float) -> None:
        if job_id == self.job_id:
            self._first_token_at = time.perf_counter()
            self._ttft = seconds
            self.status_bar.show_first_token(seconds)

    STATUS_INTERVAL = 0.5  # seconds between two updates of "Writing… N tokens/s" (and before the first)

    def _on_piece(self, job_id: int, text: str, tokens: int) -> None:
        if self._closing:
            return
        if job_id != self.job_id or self.streaming_id is None:
            return
        view = self.chat_view.view_of(self.streaming_id)
        if view is not None:
            view.append(text)
        self._tokens = tokens
        now = time.perf_counter()
        elapsed = now - self._first_token_at
        # the speed is read, not watched: it changes at most every STATUS_INTERVAL, not with every piece
        waiting = self._switch_after_answer  # the status bar says a new model follows this answer
        interval = self.STATUS_INTERVAL
        if tokens > 1 and elapsed >= interval and now - self._status_at >= interval and not waiting:
            self._status_at = now
            self.status_bar.show_writing_speed((tokens - 1) / elapsed)

    def _on_finished(self, result: AnswerResult) -> None:
        if result.job_id != self.job_id:
            return
        message_id = self.streaming_id
        self.streaming_id = None
        self.job_id = None
        if result.stats is not None:
            self.status_bar.show_answer_figures(result.stats)
        if self._closing:
            return
        if self.model_info is not None:
            self._show_ready(self.model_info)
        if message_id is not None and not self._message_exists(message_id):
            self._answer_vanished()
        elif message_id is not None and self.conversation_id is not None:
            self.reload_messages()
            view = self.chat_view.view_of(message_id)
            if view is not None and result.error:
                view.set_status("failed", result.error)
        if result.reason == "error":
            self.show_banner(self.tr("The answer failed: %1").replace("%1", result.error or "?"))
        self._update_controls()
        self.update_meter()
        self._restart_sweep_idle()
        emit(self.answer_finished, result)
        if self._picked is not None and not self.bridge.busy and self.model_info is not None:
            self._load_picked()  # picked in the header while this answer was written
        if self._switch is not None and self._switch_after_answer and not self.bridge.busy:
            self._switch_after_answer = False
            self.load_model(Path(self._switch[0].folder))  # installed while this answer was written

    def _message_exists(self, message_id: int) -> bool:
        try:
            self.store.get_message(message_id)
        except NotFoundError:
            return False
        return True

    def _answer_vanished(self) -> None:
        """The answer's message was deleted under us (another program on the same database): say so in
        plain words and show what is left."""
        self.show_banner(
            self.tr(
                "This chat was changed outside this window while the answer was written: the answer or its "
                "chat no longer exists, so the answer was not kept."
            )
        )
        if self.conversation_id is not None:
            try:
                self.store.get_conversation(self.conversation_id)
            except NotFoundError:
                self.conversation_id = None
        self.reload_messages()
        self.refresh_conversations()

    # ----------------------------------------------------------------- editing and copying

    def edit_message(self, message_id: int) -> None:
        """Put a user message in the composer; sending it adds a new branch beside the old one."""
        if self.bridge.busy:
            return
        self.edit_target = self.store.get_message(message_id)
        self.composer.setPlainText(self.edit_target.content)
        self.edit_label.setText(
            self.tr(
                "Editing an earlier message. Sending starts a new version of the conversation from here; "
                "the old version is kept (use ‹ › on the message to switch). Esc cancels."
            )
        )
        self.edit_label.show()
        self.composer.setFocus()

    def cancel_edit(self) -> None:
        """Leave edit mode (the composer keeps its text)."""
        self.edit_target = None
        self.edit_label.hide()

    def copy_last_answer(self) -> None:
        """Copy the newest answer's text (Ctrl+Shift+C)."""
        view = self.chat_view.last_answer()
        if view is not None:
            QGuiApplication.clipboard().setText(view.text)
            self.statusBar().showMessage(self.tr("Answer copied"), 2000)

    # ----------------------------------------------------------------- context meter

    def update_meter(self) -> None:
        """Count the conversation plus the draft with the model's tokenizer; warn if turns would drop; have
        the worker read the draft ahead."""
        if self._closing:
            return
        engine = self.bridge.engine
        if engine is None or self.model_info is None:
            self.meter.clear()
            self.context_warning.hide()
            return
        try:
            path = self.store.path(self.conversation_id) if self.conversation_id is not None else []
        except StorageError:  # a damaged or vanished chat: reload_messages says so
            path = []
        if self.edit_target is not None:
            ids = [m.id for m in path]
            if self.edit_target.id in ids:
                path = path[: ids.index(self.edit_target.id)]
        messages = self.prompt_messages(path)
        draft = self.composer_box.message_text()  # the text and the attached files
        if draft:
            messages.append({"role": "user", "content": draft})
        if not messages:
            messages = [{"role": "user", "content": ""}]
        if draft and self.can_send():
            # read the question into the KV cache while it is typed: sending it then prefills only the
            # last few tokens, so the answer starts sooner (docs/engine.md, "Reading ahead while you type")
            self.bridge.read_ahead(messages, self.settings.max_tokens)
        # counting a long chat takes too long for this thread: the plan counter answers with ``planned``
        self._plan_request = self.bridge.plan(messages, self.settings.max_tokens)

    def _attachment_too_long(self, block: str) -> tuple[int, int] | None:
        """None when a file's ``block`` fits in the context beside the system prompt and the room kept for the
        reply, else (its tokens, the room there is). Counted with the model's tokenizer (a 200 KB file takes
        tens of milliseconds, once, when it is attached); without a model it is counted when one loads."""
        from qwen_desktop.engine.context import reply_reserve

        engine = self.bridge.engine
        if engine is None or self.model_info is None:
            return None
        limit = self.last_plan.limit if self.last_plan is not None else self.settings.context_limit
        system = self.last_plan.system_tokens if self.last_plan is not None else 0
        reserved = reply_reserve(limit, self.settings.max_tokens)
        room = max(limit - reserved - system - 16, 0)  # 16: the message's own template wrapping
        if len(block.encode("utf-8")) <= room:  # every token covers at least one byte: no need to count
            return None
        tokens = engine.tokenizer.count(block)
        return (tokens, room) if tokens > room else None

    def _on_planned(self, request: int, result: object) -> None:
        """Show the newest plan: the meter counts the prompt and the room kept for the reply, the same
        numbers that decide what drops, so the warning and the meter agree."""
        if request != self._plan_request or self.bridge.engine is None:
            return
        plan, _error = result if isinstance(result, tuple) else (None, None)
        if plan is None:  # counting must never break typing: the meter keeps its last figure
            return
        self.meter.show_plan(plan)
        self.context_warning.show_plan(plan)
        self.last_plan = plan

    # ----------------------------------------------------------------- settings

    def open_settings(self) -> None:
        """Open the settings dialog (Ctrl+,) and apply what changed."""
        from qwen_desktop.ui.settings_dialog import SettingsDialog

        measured = self.measured_speeds(self.model_info.folder) if self.model_info is not None else None
        dialog = SettingsDialog(
            self.settings, self.installed_models(), self.bridge, self.models_dir(), self, measured=measured
        )
        if dialog.exec():
            self.apply_settings(dialog.result_settings())

    def open_models(self) -> None:
        """Open the models page (installed models, downloads, import) and switch to the model chosen there."""
        from qwen_desktop.ui.models_dialog import ModelsDialog

        in_use = self.model_info.folder if self.model_info is not None else None
        dialog = ModelsDialog(self.settings, self.settings_file, model_in_use=in_use, parent=self)
        dialog.follow_load = True
        dialog.install_dialog_opened.connect(self._follow_install)
        self._models_dialog = dialog
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

    # ----------------------------------------------------------------- installing a model

    def start_install(self, source: Path | None = None, entry: Any = None) -> Any:
        """Import ``source`` (a file or a folder) or download the catalogue ``entry`` in the install dialog,
        then switch to the new model by itself. Returns the dialog (None when one is already running)."""
        from qwen_desktop.engine.errors import ModelError
        from qwen_desktop.library.catalog import load_app_catalog
        from qwen_desktop.ui.download_dialog import DownloadDialog

        if _alive(self.install_dialog):
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
        if kind == "offline" and self.pages.currentWidget() is self.welcome and _alive(dialog):
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
            if _alive(dialog):
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
        if _alive(dialog):
            dialog.load_done(model.display_name)
        self.statusBar().showMessage(
            self.tr("Now using %1, the model just installed.").replace("%1", model.display_name), 15000
        )

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

    # ----------------------------------------------------------------- local server

    def sync_server(self) -> None:
        """Run the local API server (docs/server.md) as the settings say: on the window's own model, on
        127.0.0.1 at the chosen port, with the key if one is set."""
        s = self.settings
        want = (s.server_port, s.server_api_key or None) if s.server_enabled and not self._closing else None
        running = self.server
        if running is not None and (want is None or (running.port, running.config.api_key) != want):
            running.stop()
            self.server = None
        if want is None or self.server is not None:
            self._show_server(False)
            return
        from qwen_desktop.server import LocalServer, ServerConfig

        server = LocalServer(self.bridge.host, "127.0.0.1", want[0], ServerConfig(api_key=want[1]))
        try:
            server.start()
        except (OSError, RuntimeError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            self.show_banner(
                self.tr("The local server could not start on port %1: %2")
                .replace("%1", str(want[0]))
                .replace("%2", reason)
            )
            self._show_server(False)
            return
        self.server = server
        self._show_server(False)

    def _show_server(self, busy: bool) -> None:
        self.status_bar.show_server(self.server, busy)

    def _on_api_activity(self, running: bool) -> None:
        self._show_server(running)
        if running and self.bridge.busy:
            self.status_label.setText(self.tr("Waiting for an API request to finish…"))

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

    def _answering_in(self) -> int | None:
        """The conversation an answer is being written in, if any."""
        if self.streaming_id is None:
            return None
        try:
            return self.store.get_message(self.streaming_id).conversation_id
        except StorageError:
            return None

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

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802 - Qt's name
        """Stop a running answer, join the worker thread, keep the partial answer, close the database."""
        self._closing = True
        QApplication.instance().removeEventFilter(self)
        if _alive(self.install_dialog):
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


def _alive(widget: Any) -> bool:
    """False for None, and once Qt has deleted ``widget`` (a dialog closed with its parent)."""
    import shiboken6

    return widget is not None and bool(shiboken6.isValid(widget))
