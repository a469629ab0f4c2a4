"""The "Auto" thread count: measured once per machine and model, while the window is idle, never in front of
the user (sending a message stops a measurement; it runs again at the next idle time)."""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from pathlib import Path

from qwen_desktop.storage.errors import StorageError
from qwen_desktop.ui.window_parts import WindowParts


class AutoThreads(WindowParts):
    """The "Auto" thread count: the fastest measured here, measured at idle."""

    SWEEP_IDLE_MS = 20_000  # how long the window is left alone before "Auto" measures the thread counts

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
        self.status_label.setText(
            self.tr("Switching to %1…").replace("%1", self.status_bar.threads_text(best))
        )
        self.bridge.reconfigure(best, self.settings.context_limit)
