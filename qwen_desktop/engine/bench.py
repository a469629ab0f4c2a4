"""Benchmarks of the engine: what ``qwen-desktop bench`` prints and what the app's "Auto" threads uses."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.errors import ModelError
from qwen_desktop.engine.generate import (
    GREEDY,
    Finished,
    SamplingParams,
    TextPiece,
    stream_generate,
)
from qwen_desktop.engine.manifest import source_checksum
from qwen_desktop.engine.memory import MemoryUse, memory_use
from qwen_desktop.engine.model_files import load_model_files
from qwen_desktop.engine.session import OnnxModel
from qwen_desktop.engine.tokenizer import ChatTokenizer

_PARAGRAPH = (
    "The history of computing is a story of abstraction. Early machines were programmed by rewiring panels; "
    "stored-program computers let instructions live in memory beside the data they worked on. Assemblers gave "
    "names to machine instructions, compilers turned formulas into code, and operating systems hid the details "
    "of disks, terminals and memory behind files and processes. "
)
SHORT_QUESTION = "Explain in two sentences why the sky is blue, and mention Rayleigh scattering by name."
TURNS = [
    "What is a linked list?",
    "How is it different from an array?",
    "Which one is better for inserting in the middle?",
    "Show me a tiny Python example of a linked list node.",
    "How would I reverse such a list?",
    "What is the time complexity of that reversal?",
]
EDIT_PROMPT = (
    "Rename the variable `total` to `running_sum` in this code and return the whole code:\n\n"
    "def accumulate(values):\n"
    "    total = 0\n"
    "    out = []\n"
    "    for v in values:\n"
    "        total += v\n"
    "        out.append(total)\n"
    "    return out\n\n"
    "def average(values):\n"
    "    total = 0\n"
    "    for v in values:\n"
    "        total += v\n"
    "    return total / len(values)\n"
)


LONG_CONTEXT = 2000  # tokens before the long-context decode figure: a long chat, half the default context


def long_prompt(tokenizer: ChatTokenizer, target: int = 500) -> str:
    """A user message whose rendered chat prompt is about ``target`` tokens."""
    text = ""
    while tokenizer.count(text) < target - 30:
        text += _PARAGRAPH
    return text + "\nSummarise the text above in one sentence."


@dataclass
class BenchResult:
    """Figures of one ``bench`` run (medians over ``runs``)."""

    model: str
    threads: int
    runs: int
    load_s: float
    warmup_s: float
    # seconds from the process's start (its launch: imports included) to the model loaded and warmed up;
    # None where the start time cannot be read
    ready_s: float | None
    from_cache: bool  # every graph came from the optimized-graph cache (a start after the first)
    low_memory: bool  # "Use less memory": prompts ran on the decode graph
    prefill_skipped: str | None  # why the folder's int8 prefill graph stayed closed (None: it ran prompts)
    ttft_short_s: float
    short_prompt_tokens: int
    ttft_typed_s: float  # the short prompt when all but its last word was read ahead while it was typed
    typed_reused_tokens: int
    ttft_long_s: float
    long_prompt_tokens: int
    prefill_tps: float
    decode_tps: float
    decode_tokens: int
    turn6_ttft_s: float
    turn6_prompt_tokens: int
    turn6_reused_tokens: int
    sampled_decode_tps: float  # the app's default sampling (SamplingParams()), prompt lookup on, as the app
    lookup_decode_tps: float
    plain_edit_decode_tps: float
    long_context_decode_tps: float  # decode right after a prompt of long_context_tokens (a long chat)
    long_context_tokens: int
    peak_rss_mb: float
    # peak RSS of a chat that uses both graphs: load, the short and long prompts (prefill graph when the
    # folder has one) and a reply of decode_tokens (decode graph); read after round 1's decode figure
    chat_peak_rss_mb: float
    # MemoryUse.to_dict() (rss/anon/file MB, and each graph's resident file pages) once loaded and warmed up,
    # and right after the long prompt's first token (both graphs and the head in use); None off Linux.
    memory_loaded: dict[str, Any] | None = None
    memory_long_prompt: dict[str, Any] | None = None
    memory_chat: dict[str, Any] | None = None  # where chat_peak_rss_mb is read (after round 1's reply)
    memory_end: dict[str, Any] | None = None  # after the last figure (a conversation of long_context_tokens)
    # the decode ceiling (engine/ceiling.py): memory read speed with ``threads`` threads, and the weights one
    # decode step reads; measured after every other figure (its buffer is not in the peak RSS figures)
    read_gb_s: float | None = None
    decode_mb: float | None = None
    machine: dict[str, Any] = field(default_factory=dict)

    @property
    def ceiling_tps(self) -> float | None:
        """Tokens/s if a step took only the time to read its weights once."""
        if not self.read_gb_s or not self.decode_mb:
            return None
        return self.read_gb_s * 1000 / self.decode_mb

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _ttft(engine: ChatEngine, messages: list[dict[str, str]], reset: bool = True) -> tuple[float, int, int]:
    """TTFT of ``messages``: (seconds, prompt tokens, tokens reused from the cache)."""
    if reset:
        engine.model.reset()
    first = None
    start = time.perf_counter()
    for ev in engine.chat(messages, SamplingParams(temperature=0.0, max_tokens=1, repetition_penalty=1.0)):
        if isinstance(ev, TextPiece) and first is None:
            first = time.perf_counter()
        if isinstance(ev, Finished):
            return ev.stats.ttft, ev.stats.prompt_tokens, ev.stats.reused_tokens
    return (first or time.perf_counter()) - start, 0, 0


def _ttft_typed(engine: ChatEngine, question: str) -> tuple[float, int]:
    """TTFT of ``question`` sent after the app read it ahead while it was typed, up to its last word
    (``ChatEngine.read_ahead``). Returns (seconds, reused tokens)."""
    engine.model.reset()
    engine.read_ahead([{"role": "user", "content": question.rsplit(" ", 1)[0]}], max_tokens=1)
    seconds, _, reused = _ttft(engine, [{"role": "user", "content": question}], reset=False)
    return seconds, reused


def _decode_ids(
    engine: ChatEngine, ids: list[int], n: int, lookup: bool, params: SamplingParams | None = None
) -> float:
    """Decode tokens/s over ``n`` new tokens after the prompt ``ids``, from an empty cache, stop tokens
    ignored so every run writes the same length; greedy unless ``params`` says otherwise."""
    engine.model.reset()
    params = replace(params or GREEDY, max_tokens=n)
    for ev in stream_generate(engine.model, engine.tokenizer, ids, params, stop_ids=(), prompt_lookup=lookup):
        if isinstance(ev, Finished):
            return ev.stats.decode_tps
    return 0.0


def _long_context_decode(engine: ChatEngine, target: int, n: int) -> tuple[float, int]:
    """Decode tokens/s over ``n`` new tokens after a prompt of about ``target`` tokens: how fast a long
    conversation still answers. Returns (tokens/s, prompt tokens)."""
    ids = engine.context.encode([{"role": "user", "content": long_prompt(engine.tokenizer, target)}])
    ids = ids[:target]  # a coarse tokenizer (the tests' tiny one) overshoots; the speed is what counts here
    return _decode_ids(engine, ids, n, lookup=False), len(ids)


def _turn6(engine: ChatEngine) -> tuple[float, int, int]:
    """TTFT of the sixth user turn when the first five were answered in the same session."""
    engine.model.reset()
    history: list[dict[str, str]] = [{"role": "system", "content": "You are a helpful assistant."}]
    params = SamplingParams(temperature=0.0, repetition_penalty=1.0, max_tokens=48)
    for question in TURNS[:-1]:
        history.append({"role": "user", "content": question})
        answer = "".join(ev.text for ev in engine.chat(history, params) if isinstance(ev, TextPiece))
        history.append({"role": "assistant", "content": answer})
    history.append({"role": "user", "content": TURNS[-1]})
    for ev in engine.chat(history, SamplingParams(temperature=0.0, max_tokens=1)):
        if isinstance(ev, Finished):
            return ev.stats.ttft, ev.stats.prompt_tokens, ev.stats.reused_tokens
    return 0.0, 0, 0


def _ceiling(folder: Path, threads: int) -> tuple[float | None, float | None]:
    from qwen_desktop.engine.ceiling import decode_bytes, read_bandwidth

    try:
        read = read_bandwidth(threads) / 1e9
    except MemoryError:
        read = None
    try:
        weights: float | None = decode_bytes(folder) / 1e6
    except ImportError:  # no onnx package: the rest of the bench stands
        weights = None
    return read, weights or None


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def process_age() -> float | None:
    """Seconds since this process started (Linux: /proc/self/stat against /proc/uptime, 10 ms steps)."""
    try:
        stat = Path("/proc/self/stat").read_text()
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        start_ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22, after the command's "(...)"
        return max(0.0, uptime - start_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None


def _memory(engine: ChatEngine) -> MemoryUse | None:
    return memory_use(engine.model.graph_files)


def machine_info() -> dict[str, Any]:
    import onnxruntime

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "onnxruntime": onnxruntime.__version__,
        "platform": platform.platform(),
    }


def run_bench(
    folder: Path,
    threads: int = 0,
    runs: int = 3,
    decode_tokens: int = 128,
    say: Callable[[str], None] | None = None,
    cache_root: Path | None = None,
    low_memory: bool = False,
) -> BenchResult:
    """Measure load, warm-up, TTFT (short, long, turn 6), prefill speed, decode speed (after a short and
    after a long prompt), and peak RSS. ``cache_root``: the optimized-graph cache, as for ``ChatEngine``."""
    say = say or (lambda _m: None)
    started = time.perf_counter()
    engine = ChatEngine(
        folder, threads=threads, context_limit=4096, cache_root=cache_root, low_memory=low_memory
    )
    load_total = time.perf_counter() - started - engine.warmup_seconds
    ready = process_age()
    loaded = _memory(engine)
    at_long: MemoryUse | None = None
    at_chat: MemoryUse | None = None
    short = [{"role": "user", "content": SHORT_QUESTION}]
    long = [{"role": "user", "content": long_prompt(engine.tokenizer)}]
    short_ids = engine.context.encode(short)
    edit_ids = engine.context.encode([{"role": "user", "content": EDIT_PROMPT}])
    # A conversation of LONG_CONTEXT tokens, or as many as the context holds beside the reply.
    target = min(LONG_CONTEXT, engine.context_limit - decode_tokens - 64)
    # Round by round, each figure once a round, medians over the rounds: on a shared machine a slow spell
    # lasts a second or more, and then touches one run of several figures instead of every run of one
    # (docs/experiments.md, "Prompt timings have two modes").
    chat_peak = 0.0
    ttft_short: list[tuple[float, int, int]] = []
    ttft_typed: list[tuple[float, int]] = []
    ttft_long: list[tuple[float, int, int]] = []
    decode: list[float] = []
    sampled: list[float] = []
    edit_plain: list[float] = []
    edit_lookup: list[float] = []
    turn6: list[tuple[float, int, int]] = []
    after_long: list[tuple[float, int]] = []
    for r in range(runs):
        tag = f"round {r + 1} of {runs}: " if runs > 1 else ""
        say(tag + "time to first token, short prompt")
        ttft_short.append(_ttft(engine, short))
        say(tag + "time to first token, short prompt read ahead while typed")
        ttft_typed.append(_ttft_typed(engine, SHORT_QUESTION))
        say(tag + "time to first token, long prompt")
        ttft_long.append(_ttft(engine, long))
        if r == 0:
            at_long = _memory(engine)
        say(tag + f"decode speed over {decode_tokens} tokens")
        decode.append(_decode_ids(engine, short_ids, decode_tokens, lookup=False))
        if r == 0:
            chat_peak = _peak_rss_mb()
            at_chat = _memory(engine)
        say(tag + "decode with the app's sampling settings")
        sampled.append(
            _decode_ids(engine, short_ids, decode_tokens, lookup=True, params=SamplingParams(seed=r))
        )
        say(tag + "prompt lookup on a code edit")
        edit_plain.append(_decode_ids(engine, edit_ids, decode_tokens, lookup=False))
        edit_lookup.append(_decode_ids(engine, edit_ids, decode_tokens, lookup=True))
        say(tag + "multi-turn: turn 6")
        turn6.append(_turn6(engine))
        say(tag + f"decode speed after {target} tokens of conversation")
        after_long.append(_long_context_decode(engine, target, decode_tokens))
    end = _memory(engine)
    peak = _peak_rss_mb()
    say("the decode ceiling: memory read speed and bytes per token")
    read_gb_s, decode_mb = _ceiling(folder, engine.threads)
    long_s = statistics.median(t for t, _, _ in ttft_long)
    long_tokens = ttft_long[0][1]
    return BenchResult(
        model=str(folder),
        threads=engine.threads,
        runs=runs,
        load_s=load_total,
        warmup_s=engine.warmup_seconds,
        ttft_short_s=statistics.median(t for t, _, _ in ttft_short),
        short_prompt_tokens=ttft_short[0][1],
        ttft_typed_s=statistics.median(t for t, _ in ttft_typed),
        typed_reused_tokens=ttft_typed[0][1],
        ttft_long_s=long_s,
        long_prompt_tokens=long_tokens,
        prefill_tps=long_tokens / long_s if long_s else 0.0,
        decode_tps=statistics.median(decode),
        decode_tokens=decode_tokens,
        turn6_ttft_s=statistics.median(t for t, _, _ in turn6),
        turn6_prompt_tokens=turn6[0][1],
        turn6_reused_tokens=turn6[0][2],
        sampled_decode_tps=statistics.median(sampled),
        lookup_decode_tps=statistics.median(edit_lookup),
        plain_edit_decode_tps=statistics.median(edit_plain),
        long_context_decode_tps=statistics.median(t for t, _ in after_long),
        long_context_tokens=after_long[0][1],
        peak_rss_mb=peak,
        chat_peak_rss_mb=chat_peak,
        read_gb_s=read_gb_s,
        decode_mb=decode_mb,
        ready_s=ready,
        from_cache=bool(engine.model.from_cache),
        low_memory=low_memory,
        prefill_skipped=engine.model.prefill_skipped,
        memory_loaded=loaded.to_dict() if loaded else None,
        memory_long_prompt=at_long.to_dict() if at_long else None,
        memory_chat=at_chat.to_dict() if at_chat else None,
        memory_end=end.to_dict() if end else None,
        machine=machine_info(),
    )


def sweep_threads(
    folder: Path,
    counts: Sequence[int],
    tokens: int = 16,
    progress: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> dict[int, float]:
    """Decode tokens/s for each thread count (a short greedy run each). ``progress(done, total)``."""
    files = load_model_files(Path(folder))
    tokenizer = ChatTokenizer(files.tokenizer)
    prompt = tokenizer.encode("Count from one to twenty in words: one, two, three,")
    params = SamplingParams(temperature=0.0, top_k=0, top_p=1.0, repetition_penalty=1.0, max_tokens=tokens)
    result: dict[int, float] = {}
    for i, n in enumerate(counts):
        if cancel is not None and cancel.is_set():
            break
        model = OnnxModel(files, threads=n, max_len=256)
        best = 0.0
        for _ in range(2):  # the first run also warms up
            model.reset()
            for ev in stream_generate(model, tokenizer, prompt, params, stop_ids=(), prompt_lookup=False):
                if isinstance(ev, Finished):
                    best = max(best, ev.stats.decode_tps)
        result[n] = best
        del model
        if progress:
            progress(i + 1, len(counts))
    return result


def sweep_key(folder: Path | str) -> str:
    """A model folder's name for its thread measurements: its folder name, precision and source checksum, so
    a rebuilt or replaced model is measured anew. Never raises (a folder it cannot read is named by path)."""
    folder = Path(folder)
    try:
        files = load_model_files(folder)
    except ModelError:
        return str(folder)
    digest = source_checksum(files.manifest)  # "" for a manifest whose source list is malformed
    return f"{folder.name} · {files.precision} · {digest[:16]}"


def fastest(sweep: dict[int, float]) -> int:
    """The thread count with the best decode speed; ties go to fewer threads (they leave the UI a core)."""
    return min(sweep, key=lambda n: (-round(sweep[n], 1), n))


__all__ = ["GREEDY", "BenchResult", "fastest", "run_bench", "sweep_key", "sweep_threads"]
