"""The one place where threads meet Qt: the engine host's events in, Qt signals out.

The model belongs to an ``EngineHost`` (Qt-free, ``qwen_desktop.engine.host``), which also serves the local
API server. ``EngineWorker`` is a ``QObject`` on a ``QThread``: its slots (load a model, answer a
conversation, read a draft ahead, rebuild the session, sweep thread counts, import a model) each submit one
host job, in the window's order, and turn that job's events into signals.

``EngineBridge`` is the window's handle: it owns the thread and the worker, queues jobs on it and, on
shutdown, cancels what runs, stops the thread and joins it.

The worker also writes a streaming answer to the chat database (at most a second apart, then once more at
the end), so what the user saw survives a crash even when the window never gets to save it.
"""

from __future__ import annotations

import ctypes
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from qwen_desktop.engine.host import (
    API,
    EngineHost,
    Failed,
    Finished,
    FirstToken,
    HostError,
    HostEvent,
    Job,
    ModelInfo,
    Piece,
    Progress,
    Started,
)
from qwen_desktop.storage.chats import ChatStore

if TYPE_CHECKING:  # the engine (numpy, onnxruntime) loads on the worker thread, after the window is up
    from qwen_desktop.engine.generate import GenerationStats, SamplingParams

SAVE_INTERVAL = 1.0  # seconds between saves of a streaming answer: a killed process loses at most this much
PIECE_INTERVAL = 0.016  # seconds: pieces arriving faster than a frame are sent to the window together


def _incref(obj: object) -> None:
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


def _emit_drops_a_bool() -> bool:
    """Whether this PySide6 has the ``SignalInstance.emit()`` bug: it returns ``True`` without owning a
    reference, so every emit takes one reference from ``True`` and the interpreter aborts ("bool_dealloc")
    once enough signals have been sent (seen in PySide6 6.12.0). Probed once, the probe's damage repaired."""

    class _Probe(QObject):
        ping = Signal()

    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(8):
        probe.ping.emit()
    lost = before - sys.getrefcount(True)
    for _ in range(max(lost, 0)):
        _incref(True)
    return lost >= 8


EMIT_DROPS_A_BOOL = _emit_drops_a_bool()


def emit(signal: Any, *args: object) -> None:
    """Emit a Qt signal; the app sends every signal through this to work around the PySide6 bug above."""
    result = signal.emit(*args)
    if EMIT_DROPS_A_BOOL and isinstance(result, bool):
        _incref(result)


@dataclass(frozen=True)
class AnswerJob:
    """One answer to write.

    Attributes:
        job_id: Echoed in every signal about this answer, so a late signal of an old job can be ignored.
        messages: The whole conversation (system prompt first), ending with the user's message.
        params: Sampling settings.
        message_id: The assistant message in the database that receives the text, or None.
    """

    job_id: int
    messages: list[dict[str, str]]
    params: SamplingParams
    message_id: int | None = None


@dataclass
class AnswerResult:
    """How an answer ended: ``reason`` is "stop", "length", "cancelled" or "error"."""

    job_id: int
    reason: str
    text: str
    stats: GenerationStats | None = None
    error: str | None = None
    model: str = ""  # the display name of the model that wrote it

    def stats_dict(self) -> dict[str, Any]:
        """The figures saved with the message."""
        named = {"model": self.model} if self.model else {}
        if self.stats is None:
            return {"reason": self.reason, **named}
        s = self.stats
        return {
            **named,
            "reason": self.reason,
            "prompt_tokens": s.prompt_tokens,
            "reused_tokens": s.reused_tokens,
            "generated_tokens": s.generated_tokens,
            "ttft": round(s.ttft, 4),
            "prefill_tps": round(s.prefill_tps, 2),
            "decode_tps": round(s.decode_tps, 2),
            "total": round(s.total, 3),
        }


