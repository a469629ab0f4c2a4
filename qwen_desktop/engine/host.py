"""``EngineHost``: the one owner of the loaded model, running jobs one at a time on its own thread.

The window (through the Qt adapter in ``qwen_desktop.worker``), the local server and the terminal chat are
its clients. Nothing here knows Qt. See docs/engine.md ("Engine host") for the job lifecycle.
"""

from __future__ import annotations

import itertools
import logging
import os
import queue
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qwen_desktop.engine.counting import PlanCallback, PlanCounter
from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.load_phase import LoadPhase

if TYPE_CHECKING:  # numpy and onnxruntime load with the first model, on the host thread
    from qwen_desktop.engine.chat import ChatEngine
    from qwen_desktop.engine.chat_template import Message
    from qwen_desktop.engine.generate import GenerationEvent, GenerationStats, SamplingParams
    from qwen_desktop.engine.kv_cache import CacheState

log = logging.getLogger(__name__)

DEFAULT_QUEUE = 16  # jobs that may wait; one more is refused with QueueFullError
MAX_SAVED_CACHES = 4  # conversations put aside for clients other than the cache's owner (oldest dropped)
WINDOW = "window"
API = "api"


class HostError(Exception):
    """A request the host cannot take; the message is one line for the user or API client."""


class QueueFullError(HostError):
    """Too many jobs are waiting (a server answers 503)."""

    def __init__(self, waiting: int) -> None:
        super().__init__(f"{waiting} requests are waiting; try again shortly")
        self.waiting = waiting


class PromptTooLongError(HostError):
    """The prompt does not fit the model's context (a server answers 400)."""

    def __init__(self, prompt_tokens: int, context: int) -> None:
        super().__init__(
            f"the prompt has {prompt_tokens} tokens but the model's context holds {context} "
            "(prompt and reply together), so there is no room for a reply"
        )
        self.prompt_tokens = prompt_tokens
        self.context = context


class NoModelError(HostError):
    """No model is loaded."""

    def __init__(self) -> None:
        super().__init__("No model is loaded.")


class HostClosedError(HostError):
    """The host has been shut down."""

    def __init__(self) -> None:
        super().__init__("The engine has been shut down.")


# -- events -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Started:
    """The job left the queue and runs now."""

    job: int


@dataclass(frozen=True)
class Progress:
    """What a long job is doing: a load's step (``stage`` "load", ``phase`` the step; done = total = 0),
    or import/sweep counts."""

    job: int
    stage: str
    done: int = 0
    total: int = 0
    phase: LoadPhase | None = None


@dataclass(frozen=True)
class FirstToken:
    """The first non-empty piece of an answer follows; ``seconds`` since the job started running."""

    job: int
    seconds: float


@dataclass(frozen=True)
class Piece:
    """New text of an answer; ``tokens`` is how many tokens were generated so far."""

    job: int
    text: str
    tokens: int


@dataclass(frozen=True)
class Finished:
    """The job ended normally.

    Attributes:
        reason: for answers "stop" (end of turn or a stop string), "length" or "cancelled"; "done" for other
            jobs; "cancelled" for any job cancelled before or while it ran.
        text: the whole answer (answers only).
        stats: the engine's figures (answers only; None when cancelled before it started).
        value: what a non-answer job made: ``ModelInfo`` (load, reconfigure), prompt tokens held
            (read ahead), tokens/s per thread count (sweep), ``work``'s return value (call).
    """

    job: int
    reason: str
    text: str = ""
    stats: GenerationStats | None = None
    value: Any = None


@dataclass(frozen=True)
class Failed:
    """The job failed; ``message`` is one line. An answer keeps its partial ``text``.

    ``error`` is set when the host itself ended the job (``HostClosedError`` for jobs still waiting at
    ``close``, ``PromptTooLongError`` when a reloaded model no longer fits a strict prompt).
    """

    job: int
    message: str
    text: str = ""
    stats: GenerationStats | None = None
    error: HostError | None = None


HostEvent = Started | Progress | FirstToken | Piece | Finished | Failed
EventSink = Callable[[HostEvent], None]


