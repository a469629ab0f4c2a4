"""A long chat stays flat (issue 24 item 6): 200 turns in one session, as the window runs them.

Each turn appends a short user message to the whole history and answers it greedily with at most
``--reply`` tokens through ``ChatEngine.chat`` (the same call the engine host makes for the window), so the
history grows until the context limit trims its oldest turns. Reported at turns 10, 100 and 200 (and every
``--every`` turns): the process's resident memory (RSS, anonymous, file-backed: engine.memory), the turn's
time to first token, the prompt tokens and how many came from the KV cache.

    python3 benchmarks/long_chat.py MODEL_DIR [--turns 200] [--reply 48] [--threads 2] [--context 4096]

What "flat" means: after the context is full, RSS stops growing (the KV cache is allocated for the context
limit once) and TTFT stays bounded (the cache is reused; only the new turn is prefilled, unless trimming moved
the start of the history, which makes one full prefill).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from qwen_desktop.engine.bench import machine_info
from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.generate import Finished, SamplingParams, TextPiece
from qwen_desktop.engine.memory import memory_use
from qwen_desktop.storage.paths import ort_cache_dir

QUESTIONS = (
    "What is a linked list, in one sentence?",
    "Write a Python one-liner that reverses a string.",
    "Name three rivers in Europe.",
    "用一句话解释什么是递归。",
    "How do I read a file line by line in Python?",
    "What does HTTP status 404 mean?",
    "Give me a synonym for 'quick'.",
    "Translate 'good morning' into French.",
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--turns", type=int, default=200)
    ap.add_argument("--reply", type=int, default=48, help="most tokens per answer")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--context", type=int, default=4096, help="context limit (the app's default)")
    ap.add_argument("--every", type=int, default=25, help="also report every N turns")
    args = ap.parse_args()
    engine = ChatEngine(
        args.model, threads=args.threads, context_limit=args.context, cache_root=ort_cache_dir()
    )
    params = SamplingParams(temperature=0.0, max_tokens=args.reply, repetition_penalty=1.0)
    history: list[dict[str, str]] = [{"role": "system", "content": "You are a helpful assistant."}]
    rows = []
    ttfts: list[float] = []
    started = time.perf_counter()
    for turn in range(1, args.turns + 1):
        history.append({"role": "user", "content": QUESTIONS[turn % len(QUESTIONS)]})
        text, stats = [], None
        for ev in engine.chat(history, params):
            if isinstance(ev, TextPiece):
                text.append(ev.text)
            elif isinstance(ev, Finished):
                stats = ev.stats
        history.append({"role": "assistant", "content": "".join(text)})
        assert stats is not None
        ttfts.append(stats.ttft)
        if turn in (1, 10, 100, 200) or turn % args.every == 0 or turn == args.turns:
            mem = memory_use()
            row = {
                "turn": turn,
                "rss_mb": round(mem.rss_mb, 1) if mem else None,
                "anonymous_mb": round(mem.anon_mb, 1) if mem else None,
                "file_mb": round(mem.file_mb, 1) if mem else None,
                "ttft_s": round(stats.ttft, 4),
                "ttft_median_last_10_s": round(statistics.median(ttfts[-10:]), 4),
                "prompt_tokens": stats.prompt_tokens,
                "reused_tokens": stats.reused_tokens,
                "decode_tps": round(stats.decode_tps, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(
        json.dumps(
            {
                "machine": machine_info(),
                "model": str(args.model),
                "turns": args.turns,
                "reply_tokens": args.reply,
                "context_limit": args.context,
                "threads": args.threads,
                "seconds": round(time.perf_counter() - started, 1),
                "rss_growth_10_to_end_mb": round(
                    rows[-1]["rss_mb"] - next(r for r in rows if r["turn"] >= 10)["rss_mb"], 1
                )
                if rows[-1]["rss_mb"] is not None
                else None,
            }
        )
    )


if __name__ == "__main__":
    main()