class EngineSignals(QObject):
    """The events of the window's engine jobs, declared once: ``EngineWorker`` emits them on its threads
    and ``EngineBridge`` repeats each on the GUI thread (``forward_signals``).

    Signals:
        loading(object): the step of the model load that began (an ``engine.load_phase.LoadPhase``).
        loaded(ModelInfo): the model is loaded and warmed up.
        load_failed(str): the model folder is missing or unusable; one line for the user.
        started(int): an answer job began (job id).
        first_token(int, float): the first piece of an answer arrived (job id, seconds since the job began).
        piece(int, str, int): new text of an answer (job id, text, tokens written so far); pieces are
            batched to at most about 60 signals a second.
        finished(AnswerResult): an answer ended (done, length, cancelled, or error with partial text).
        read_ahead_done(int, int): a draft was read ahead into the KV cache (request number, prompt tokens held).
        planned(int, object): the context plan of a draft (request number, ``(ContextPlan | None, error |
            None)``), worked out on the host's plan counter, never on the GUI thread.
        reconfigured(ModelInfo): a thread or context change was applied; the session was rebuilt.
        sweep_progress(int, int): thread counts measured so far, and how many in all.
        sweep_done(dict): decode tokens/s per thread count.
        job_failed(str, str): a non-answer job failed (job kind, one-line message).
        api_activity(bool): a request of the local server started (True) or ended (False) on the model.
    """

    loading = Signal(object)
    loaded = Signal(object)
    load_failed = Signal(str)
    started = Signal(int)
    first_token = Signal(int, float)
    piece = Signal(int, str, int)
    finished = Signal(object)
    read_ahead_done = Signal(int, int)
    planned = Signal(int, object)
    reconfigured = Signal(object)
    sweep_progress = Signal(int, int)
    sweep_done = Signal(object)
    job_failed = Signal(str, str)
    api_activity = Signal(bool)


def signal_names(cls: type[QObject]) -> tuple[str, ...]:
    """The names of the signals ``cls`` and its bases declare (not ``QObject``'s own), in declaration order."""
    names: list[str] = []
    mro = cls.__mro__
    for klass in reversed(mro[: mro.index(QObject)]):
        names += [n for n, v in vars(klass).items() if isinstance(v, Signal) and n not in names]
    return tuple(names)


def forward_signals(source: QObject, target: QObject, names: tuple[str, ...]) -> None:
    """Repeat each signal ``names`` of ``source`` (emitted on a worker thread) as ``target``'s signal of
    the same name on ``target``'s thread (a queued connection): the one thread bridge of the UI."""
    for name in names:
        getattr(source, name).connect(getattr(target, name), Qt.ConnectionType.QueuedConnection)