@dataclass(frozen=True)
class ModelInfo:
    """The loaded model as clients see it."""

    folder: Path
    id: str  # the folder name: what an API calls the model
    name: str
    precision: str
    threads: int
    context_limit: int
    max_context: int
    load_seconds: float
    warmup_seconds: float
    low_memory: bool = False  # "Use less memory": the prefill graph left unloaded
    display_name: str = ""  # what people see: "Qwen2.5 Coder 0.5B Instruct · int4"


def model_info(engine: ChatEngine) -> ModelInfo:
    """Describe a loaded ``ChatEngine``."""
    files = engine.files
    return ModelInfo(
        folder=Path(files.folder),
        id=Path(files.folder).name,
        name=str(files.name),
        precision=str(files.precision),
        threads=int(engine.model.threads),
        context_limit=int(engine.context_limit),
        max_context=int(files.max_context),
        load_seconds=float(engine.load_seconds),
        warmup_seconds=float(engine.warmup_seconds),
        low_memory=bool(engine.low_memory),
        display_name=files.display_name,
    )


# -- the job handle -----------------------------------------------------------------------------------------
@dataclass(eq=False)
class Job:
    """A submitted job: iterate it (or ``poll``) for its events, ``cancel()`` to stop it.

    With an ``on_event`` callable at submit, events go to that callable (called on the host thread, so it
    must be quick and must not wait for other jobs) instead of the handle's queue; ``result`` and ``wait``
    work either way. A callable that raises cancels its job; the host goes on with the next.
    """

    id: int
    kind: str
    client: str
    run: Callable[[Job], None] = field(repr=False)
    on_event: EventSink | None = field(default=None, repr=False)
    cancel_token: threading.Event = field(default_factory=threading.Event, repr=False)
    done: threading.Event = field(default_factory=threading.Event, repr=False)
    result: Finished | Failed | None = None
    _events: queue.SimpleQueue[HostEvent] = field(default_factory=queue.SimpleQueue, repr=False)
    _notify: Callable[[Job, HostEvent], None] | None = field(default=None, repr=False)

    def cancel(self) -> None:
        """Stop this job, and only this one: at its next token or step, or before it starts."""
        self.cancel_token.set()

    @property
    def cancelled(self) -> bool:
        return self.cancel_token.is_set()

    def emit(self, event: HostEvent) -> None:
        """Deliver ``event`` (host thread only). After the last event (``Finished``/``Failed``) nothing is
        delivered."""
        if self.result is not None:
            return
        if isinstance(event, Finished | Failed):
            self.result = event
        try:
            if self.on_event is None:
                self._events.put(event)
            else:
                try:
                    self.on_event(event)
                except Exception:  # the client went away or has a bug: stop its job, keep the host
                    log.exception("event callback of job %d (%s) failed; job cancelled", self.id, self.kind)
                    self.cancel()
            if self._notify is not None:
                self._notify(self, event)
        finally:
            if self.result is not None:
                self.done.set()

    def poll(self, timeout: float | None = None) -> HostEvent | None:
        """The next event, waiting up to ``timeout`` seconds (None: until there is one); None on timeout."""
        try:
            return self._events.get(timeout=timeout)
        except queue.Empty:
            return None

    def __iter__(self) -> Iterator[HostEvent]:
        """Every event up to and including the last (``Finished`` or ``Failed``); not with ``on_event``."""
        if self.on_event is not None:
            raise TypeError("this job's events go to its on_event callable")
        while True:
            event = self._events.get()
            yield event
            if isinstance(event, Finished | Failed):
                return

    def wait(self, timeout: float | None = None) -> Finished | Failed | None:
        """Wait for the job to end; its last event, or None on timeout."""
        self.done.wait(timeout)
        return self.result


