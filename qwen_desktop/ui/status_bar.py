"""The window's status bar: what the app is doing, the answer's speed, the local server, the context meter."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QLabel, QSizePolicy, QStatusBar, QWidget

from qwen_desktop.ui.context_meter import ContextMeter
from qwen_desktop.ui.markdown_render import reveal_bidi

if TYPE_CHECKING:
    from qwen_desktop.engine.generate import GenerationStats
    from qwen_desktop.engine.host import ModelInfo


class WindowStatusBar(QStatusBar):
    """``status_label`` (Ready, Writing…, Loading…), ``speed_label``, ``server_label`` and ``meter``; passing
    notes go through ``showMessage`` as in any status bar."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.status_label = QLabel(self.tr("Starting…"))
        self.status_label.setAccessibleName(self.tr("Status"))
        self.status_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.status_label.setMinimumWidth(120)
        self.status_label.setIndent(8)  # off the window's edge, on the 8 px grid
        self.addWidget(self.status_label, 1)
        self.speed_label = QLabel()
        self.speed_label.setAccessibleName(self.tr("Answer speed"))
        self.addPermanentWidget(self.speed_label)
        self.server_label = QLabel()
        self.server_label.setAccessibleName(self.tr("Local server"))
        self.server_label.hide()
        self.addPermanentWidget(self.server_label)
        self.meter = ContextMeter()
        self.addPermanentWidget(self.meter)

    def show_ready(self, info: ModelInfo) -> None:
        """ "Ready · Qwen2.5 Coder 0.5B Instruct · int4 · 2 threads", where it came from in the tooltip."""
        self.status_label.setText(
            self.tr("Ready · %1 · %2")
            .replace("%1", reveal_bidi(info.display_name or info.name))
            .replace("%2", self.threads_text(info.threads))
        )
        self.status_label.setToolTip(
            self.tr("%1\nLoaded in %2 s, warmed up in %3 s")
            .replace("%1", str(info.folder))
            .replace("%2", f"{info.load_seconds:.1f}")
            .replace("%3", f"{info.warmup_seconds:.1f}")
        )

    def threads_text(self, count: int) -> str:
        """ "1 thread", "2 threads" (0 means all cores)."""
        count = count or os.cpu_count() or 1
        return self.tr("1 thread") if count == 1 else self.tr("%1 threads").replace("%1", str(count))

    def show_waiting(self) -> None:
        """An answer was asked for: the speed is not known yet."""
        self.speed_label.setText(self.tr("waiting for the first token…"))
        self.status_label.setText(self.tr("Writing…"))

    def show_first_token(self, seconds: float) -> None:
        """The answer's first token came after ``seconds``."""
        self.speed_label.setText(self.tr("first token %1 s").replace("%1", f"{seconds:.2f}"))

    def show_writing_speed(self, tokens_per_second: float) -> None:
        """ "Writing… 61 tokens/s" while the answer streams."""
        self.status_label.setText(self.tr("Writing… %1 tokens/s").replace("%1", f"{tokens_per_second:.0f}"))

    def show_answer_figures(self, stats: GenerationStats) -> None:
        """The figures of an answer that ended."""
        self.speed_label.setText(
            self.tr("first token %1 s · %2 tokens/s · %3 tokens")
            .replace("%1", f"{stats.ttft:.2f}")
            .replace("%2", f"{stats.decode_tps:.1f}")
            .replace("%3", str(stats.generated_tokens))
        )

    def show_server(self, server: Any, busy: bool) -> None:
        """The local API server's address (``server.LocalServer``), or nothing when it is off."""
        if server is None:
            self.server_label.hide()
            return
        text = self.tr("API %1").replace("%1", server.url)
        if busy:
            text = self.tr("API request running… (%1)").replace("%1", server.url)
        self.server_label.setText(text)
        self.server_label.setToolTip(
            self.tr("Apps on this computer can use the model at %1/v1 (OpenAI-compatible).").replace(
                "%1", server.url
            )
        )
        self.server_label.show()