class EngineWorker(EngineSignals):
    """The Qt adapter of the ``EngineHost``: each slot submits one host job and turns its events into signals.

    The host owns the model and runs jobs one at a time on its own thread, for the window and for the local
    server alike (``qwen_desktop.engine.host``). This worker lives on a ``QThread`` so the window's jobs
    keep their order; each slot waits for its job. Events are handled on the host thread as they happen
    (pieces batched, the answer saved to the chat database) and leave as this object's signals, which the
    bridge forwards to the GUI thread.

    Signals: those of ``EngineSignals``.
    """

    def __init__(self, store: ChatStore | None = None, host: EngineHost | None = None) -> None:
        super().__init__()
        from qwen_desktop.storage.paths import ort_cache_dir

        self.host = host if host is not None else EngineHost(cache_root=ort_cache_dir())
        self.store = store
        self.cancel_event = threading.Event()  # set by ``cancel``: the running window job stops
        # Reading a draft ahead gives way to any other job: set when one is queued.
        self.read_ahead_stop = threading.Event()
        self.latest_read_ahead = 0  # the newest read-ahead request; older queued ones are skipped
        self._job: Job | None = None  # the window's job the host runs or queues now
        self._unsubscribe = self.host.subscribe(self._on_any_job)

    @property
    def engine(self) -> Any:
        """The loaded ``ChatEngine`` or None (read-only use: ``plan``, the tokenizer)."""
        return self.host.engine

    def _on_any_job(self, job: Job, event: HostEvent) -> None:
        if job.client == API and isinstance(event, (Started, Finished, Failed)):
            emit(self.api_activity, isinstance(event, Started))

    def cancel(self) -> None:
        """Stop the window's running (or queued) job at its next step."""
        self.cancel_event.set()
        job = self._job
        if job is not None:
            job.cancel()

    def stop_read_ahead(self) -> None:
        """Stop reading a draft ahead (another job was queued behind it)."""
        self.read_ahead_stop.set()
        job = self._job
        if job is not None and job.kind == "read_ahead":
            job.cancel()

    def _run(self, submit: Any, cancellable: bool = True) -> Finished | Failed | None:
        """Submit a host job (``submit()``), wait for it and return its last event. A ``cancel`` that came
        while the job waited in this thread's queue stops it at once (``cancellable`` jobs only)."""
        try:
            job = submit()
        except HostError as exc:
            return Failed(0, str(exc), error=exc)
        self._job = job
        if cancellable and self.cancel_event.is_set():
            job.cancel()
        try:
            return job.wait()
        finally:
            self._job = None
            if cancellable:
                self.cancel_event.clear()

    @Slot(int, object, int)
    def read_ahead(self, request: int, messages: list[dict[str, str]], max_tokens: int) -> None:
        """Prefill the KV cache with the conversation and the draft being typed (``ChatEngine.read_ahead``),
        so that sending it only prefills what changed. Skipped when a newer draft or another job waits."""
        if self.engine is None or request != self.latest_read_ahead or self.read_ahead_stop.is_set():
            return
        end = self._run(lambda: self.host.submit_read_ahead(messages, max_tokens), cancellable=False)
        held = int(end.value or 0) if isinstance(end, Finished) else 0
        emit(self.read_ahead_done, request, held)

    def plan(self, request: int, messages: list[dict[str, str]], max_tokens: int) -> None:
        """Count the draft's context plan on the host's plan counter (returns at once, from any thread);
        ``planned`` follows. A newer request replaces one that has not started."""
        self.host.request_plan(
            messages, max_tokens, lambda plan, error: emit(self.planned, request, (plan, error))
        )

    @Slot(str, int, int)
    def load(self, folder: str, threads: int, context_limit: int) -> None:
        """Load and warm up the model in ``folder`` (replacing any loaded one)."""

        def on_event(event: HostEvent) -> None:
            if isinstance(event, Progress) and event.phase is not None:
                emit(self.loading, event.phase)

        end = self._run(
            lambda: self.host.submit_load(folder, threads, context_limit, on_event=on_event),
            cancellable=False,
        )
        if isinstance(end, Finished) and isinstance(end.value, ModelInfo):
            emit(self.loaded, end.value)
        else:
            emit(self.load_failed, end.message if isinstance(end, Failed) else "The model did not load.")

    @Slot(object)
    def answer(self, job: AnswerJob) -> None:
        """Write an answer to ``job.messages``, emitting pieces, then ``finished``."""
        emit(self.started, job.job_id)
        text: list[str] = []
        pending: list[str] = []
        clock = {"emit": 0.0, "save": time.monotonic()}
        tokens = [0]

        def on_event(event: HostEvent) -> None:  # on the host thread
            if isinstance(event, FirstToken):
                emit(self.first_token, job.job_id, event.seconds)
            elif isinstance(event, Piece):
                tokens[0] = event.tokens
                text.append(event.text)
                pending.append(event.text)
                now = time.perf_counter()
                if now - clock["emit"] >= PIECE_INTERVAL:
                    emit(self.piece, job.job_id, "".join(pending), event.tokens)
                    pending.clear()
                    clock["emit"] = now
                if self.store is not None and job.message_id is not None:
                    mono = time.monotonic()
                    if mono - clock["save"] >= SAVE_INTERVAL:
                        self._save(job.message_id, "".join(text), "streaming")
                        clock["save"] = mono
            elif isinstance(event, (Finished, Failed)) and pending:
                emit(self.piece, job.job_id, "".join(pending), tokens[0])
                pending.clear()

        end = self._run(
            lambda: self.host.submit_answer(job.messages, job.params, on_event=on_event, bounded=False)
        )
        if isinstance(end, Finished):
            result = AnswerResult(job.job_id, end.reason, "", end.stats)
        elif isinstance(end, Failed):
            result = AnswerResult(job.job_id, "error", "", end.stats, end.message)
        else:
            result = AnswerResult(job.job_id, "error", "", error="The answer ended without a reason.")
        result.text = "".join(text)
        engine = self.engine  # the one that ran it: the host runs one job at a time, in order
        result.model = str(engine.files.display_name) if engine is not None else ""
        self._finish(result, job)

    def _save(self, message_id: int, text: str, status: str, stats: dict[str, Any] | None = None) -> None:
        from qwen_desktop.storage.errors import StorageError

        assert self.store is not None
        try:
            self.store.update_message(message_id, content=text, status=status, stats=stats)  # type: ignore[arg-type]
        except StorageError as exc:  # a full disk must not kill the answer; the window shows the error
            emit(self.job_failed, "save", str(exc))

    def _finish(self, result: AnswerResult, job: AnswerJob) -> None:
        if self.store is not None and job.message_id is not None:
            status = {"stop": "complete", "length": "complete", "cancelled": "cancelled"}.get(
                result.reason, "failed"
            )
            stats = result.stats_dict()
            if result.error:
                stats["error"] = result.error
            self._save(job.message_id, result.text, status, stats)
        emit(self.finished, result)

    @Slot(int, int)
    def reconfigure(self, threads: int, context_limit: int) -> None:
        """Apply a thread count (0 = all cores) and context limit by rebuilding the session."""
        if self.engine is None:
            return
        end = self._run(lambda: self.host.submit_reconfigure(threads, context_limit), cancellable=False)
        if isinstance(end, Finished) and isinstance(end.value, ModelInfo):
            emit(self.reconfigured, end.value)
        elif isinstance(end, Failed):
            emit(self.job_failed, "reconfigure", end.message)

    @Slot(str, object)
    def sweep(self, folder: str, counts: list[int]) -> None:
        """Measure decode speed for each thread count in ``counts`` (for "Auto" threads)."""

        def on_event(event: HostEvent) -> None:
            if isinstance(event, Progress):
                emit(self.sweep_progress, event.done, event.total)

        end = self._run(lambda: self.host.submit_sweep(folder, list(counts), on_event=on_event))
        if isinstance(end, Finished):
            emit(self.sweep_done, end.value)
        elif isinstance(end, Failed):
            emit(self.job_failed, "sweep", end.message)

    def close(self) -> bool:
        """Stop the host (the model is released). False if it did not stop in time."""
        self._unsubscribe()
        return self.host.close()