# -- stop strings -------------------------------------------------------------------------------------------
class StopText:
    """Holds back text that may be the start of a stop string; cuts the text where the first one begins.

    ``add`` returns what can be shown now; the pieces it returns, then ``flush``, always join to the text up
    to the first stop string, however the text was split into pieces.
    """

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = [s for s in stops if s]
        self.text = ""  # everything generated (cut at the stop string once one is found)
        self.sent = 0  # characters of ``text`` released so far
        self.hit = False

    def add(self, piece: str) -> str:
        """Add generated text; return what can be released now."""
        if self.hit:
            return ""
        self.text += piece
        if not self.stops:
            out, self.sent = self.text[self.sent :], len(self.text)
            return out
        start = max(self.sent - max(len(s) for s in self.stops), 0)
        found = [i for s in self.stops if (i := self.text.find(s, start)) >= 0]
        if found:
            cut = min(found)
            self.hit = True
            self.text = self.text[:cut]
            out, self.sent = self.text[self.sent :], cut
            return out
        keep = 0  # the longest tail of the text that begins some stop string
        for s in self.stops:
            for n in range(min(len(s) - 1, len(self.text)), keep, -1):
                if s.startswith(self.text[-n:]):
                    keep = n
                    break
        end = max(len(self.text) - keep, self.sent)
        out, self.sent = self.text[self.sent : end], end
        return out

    def flush(self) -> str:
        """The text held back (the answer ended without completing a stop string)."""
        out, self.sent = self.text[self.sent :], len(self.text)
        return out


