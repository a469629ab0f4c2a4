"""What the parts of the main window share.

``MainWindow`` (``ui/main_window.py``) is assembled from parts, one module each: ``Conversations`` (the chat on
show, its versions and preset), ``Answering`` (sending, streaming, Stop, regenerate and edit), ``ContextCounting``
(the context meter), ``ModelLoading`` (loading and switching models), ``ModelInstalling`` (the first-run page,
installs and drops), ``AutoThreads`` (the "Auto" thread count) and ``LocalServerSwitch`` (the local API server).
Each part is a class over ``WindowParts``, which declares, for the type checker only, the widgets and state the
window builds in ``MainWindow.__init__`` and the methods one part calls on another.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QMainWindow

if TYPE_CHECKING:
    from pathlib import Path

    from PySide6.QtCore import QTimer, SignalInstance
    from PySide6.QtWidgets import QLabel, QStackedWidget

    from qwen_desktop.engine.context import ContextPlan
    from qwen_desktop.engine.host import ModelInfo
    from qwen_desktop.storage.chats import ChatStore, Conversation, Message
    from qwen_desktop.storage.settings import Settings
    from qwen_desktop.storage.thread_sweeps import ThreadSweeps
    from qwen_desktop.ui.banner import ProblemBanner
    from qwen_desktop.ui.chat_view import ChatView
    from qwen_desktop.ui.composer import Composer, ComposerBox
    from qwen_desktop.ui.context_meter import ContextMeter, ContextWarning
    from qwen_desktop.ui.first_run import FirstRunPage
    from qwen_desktop.ui.header import ChatHeader
    from qwen_desktop.ui.sidebar import Sidebar
    from qwen_desktop.ui.status_bar import WindowStatusBar
    from qwen_desktop.worker import EngineBridge


class WindowParts(QMainWindow):
    """The base of the main window's parts (declarations only: nothing here exists at run time)."""

    if TYPE_CHECKING:
        # signals (MainWindow)
        answer_finished: SignalInstance
        model_ready: SignalInstance
        # the data and the worker
        settings: Settings
        store: ChatStore
        bridge: EngineBridge
        thread_sweeps: ThreadSweeps
        server: Any
        # widgets
        sidebar: Sidebar
        header: ChatHeader
        banner: ProblemBanner
        pages: QStackedWidget
        welcome: FirstRunPage
        chat_view: ChatView
        edit_label: QLabel
        context_warning: ContextWarning
        composer_box: ComposerBox
        composer: Composer
        status_bar: WindowStatusBar
        status_label: QLabel
        meter: ContextMeter
        # state
        model_info: ModelInfo | None
        load_error: str | None
        conversation_id: int | None
        job_id: int | None
        streaming_id: int | None
        edit_target: Message | None
        last_plan: ContextPlan | None
        install_dialog: Any
        _closing: bool
        _tokens: int
        _first_token_at: float
        _status_at: float
        _ttft: float
        _sweeping: bool
        _sweep_pending: bool
        _sweep_idle: QTimer
        _plan_request: int
        _models_dialog: Any
        _switch: tuple[Any, Any] | None
        _switch_after_answer: bool
        _picked: tuple[Path, str] | None

        # MainWindow
        def show_banner(self, text: str, model: bool = False) -> None: ...
        def _update_controls(self) -> None: ...
        def _save_settings(self) -> None: ...

        # Conversations
        def refresh_conversations(self) -> None: ...
        def reload_messages(self) -> None: ...
        def _conversation(self) -> Conversation | None: ...
        def _create_conversation(self) -> Conversation: ...
        def prompt_messages(self, path: list[Message]) -> list[dict[str, str]]: ...

        # Answering
        def can_send(self) -> bool: ...
        def cancel_edit(self) -> None: ...

        # ContextCounting
        def update_meter(self) -> None: ...

        # ModelLoading
        def configured_model(self) -> Path | None: ...
        def load_model(self, folder: Path) -> None: ...
        def models_dir(self) -> Path: ...
        def _show_ready(self, info: ModelInfo) -> None: ...
        def _load_picked(self) -> None: ...

        # ModelInstalling
        def _fill_first_run(self) -> None: ...
        def _switched(self, info: ModelInfo) -> None: ...

        # AutoThreads
        def effective_threads(self, folder: Path | None = None) -> int: ...
        def measured_speeds(self, folder: Path) -> dict[int, float] | None: ...
        def _restart_sweep_idle(self) -> None: ...
