"""Streaming generation: ``generate_step`` yields token ids, ``stream_generate`` yields text events.

A chain of small functions in the gpt-fast manner: ``prefill`` -> ``choose`` -> ``verify_step`` (one
forward pass over the last token plus any prompt-lookup draft) -> back to ``choose``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, fields
from typing import Literal

import numpy as np

from qwen_desktop.engine.kv_cache import ContextFullError
from qwen_desktop.engine.sampler import (
    LogitsProcessor,
    Sampler,
    check_draft,
    make_repetition_penalty,
    make_sampler,
)
from qwen_desktop.engine.session import OnnxModel
from qwen_desktop.engine.tokenizer import ChatTokenizer, StreamingDetokenizer

FinishReason = Literal["stop", "length", "cancelled", "error"]
PREFILL_CHUNK = 256  # tokens per prefill pass: bounds activation memory and lets cancel act mid-prompt


@dataclass(frozen=True)
class SamplingParams:
    """How to pick tokens and when to stop. temperature 0 is greedy."""

    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20
    min_p: float = 0.0
    repetition_penalty: float = 1.05
    seed: int | None = None
    max_tokens: int = 1024

    @classmethod
    def from_settings(cls, source: object) -> SamplingParams:
        """Take every field from ``source``'s attributes of the same names (the app's Settings, CLI args)."""
        return cls(**{f.name: getattr(source, f.name) for f in fields(cls)})


GREEDY = SamplingParams(temperature=0.0, top_p=1.0, top_k=0, repetition_penalty=1.0)


@dataclass(frozen=True)
class GenerationStats:
    """Figures of one generation. Rates are tokens per second; times are seconds."""

    prompt_tokens: int
    reused_tokens: int
    generated_tokens: int
    ttft: float
    prefill_tps: float
    decode_tps: float
    total: float
    drafted_tokens: int = 0
    accepted_tokens: int = 0

    @property
    def prefill_tokens(self) -> int:
        return self.prompt_tokens - self.reused_tokens


@dataclass(frozen=True)
class TextPiece:
    """New text of the answer (possibly empty while a multi-byte character is unfinished) and its token."""

    text: str
    token: int


@dataclass(frozen=True)
class Finished:
    """The last event of every stream."""

    reason: FinishReason
    stats: GenerationStats
    error: str | None = None


GenerationEvent = TextPiece | Finished


# Prompt lookup (see generate_step); the choices are measured in docs/experiments.md, "Prompt lookup and the sampler".
LOOKUP_MIN_NGRAM = 2  # a draft needs the last 2+ tokens to have occurred before: 1-token matches mislead
LOOKUP_MAX_PAUSE = 8  # most decode steps without a draft after rejected drafts (0: draft every step)


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    x, y = np.asarray(a[:n]), np.asarray(b[:n])
    diff = np.nonzero(x != y)[0]
    return int(diff[0]) if diff.size else n


def find_draft(seq: Sequence[int], max_draft: int, max_ngram: int = 3, min_ngram: int = 1) -> list[int]:
    """Prompt-lookup drafting: find the latest earlier occurrence of the sequence's last n tokens
    (longest n first) and propose the tokens that followed it."""
    if max_draft <= 0 or len(seq) < 2:
        return []
    arr = np.asarray(seq, dtype=np.int64)
    for n in range(min(max_ngram, len(arr) - 1), min_ngram - 1, -1):
        tail = arr[-n:]
        windows = np.lib.stride_tricks.sliding_window_view(
            arr[:-1], n
        )  # [len - n, n], all but the tail itself
        hits = np.nonzero((windows == tail).all(axis=1))[0]
        if hits.size:
            start = int(hits[-1]) + n
            return [int(t) for t in arr[start : start + max_draft]]
    return []


def prefill(
    model: OnnxModel, prompt: Sequence[int], cancel: threading.Event | None
) -> tuple[np.ndarray | None, int]:
    """Bring the cache to ``prompt``, reusing its longest common prefix. Returns (logits of the last
    prompt position or None if cancelled, number of reused tokens)."""
    reused = min(common_prefix(model.tokens, prompt), len(prompt) - 1)  # at least one token to get logits
    model.rewind(reused)
    todo = list(prompt[reused:])
    logits = None
    for start in range(0, len(todo), PREFILL_CHUNK):
        if cancel is not None and cancel.is_set():
            return None, reused
        logits = model.forward(todo[start : start + PREFILL_CHUNK], keep=1)[-1]
    return logits, reused


def choose(
    logits: np.ndarray, history: Sequence[int], sampler: Sampler, processor: LogitsProcessor | None
) -> int:
    if processor is not None:
        logits = processor(logits, history)
    return sampler(logits)


def verify_step(
    model: OnnxModel,
    token: int,
    draft: list[int],
    history: list[int],
    sampler: Sampler,
    processor: LogitsProcessor | None,
) -> list[int]:
    """Feed ``token`` and a draft in one pass; return the draft tokens the model agrees with plus the
    model's own next token. The cache keeps ``token`` and the accepted draft only."""
    logits = model.forward([token, *draft], keep=len(draft) + 1)  # [1 + len(draft), vocab]
    out: list[int] = []
    for j in range(len(draft) + 1):
        row = logits[j] if processor is None else processor(logits[j], [*history, token, *out])
        last = j == len(draft)  # past the draft: the model's own next token
        pick = sampler(row) if last else check_draft(sampler, row, draft[j])
        out.append(pick)
        if last or pick != draft[j]:
            break
    model.rewind(model.length - (len(draft) - (len(out) - 1)))  # drop the rejected draft positions
    return out