# -- the host -----------------------------------------------------------------------------------------------
class EngineHost:
    """Owns one ``ChatEngine`` on one thread ("engine-host") and runs submitted jobs in FIFO order.

    Client API (every method may be called from any thread):

    - ``submit_load``, ``submit_answer``, ``submit_completion``, ``submit_read_ahead``, ``submit_reconfigure``,
      ``submit_sweep``, ``submit_call`` put a job on the queue and return its ``Job`` at once. They raise
      ``QueueFullError`` when ``max_queue`` jobs are already waiting (``bounded=False`` skips the check: the
      window's own jobs), ``HostClosedError`` after ``close``; ``submit_answer(strict=True)`` and
      ``submit_completion`` tokenize the prompt on the caller's thread and raise ``NoModelError`` or
      ``PromptTooLongError`` before anything is queued.
    - A job's events, in order: ``Started``; then ``Progress`` (load, sweep, call) or ``FirstToken`` and
      ``Piece`` (answers); then exactly one of ``Finished`` / ``Failed``. A job cancelled while it waits gets
      ``Started`` and ``Finished("cancelled")`` and never runs; a failure in one job is that job's ``Failed``
      and the host goes on with the next.
    - ``Job.cancel()`` stops that job only (within one token for answers). A read-ahead job is cancelled by
      the host as soon as any other job is submitted.
    - ``model`` (``ModelInfo`` or None), ``queue_depth()``, ``count_chat_tokens``, ``count_text_tokens``,
      ``check_fits`` read the loaded model without queueing; ``request_plan`` counts a draft on a thread of
      its own and calls back (the window's context meter).
    - ``subscribe(fn)`` calls ``fn(job, event)`` on the host thread for every event of every job (a window
      shows "an API request is running" with it); it returns the function that unsubscribes.
    - ``close()`` cancels the running job, ends each waiting one with ``Failed(error=HostClosedError())``
      and stops the thread.

    The KV cache holds one conversation. Each job names its client ("window", "api", ...): when a job's
    client differs from the one whose conversation the cache holds, the host puts that conversation aside
    (``OnnxModel.save_cache``) and brings back the new client's, so an API request between two window turns
    does not make the window's next turn prefill its whole conversation again.

    Args:
        max_queue: how many jobs may wait (not counting the running one).
        engine: an already loaded engine to host (the CLI, tests); else submit a load.
        cache_root: passed to ``ChatEngine`` by loads (the folder of optimized graph copies; None: none).
    """

    def __init__(
        self, max_queue: int = DEFAULT_QUEUE, engine: ChatEngine | None = None, cache_root: Path | None = None
    ) -> None:
        self.max_queue = max_queue
        self.cache_root = cache_root
        self._engine: ChatEngine | None = engine
        self._info: ModelInfo | None = model_info(engine) if engine is not None else None
        self._lock = threading.Condition()
        self._queue: deque[Job] = deque()
        self._running: Job | None = None
        self._ids = itertools.count(1)
        self._latest_read_ahead: dict[str, int] = {}
        self._listeners: list[Callable[[Job, HostEvent], None]] = []
        self._cache_owner: str | None = None  # whose conversation the model's KV cache holds
        self._saved: OrderedDict[str, CacheState] = OrderedDict()  # conversations put aside, by client
        self._closed = False
        self._counter = PlanCounter(lambda: self._engine)
        self._thread = threading.Thread(target=self._loop, name="engine-host", daemon=True)
        self._thread.start()

    # -- what clients may read from any thread --------------------------------------------------------------
    @property
    def engine(self) -> ChatEngine | None:
        """The loaded engine, for read-only work (``plan``, the tokenizer); only the host thread runs it."""
        return self._engine

    @property
    def model(self) -> ModelInfo | None:
        """The loaded model's id, name and context length, or None."""
        return self._info

    @property
    def closed(self) -> bool:
        """``close`` was called: no more jobs are taken."""
        return self._closed

    def is_alive(self) -> bool:
        """Whether the host thread still runs (False once ``close`` has stopped it)."""
        return self._thread.is_alive()

    def queue_depth(self) -> int:
        """Jobs waiting, plus the one running."""
        with self._lock:
            return len(self._queue) + (self._running is not None)

    def count_chat_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of ``messages`` rendered with the chat template, ready for the answer (nothing dropped)."""
        return len(self._require().context.encode(messages))

    def count_text_tokens(self, text: str) -> int:
        """Tokens of raw ``text`` as ``submit_completion`` reads it (control-token text as plain text)."""
        return len(self._require().tokenizer.encode_text(text))

    def request_plan(self, messages: Sequence[Message], max_tokens: int, done: PlanCallback) -> None:
        """Work out ``engine.plan(messages, max_tokens)`` on the plan counter's own thread (not the host's,
        so it never waits behind an answer) and pass it to ``done(plan, None)`` there, or ``done(None,
        reason)``. A newer request replaces one not yet started (``qwen_desktop.engine.counting``)."""
        self._counter.request(messages, max_tokens, done)

    def check_fits(self, prompt_tokens: int) -> None:
        """Raise ``PromptTooLongError`` unless ``prompt_tokens`` leave room for at least one reply token."""
        limit = self._require().context_limit
        if prompt_tokens >= limit:
            raise PromptTooLongError(prompt_tokens, limit)

    def subscribe(self, listener: Callable[[Job, HostEvent], None]) -> Callable[[], None]:
        """Call ``listener(job, event)`` on the host thread for every event of every job; returns the
        function that stops it. A listener that raises is logged and dropped."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _require(self) -> ChatEngine:
        engine = self._engine
        if engine is None:
            raise NoModelError()
        return engine

    # -- submitting ------------------------------------------------------------------------------------------
    def submit_load(
        self,
        folder: Path | str,
        threads: int = 0,
        context_limit: int = 4096,
        on_event: EventSink | None = None,
        bounded: bool = False,
        low_memory: bool = False,
    ) -> Job:
        """Load and warm up ``folder``, replacing the loaded model (``low_memory``: see ``ChatEngine``).
        ``Progress`` events carry each step (``phase``); ``Finished.value`` is the ``ModelInfo``; a missing or
        unusable folder gives ``Failed`` (and no model is loaded after it)."""

        def run(job: Job) -> None:
            from qwen_desktop.engine.chat import ChatEngine

            self._engine, self._info = None, None
            self._forget_caches()
            try:
                engine = ChatEngine(
                    Path(folder),
                    threads=threads,
                    context_limit=context_limit,
                    progress=lambda phase: job.emit(Progress(job.id, "load", phase=phase)),
                    cache_root=self.cache_root,
                    low_memory=low_memory,
                )
            except ModelError as exc:
                job.emit(Failed(job.id, str(exc)))
                return
            except Exception as exc:  # ORT refuses a damaged graph with its own exception types
                job.emit(Failed(job.id, f"{Path(folder).name}: cannot load the model ({_line(exc)})"))
                return
            self._engine, self._info = engine, model_info(engine)
            job.emit(Finished(job.id, "done", value=self._info))

        return self._submit("load", WINDOW, run, on_event, bounded)

    def submit_answer(
        self,
        messages: Sequence[Message],
        params: SamplingParams,
        client: str = WINDOW,
        stop: Sequence[str] = (),
        on_event: EventSink | None = None,
        bounded: bool = True,
        strict: bool = False,
        prompt_lookup: bool | None = None,
        reuse_cache: bool = True,
    ) -> Job:
        """Answer a conversation (system prompt first, ending with the user's message).

        By default the conversation is fitted to the context as the window wants it (old turns dropped, a
        long message cut; ``ChatEngine.chat``). With ``strict`` nothing is dropped: the prompt is tokenized
        here and raises ``PromptTooLongError`` unless it leaves room for a reply, and the reply is capped at
        that room. ``stop`` strings end the answer where the first one begins (it is not part of the text;
        the reason is "stop").

        ``reuse_cache=False`` prefills the whole prompt from an empty cache: slower, but a seeded request
        then writes the same answer every time (int4 models prefill long prompts through their int8
        graph, so a prompt read in other pieces gives slightly different logits).
        """
        msgs = [dict(m) for m in messages]
        if not strict:

            def events(engine: ChatEngine, cancel: threading.Event) -> Iterator[GenerationEvent]:
                return engine.chat(msgs, params, cancel, prompt_lookup=prompt_lookup)

            runner = self._answer_runner(events, stop, reuse_cache)
            return self._submit("answer", client, runner, on_event, bounded)

        engine = self._require()
        ids = engine.context.encode(msgs)
        self.check_fits(len(ids))

        def prompt_ids(now: ChatEngine) -> list[int]:
            return ids if now is engine else now.context.encode(msgs)  # another model was loaded since

        return self._submit_ids(
            "answer", client, prompt_ids, params, stop, on_event, bounded, prompt_lookup, reuse_cache
        )

    def submit_completion(
        self,
        prompt: str,
        params: SamplingParams,
        client: str = API,
        stop: Sequence[str] = (),
        on_event: EventSink | None = None,
        bounded: bool = True,
        reuse_cache: bool = True,
    ) -> Job:
        """Continue raw ``prompt`` text (no chat template). The text is untrusted: control-token text in it
        (``<|im_end|>``) stays plain text (``ChatTokenizer.encode_text``). Raises ``PromptTooLongError``
        here when it leaves no room for a reply; the reply is capped at that room. ``reuse_cache`` as for
        ``submit_answer``."""
        engine = self._require()
        ids = engine.tokenizer.encode_text(prompt) or [0]
        self.check_fits(len(ids))

        def prompt_ids(now: ChatEngine) -> list[int]:
            return ids if now is engine else now.tokenizer.encode_text(prompt) or [0]

        return self._submit_ids(
            "completion", client, prompt_ids, params, stop, on_event, bounded, False, reuse_cache
        )

    def submit_read_ahead(
        self,
        messages: Sequence[Message],
        max_tokens: int,
        client: str = WINDOW,
        on_event: EventSink | None = None,
    ) -> Job:
        """Read a conversation ending with the draft being typed into the KV cache (``ChatEngine.read_ahead``),
        so sending it prefills only what changed. Gives way to any other job: cancelled when one is
        submitted, skipped when a newer draft of the same client was submitted. ``Finished.value`` is the
        number of prompt tokens the cache holds (0 when skipped or when reading ahead failed). Never
        refused for a full queue."""
        msgs = [dict(m) for m in messages]

        def run(job: Job) -> None:
            engine = self._engine
            if engine is None or job.cancelled or self._latest_read_ahead.get(client) != job.id:
                job.emit(Finished(job.id, "cancelled", value=0))
                return
            self._take_cache(client)
            try:
                held = engine.read_ahead(msgs, max_tokens, job.cancel_token)
            except Exception:  # reading ahead only saves time; the answer itself reports a real failure
                held = 0
            job.emit(Finished(job.id, "done", value=held))

        return self._submit("read_ahead", client, run, on_event, bounded=False)

    def submit_reconfigure(
        self,
        threads: int,
        context_limit: int,
        on_event: EventSink | None = None,
        bounded: bool = False,
        low_memory: bool | None = None,
    ) -> Job:
        """Rebuild the session with a thread count (0 = all cores), context limit and, unless None, the
        "Use less memory" choice; ``Finished.value`` is the new ``ModelInfo``. Nothing loaded: ``Finished``
        with value None."""

        def run(job: Job) -> None:
            engine = self._engine
            if engine is None:
                job.emit(Finished(job.id, "done"))
                return
            before = engine.model
            try:
                engine.reconfigure(
                    threads=threads or (os.cpu_count() or 1),
                    context_limit=context_limit,
                    low_memory=low_memory,
                )
            except Exception as exc:
                self._forget_caches()
                job.emit(Failed(job.id, _line(exc)))
                return
            if engine.model is not before:  # a new session: the saved caches belong to the old one
                self._forget_caches()
            self._info = model_info(engine)
            job.emit(Finished(job.id, "done", value=self._info))

        return self._submit("reconfigure", WINDOW, run, on_event, bounded)

    def submit_sweep(
        self,
        folder: Path | str,
        counts: Sequence[int],
        on_event: EventSink | None = None,
        bounded: bool = False,
    ) -> Job:
        """Measure decode tokens/s for each thread count (for "Auto" threads); ``Finished.value`` is the
        dict; ``Progress("sweep", done, total)`` counts the thread counts measured."""

        def run(job: Job) -> None:
            from qwen_desktop.engine.bench import sweep_threads

            try:
                result = sweep_threads(
                    Path(folder),
                    list(counts),
                    progress=lambda done, total: job.emit(Progress(job.id, "sweep", done, total)),
                    cancel=job.cancel_token,
                )
            except Exception as exc:
                job.emit(Failed(job.id, _line(exc)))
                return
            job.emit(Finished(job.id, "cancelled" if job.cancelled else "done", value=result))

        return self._submit("sweep", WINDOW, run, on_event, bounded)

    def submit_call(
        self,
        kind: str,
        work: Callable[[Job], Any],
        client: str = WINDOW,
        on_event: EventSink | None = None,
        bounded: bool = False,
    ) -> Job:
        """Run ``work(job)`` on the host thread in queue order (a model import, which must not compete with
        an answer for the cores). ``work`` may ``job.emit(Progress(...))`` and should watch
        ``job.cancel_token``. Its return value is ``Finished.value``; an exception becomes ``Failed`` (a
        ``ModelError``'s own message, else the type and first line)."""

        def run(job: Job) -> None:
            try:
                value = work(job)
            except ModelError as exc:
                job.emit(Failed(job.id, str(exc)))
                return
            except Exception as exc:
                job.emit(Failed(job.id, _line(exc)))
                return
            job.emit(Finished(job.id, "cancelled" if job.cancelled else "done", value=value))

        return self._submit(kind, client, run, on_event, bounded)

    def close(self, timeout: float = 30.0) -> bool:
        """Cancel the running job, end the waiting ones with ``HostClosedError``, stop the thread and wait
        for it (not when called on the host thread itself). False if it did not stop within ``timeout``."""
        with self._lock:
            self._closed = True
            if self._running is not None:
                self._running.cancel()
            self._lock.notify_all()
        self._counter.close()
        if threading.current_thread() is self._thread:
            return False
        self._thread.join(timeout)
        return not self._thread.is_alive()

    # -- the host thread -------------------------------------------------------------------------------------
    def _submit(
        self, kind: str, client: str, run: Callable[[Job], None], on_event: EventSink | None, bounded: bool
    ) -> Job:
        with self._lock:
            if self._closed:
                raise HostClosedError()
            if bounded and len(self._queue) >= self.max_queue:
                raise QueueFullError(len(self._queue))
            job = Job(next(self._ids), kind, client, run, on_event, _notify=self._notify)
            if kind == "read_ahead":
                self._latest_read_ahead[client] = job.id
            else:  # reading ahead gives way to any other job
                for other in [*self._queue, self._running]:
                    if other is not None and other.kind == "read_ahead":
                        other.cancel()
            self._queue.append(job)
            self._lock.notify_all()
        return job

    def _submit_ids(
        self,
        kind: str,
        client: str,
        prompt_ids: Callable[[ChatEngine], list[int]],
        params: SamplingParams,
        stop: Sequence[str],
        on_event: EventSink | None,
        bounded: bool,
        prompt_lookup: bool | None,
        reuse_cache: bool,
    ) -> Job:
        """Queue an answer to already tokenized prompt ids, its reply capped at the room left."""

        def events(engine: ChatEngine, cancel: threading.Event) -> Iterator[GenerationEvent]:
            from qwen_desktop.engine.generate import stream_generate

            ids = prompt_ids(engine)
            room = engine.context_limit - len(ids)
            if room < 1:
                raise PromptTooLongError(len(ids), engine.context_limit)
            run = replace(params, max_tokens=max(1, min(params.max_tokens, room)))
            return stream_generate(
                engine.model, engine.tokenizer, ids, run, engine.stop_ids, cancel, prompt_lookup=prompt_lookup
            )

        return self._submit(kind, client, self._answer_runner(events, stop, reuse_cache), on_event, bounded)

    def _loop(self) -> None:
        while True:
            with self._lock:
                while not self._queue and not self._closed:
                    self._lock.wait()
                if self._closed:
                    waiting = list(self._queue)
                    self._queue.clear()
                    break
                job = self._running = self._queue.popleft()
            self._run(job)
            with self._lock:
                self._running = None
        for job in waiting:
            job.emit(Failed(job.id, str(HostClosedError()), error=HostClosedError()))

    def _run(self, job: Job) -> None:
        try:
            job.emit(Started(job.id))
            if job.cancelled:
                job.emit(Finished(job.id, "cancelled", value=0 if job.kind == "read_ahead" else None))
            else:
                job.run(job)
        except Exception as exc:  # a bug must not stop the host
            log.exception("%s job %d failed", job.kind, job.id)
            job.emit(Failed(job.id, _line(exc)))
        finally:
            if job.result is None:
                job.emit(Failed(job.id, f"the {job.kind} job ended without a result"))

    def _notify(self, job: Job, event: HostEvent) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(job, event)
            except Exception:
                log.exception("host listener failed; dropped")
                with self._lock:
                    if listener in self._listeners:
                        self._listeners.remove(listener)

    def _answer_runner(
        self,
        events: Callable[[ChatEngine, threading.Event], Iterator[GenerationEvent]],
        stop: Sequence[str],
        reuse_cache: bool = True,
    ) -> Callable[[Job], None]:
        def run(job: Job) -> None:
            from qwen_desktop.engine.generate import Finished as EngineFinished

            engine = self._engine
            if engine is None:
                job.emit(Failed(job.id, str(NoModelError()), error=NoModelError()))
                return
            self._take_cache(job.client)
            if not reuse_cache:
                engine.model.reset()
            began = time.perf_counter()
            held = StopText(stop)
            tokens = 0
            first = True
            end: EngineFinished | None = None
            try:
                for event in events(engine, job.cancel_token):
                    if isinstance(event, EngineFinished):
                        end = event
                        break
                    if event.token >= 0:
                        tokens += 1
                    out = held.add(event.text)
                    if out:
                        if first:
                            job.emit(FirstToken(job.id, time.perf_counter() - began))
                            first = False
                        job.emit(Piece(job.id, out, tokens))
                    if held.hit:
                        job.cancel_token.set()  # ends the generation at once, with its stats
            except HostError as exc:
                job.emit(Failed(job.id, str(exc), held.text, error=exc))
                return
            except Exception as exc:  # a failure outside the engine's own guard: keep the partial text
                job.emit(Failed(job.id, _line(exc), held.text))
                return
            rest = held.flush()
            if rest:
                if first:
                    job.emit(FirstToken(job.id, time.perf_counter() - began))
                job.emit(Piece(job.id, rest, tokens))
            if end is None:
                job.emit(Failed(job.id, "The answer ended without a reason.", held.text))
            elif end.reason == "error":
                job.emit(Failed(job.id, end.error or "the answer failed", held.text, end.stats))
            else:
                job.emit(Finished(job.id, "stop" if held.hit else end.reason, held.text, end.stats))

        return run

    # -- one KV cache, several conversations -----------------------------------------------------------------
    def _take_cache(self, client: str) -> None:
        """Make the model's KV cache hold ``client``'s conversation (host thread only)."""
        engine = self._engine
        if engine is None or self._cache_owner == client:
            return
        model = engine.model
        if self._cache_owner is not None and model.length:
            self._saved[self._cache_owner] = model.save_cache()
            self._saved.move_to_end(self._cache_owner)
            while len(self._saved) > MAX_SAVED_CACHES:
                self._saved.popitem(last=False)
        saved = self._saved.pop(client, None)
        if saved is not None:
            model.restore_cache(saved)
        else:
            model.reset()
        self._cache_owner = client

    def _forget_caches(self) -> None:
        self._saved.clear()
        self._cache_owner = None


def _line(exc: BaseException) -> str:
    """One line for the user: the exception's type and its first line."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