FORWARDED = signal_names(EngineSignals)


class EngineBridge(EngineSignals):
    """The window's handle on the worker thread: queue jobs, cancel, shut down.

    Jobs are queued signals to the worker's slots, so they run in order on the worker thread; ``cancel``
    sets the worker's event directly, so it acts within one decode step even while the worker is busy.

    Every ``EngineWorker`` signal is repeated by a bridge signal of the same name and arguments, emitted on
    the GUI thread (a queued connection): the window connects to those, so its slots always run on the GUI
    thread.

    Signals:
        every ``EngineSignals`` signal, as ``EngineWorker`` emits it, on the GUI thread.
        request_load(str, int, int): queued to ``EngineWorker.load``.
        request_answer(AnswerJob): queued to ``EngineWorker.answer``.
        request_read_ahead(int, object, int): queued to ``EngineWorker.read_ahead``.
        request_reconfigure(int, int): queued to ``EngineWorker.reconfigure``.
        request_sweep(str, object): queued to ``EngineWorker.sweep``.
    """

    request_load = Signal(str, int, int)
    request_answer = Signal(object)
    request_read_ahead = Signal(int, object, int)
    request_reconfigure = Signal(int, int)
    request_sweep = Signal(str, object)

    def __init__(self, store: ChatStore | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.worker_thread = QThread(self)
        self.worker_thread.setObjectName("engine")
        self.worker = EngineWorker(store)
        self.worker.moveToThread(self.worker_thread)
        self.request_load.connect(self.worker.load)
        self.request_answer.connect(self.worker.answer)
        self.request_read_ahead.connect(self.worker.read_ahead)
        self.request_reconfigure.connect(self.worker.reconfigure)
        self.request_sweep.connect(self.worker.sweep)
        self.worker_thread.finished.connect(self.worker.deleteLater)
        self._next_job = 0
        self._next_read_ahead = 0
        self._next_plan = 0
        self.busy = False  # an answer is queued or running
        self.finished.connect(self._on_finished)
        forward_signals(self.worker, self, FORWARDED)
        self.worker_thread.start()

    @property
    def engine(self) -> Any:
        """The loaded ``ChatEngine`` or None; use it only for read-only work such as ``plan``."""
        return self.worker.engine

    @property
    def host(self) -> EngineHost:
        """The engine host the window shares with the local server."""
        return self.worker.host

    def _queue(self, request: Any, *args: object) -> None:
        """Queue a job on the worker; a draft being read ahead gives way to it at its next chunk."""
        self.worker.stop_read_ahead()
        emit(request, *args)

    def load(self, folder: Path | str, threads: int, context_limit: int) -> None:
        """Queue loading ``folder``."""
        self._queue(self.request_load, str(folder), threads, context_limit)

    def answer(self, messages: list[dict[str, str]], params: SamplingParams, message_id: int | None) -> int:
        """Queue an answer; returns its job id. A draft being read ahead stops at its next chunk, and the
        answer reuses what it read."""
        self._next_job += 1
        self.busy = True
        self.worker.cancel_event.clear()
        self._queue(self.request_answer, AnswerJob(self._next_job, messages, params, message_id))
        return self._next_job

    def read_ahead(self, messages: list[dict[str, str]], max_tokens: int) -> int | None:
        """Queue reading ``messages`` (ending with the draft being typed) into the KV cache, unless an
        answer is queued or running. Returns the request number, or None when nothing was queued."""
        if self.busy:
            return None
        self._next_read_ahead += 1
        self.worker.latest_read_ahead = self._next_read_ahead
        self.worker.read_ahead_stop.clear()
        emit(self.request_read_ahead, self._next_read_ahead, messages, max_tokens)
        return self._next_read_ahead

    def plan(self, messages: list[dict[str, str]], max_tokens: int) -> int:
        """Ask for the context plan of ``messages`` (ending with the draft); returns the request number that
        ``planned`` will carry. Never waits: the count runs on the host's plan counter."""
        self._next_plan += 1
        self.worker.plan(self._next_plan, messages, max_tokens)
        return self._next_plan

    def reconfigure(self, threads: int, context_limit: int) -> None:
        """Queue a session rebuild with new settings."""
        self._queue(self.request_reconfigure, threads, context_limit)

    def sweep(self, folder: Path | str, counts: list[int]) -> None:
        """Queue a thread-count benchmark."""
        self._queue(self.request_sweep, str(folder), list(counts))

    def cancel(self) -> None:
        """Stop the running answer, sweep or import at its next step."""
        self.worker.stop_read_ahead()
        self.worker.cancel()

    def _on_finished(self, _result: AnswerResult) -> None:
        self.busy = False

    def shutdown(self, timeout_ms: int = 30000) -> bool:
        """Cancel what runs, stop the thread and wait for it. Returns False if it did not stop in time."""
        if not self.worker_thread.isRunning():
            return not self.worker.host.is_alive() or self.worker.close()
        self.cancel()
        self.worker_thread.quit()
        host_done = self.worker.close()  # ends the running job and those still waiting
        done = self.worker_thread.wait(timeout_ms)
        return bool(done) and host_done