@dataclass
class StepCounts:
    """What ``generate_step`` tells its caller as it goes (for the answer's stats)."""

    reused: int = 0  # prompt tokens the KV cache already held
    prefill_end: float | None = None  # ``time.perf_counter()`` once the prompt was read
    drafted: int = 0  # tokens prompt lookup proposed
    accepted: int = 0  # of those, the ones the model kept


def generate_step(
    model: OnnxModel,
    prompt: Sequence[int],
    params: SamplingParams = GREEDY,
    cancel: threading.Event | None = None,
    prompt_lookup: bool | None = None,
    num_draft: int = 3,
    counts: StepCounts | None = None,
) -> Generator[int, None, None]:
    """Yield token ids after ``prompt`` until the caller stops iterating (no stop-token logic here).

    Prompt lookup (``None``: on) proposes the tokens that followed the latest earlier occurrence of the
    last few tokens and checks them in one pass. Greedy keeps a draft token only where it is the argmax,
    so the text is greedy's own; sampling keeps it with the probability the sampler gives it
    (``RandomSampler.check``), so each answer is drawn from the same distribution as without lookup.
    """
    sampler = make_sampler(params.temperature, params.top_p, params.top_k, params.min_p, params.seed)
    processor = make_repetition_penalty(params.repetition_penalty)
    use_lookup = True if prompt_lookup is None else prompt_lookup
    logits, reused = prefill(model, prompt, cancel)
    if counts is not None:
        counts.reused = reused
        counts.prefill_end = time.perf_counter()
    if logits is None:
        return
    history = list(prompt)
    pending = [choose(logits, history, sampler, processor)]
    pause = 0  # decode steps to go before the next draft
    backoff = 1  # how long to pause after the next draft the model rejects outright
    width = 1  # the next draft's length: grows while drafts are accepted whole, up to num_draft
    while True:
        token = pending.pop(0)
        yield token
        history.append(token)
        if pending:
            continue  # an accepted draft token: already in the cache
        room = model.max_len - model.length - 1
        if room < 0:
            raise ContextFullError("the context is full")
        draft: list[int] = []
        if use_lookup:
            if pause:
                pause -= 1
            else:
                draft = find_draft(history, min(width, room), min_ngram=LOOKUP_MIN_NGRAM)
        if counts is not None:
            counts.drafted += len(draft)
        pending = verify_step(model, token, draft, history[:-1], sampler, processor)
        if draft:
            # A wider pass costs more (on the 4-bit graph 2 tokens 1.15x one, 4 tokens 1.7x), so drafts
            # start short and grow while the model takes them whole.
            width = min(width + 1, num_draft) if len(pending) == len(draft) + 1 else 1
            if len(pending) == 1 and LOOKUP_MAX_PAUSE:
                # Nothing accepted: the text is not repeating its context right now. Draft again later,
                # later still after each miss in a row.
                pause, backoff = backoff, min(2 * backoff, LOOKUP_MAX_PAUSE)
            else:
                backoff = 1
        if counts is not None:
            counts.accepted += len(pending) - 1


def stream_generate(
    model: OnnxModel,
    tokenizer: ChatTokenizer,
    prompt: Sequence[int],
    params: SamplingParams = GREEDY,
    stop_ids: Sequence[int] = (),
    cancel: threading.Event | None = None,
    prompt_lookup: bool | None = None,
) -> Iterator[GenerationEvent]:
    """Yield ``TextPiece`` events for the answer to ``prompt``, then one ``Finished`` with stats.

    Stops at a stop id (not emitted), after ``params.max_tokens``, when the context is full, or when
    ``cancel`` is set (checked before every forward pass, so within one decode step).
    """
    start = time.perf_counter()
    counts = StepCounts()
    detok = StreamingDetokenizer(tokenizer)
    stops = set(stop_ids)
    generated = 0
    first_at = 0.0
    reason: FinishReason = "length"
    error: str | None = None
    steps = generate_step(model, prompt, params, cancel, prompt_lookup, counts=counts)
    try:
        if params.max_tokens <= 0:
            reason = "length"
        else:
            for token in steps:
                if generated == 0:
                    first_at = time.perf_counter()
                if token in stops:
                    reason = "stop"
                    break
                generated += 1
                yield TextPiece(detok.add(token), token)
                if generated >= params.max_tokens:
                    reason = "length"
                    break
                if cancel is not None and cancel.is_set():
                    reason = "cancelled"
                    break
            else:
                reason = "cancelled"  # the generator ended by itself: cancelled during prefill
    except ContextFullError:
        reason = "length"
    except Exception as exc:  # an ORT failure mid-answer: report it, keep what was written
        reason, error = "error", f"{type(exc).__name__}: {exc}"
    finally:
        steps.close()
    tail = detok.flush()
    if tail:
        yield TextPiece(tail, -1)
    end = time.perf_counter()
    prefill_end = end if counts.prefill_end is None else counts.prefill_end
    reused = counts.reused
    prefilled = len(prompt) - reused
    stats = GenerationStats(
        prompt_tokens=len(prompt),
        reused_tokens=reused,
        generated_tokens=generated,
        ttft=(first_at or end) - start,
        prefill_tps=prefilled / max(prefill_end - start, 1e-9),
        decode_tps=(generated - 1) / (end - first_at) if generated > 1 and first_at else 0.0,
        total=end - start,
        drafted_tokens=counts.drafted,
        accepted_tokens=counts.accepted,
    )
    yield Finished(reason, stats, error)
