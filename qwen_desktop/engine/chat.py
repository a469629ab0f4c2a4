"""``ChatEngine``: a model folder loaded and warmed up, answering conversations as event streams.

This is what the CLI, the benchmarks and the app's worker thread all drive. It owns no threads: the caller
iterates ``chat()`` wherever it likes and cancels through a ``threading.Event``.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from qwen_desktop.engine.chat_template import Message
from qwen_desktop.engine.context import ContextBuilder, ContextPlan
from qwen_desktop.engine.generate import (
    GREEDY,
    Finished,
    GenerationEvent,
    SamplingParams,
    common_prefix,
    prefill,
    stream_generate,
)
from qwen_desktop.engine.load_phase import LoadPhase
from qwen_desktop.engine.memory import return_freed_memory
from qwen_desktop.engine.model_files import ModelFiles, load_model_files
from qwen_desktop.engine.session import OnnxModel
from qwen_desktop.engine.tokenizer import ChatTokenizer

DEFAULT_CONTEXT = 4096
LoadProgress = Callable[[LoadPhase], None]


class ChatEngine:
    """Load ``folder`` and answer chats.

    Args:
        folder: a model folder (``qwen-desktop build-model`` output or a hub ONNX export).
        threads: ONNX Runtime threads, 0 for all cores.
        context_limit: tokens of prompt + reply; capped at the model's maximum.
        progress: told each step of the load as it begins (a ``LoadPhase``).
        cache_root: where ONNX Runtime's optimized, pre-packed copy of the graph is kept (the app passes
            ``storage.paths.ort_cache_dir()``); it makes every load after the first about twice as fast.
            None keeps no copy: every load optimizes the graph again.
        low_memory: "Use less memory": leave the folder's prefill graph unloaded and run prompts on the
            decode graph (``OnnxModel(prefill=False)``): one weight set in memory, slower prompts.
    """

    def __init__(
        self,
        folder: Path,
        threads: int = 0,
        context_limit: int = DEFAULT_CONTEXT,
        progress: LoadProgress | None = None,
        warm_up: bool = True,
        cache_root: Path | None = None,
        low_memory: bool = False,
    ) -> None:
        say = progress or (lambda _msg: None)
        say(LoadPhase.READ_FOLDER)
        self.files: ModelFiles = load_model_files(Path(folder))
        self.context_limit = min(context_limit, self.files.max_context)
        self.cache_root = cache_root
        self.low_memory = low_memory
        say(LoadPhase.OPEN_GRAPHS)
        tokenizers: list[ChatTokenizer] = []
        # The tokenizer (~0.4 s for Qwen's 151k-token vocabulary) is read while the sessions build.
        self.model = OnnxModel(
            self.files,
            threads=threads,
            max_len=self.context_limit,
            cache_root=cache_root,
            alongside=lambda: tokenizers.append(ChatTokenizer(self.files.tokenizer)),
            prefill=not low_memory,
        )
        self.tokenizer = tokenizers[0]
        self.context = ContextBuilder(self.tokenizer, self.files.chat_template)
        self.load_seconds = self.model.load_seconds
        self.warmup_seconds = 0.0
        if warm_up:
            say(LoadPhase.WARM_UP)
            self.warmup_seconds = self.warm_up()
        return_freed_memory()  # what loading freed (the tokenizer's JSON, ORT's load copies) goes back

    @property
    def threads(self) -> int:
        return self.model.threads

    @property
    def stop_ids(self) -> tuple[int, ...]:
        return self.files.stop_ids

    def warm_up(self) -> float:
        """Run a short prompt and a few decode steps so the first real answer is not the slow one
        (ORT allocates its arenas and packs weights lazily). Returns seconds taken."""
        started = time.perf_counter()
        ids = self.tokenizer.encode("Hello! Warm-up text so the first answer is quick.")[:16] or [0]
        for _ in stream_generate(
            self.model, self.tokenizer, ids, SamplingParams(temperature=0.0, max_tokens=3)
        ):
            pass
        self.model.reset()
        return time.perf_counter() - started

    def reconfigure(
        self, threads: int | None = None, context_limit: int | None = None, low_memory: bool | None = None
    ) -> None:
        """Apply new thread, context or memory settings by rebuilding the ONNX Runtime sessions."""
        new_threads = self.model.threads if threads is None else threads
        new_limit = (
            self.context_limit if context_limit is None else min(context_limit, self.files.max_context)
        )
        new_low = self.low_memory if low_memory is None else low_memory
        if (
            new_threads == self.model.threads
            and new_limit == self.context_limit
            and new_low == self.low_memory
        ):
            return
        self.context_limit = new_limit
        self.low_memory = new_low
        self.model = OnnxModel(
            self.files,
            threads=new_threads,
            max_len=new_limit,
            cache_root=self.cache_root,
            prefill=not new_low,
        )
        self.load_seconds = self.model.load_seconds
        self.warmup_seconds = self.warm_up()
        return_freed_memory()

    def plan(self, messages: Sequence[Message], max_tokens: int) -> ContextPlan:
        """What would be sent for ``messages``: the token budget split and anything dropped."""
        return self.context.plan(messages, self.context_limit, max_tokens)

    def chat(
        self,
        messages: Sequence[Message],
        params: SamplingParams = GREEDY,
        cancel: threading.Event | None = None,
        prompt_lookup: bool | None = None,
    ) -> Iterator[GenerationEvent]:
        """Answer the conversation: ``TextPiece`` events, then ``Finished``.

        The KV cache of the previous call is reused for the longest common token prefix, so a follow-up
        turn only prefills its new tokens.
        """
        plan = self.plan(messages, params.max_tokens)
        self.last_plan = plan
        max_new = min(params.max_tokens, plan.reply_room)
        run = dataclasses.replace(params, max_tokens=max_new)
        yield from stream_generate(
            self.model, self.tokenizer, plan.prompt, run, self.stop_ids, cancel, prompt_lookup=prompt_lookup
        )

    def read_ahead(
        self,
        messages: Sequence[Message],
        max_tokens: int = GREEDY.max_tokens,
        cancel: threading.Event | None = None,
    ) -> int:
        """Prefill the KV cache with ``messages`` without answering, typically while the last user message
        is still being typed: when it is sent, ``chat`` reuses every token up to where the text changed and
        prefills only the rest. ``max_tokens`` must be what the answer will use (it decides what fits).

        Stops between prefill chunks once ``cancel`` is set; what was done stays in the cache. Returns how
        many tokens of the conversation's prompt the cache now holds.
        """
        prompt = self.plan(messages, max_tokens).prompt
        if common_prefix(self.model.tokens, prompt) < len(prompt):  # else nothing changed since last time
            prefill(self.model, prompt, cancel)
        return common_prefix(self.model.tokens, prompt)

    def complete(self, prompt: str, params: SamplingParams = GREEDY) -> tuple[str, Finished]:
        """Answer one user message; returns (text, finished). For scripts and tests."""
        text = []
        finished = None
        for ev in self.chat([{"role": "user", "content": prompt}], params):
            if isinstance(ev, Finished):
                finished = ev
            else:
                text.append(ev.text)
        assert finished is not None
        return "".join(text), finished
