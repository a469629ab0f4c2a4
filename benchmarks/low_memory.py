"""What "Use less memory" costs in speed: the default mode and ``low_memory=True`` loaded side by side in one
process, alternating round by round (the order flips every round), medians over the rounds and the median of
the paired ratios.

    python3 benchmarks/low_memory.py MODEL_DIR [--rounds 15] [--threads 2]

Each round measures the short prompt's TTFT and 64 greedy decode tokens after it in both modes; every third
round also the long prompt's TTFT. Memory is not measured here (two models share one process): use
``qwen-desktop bench --runs 1`` with and without ``--low-memory``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from qwen_desktop.engine.bench import SHORT_QUESTION, _decode_ids, _ttft, long_prompt, machine_info
from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.storage.paths import ort_cache_dir


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    engines = {
        mode: ChatEngine(
            args.model, threads=args.threads, context_limit=4096, cache_root=ort_cache_dir(), low_memory=lean
        )
        for mode, lean in (("default", False), ("low_memory", True))
    }
    tokenizer = engines["default"].tokenizer
    short = [{"role": "user", "content": SHORT_QUESTION}]
    long = [{"role": "user", "content": long_prompt(tokenizer)}]
    short_ids = engines["default"].context.encode(short)
    got: dict[str, dict[str, list[float]]] = {
        k: {m: [] for m in engines} for k in ("ttft_short_s", "ttft_long_s", "decode_tps")
    }
    for r in range(args.rounds):
        order = list(engines) if r % 2 == 0 else list(engines)[::-1]
        for mode in order:
            e = engines[mode]
            got["ttft_short_s"][mode].append(_ttft(e, short)[0])
            got["decode_tps"][mode].append(_decode_ids(e, short_ids, 64, lookup=False))
            if r % 3 == 0:
                got["ttft_long_s"][mode].append(_ttft(e, long)[0])
    out: dict[str, object] = {"machine": machine_info(), "rounds": args.rounds}
    for key, runs in got.items():
        pairs = [b / a for a, b in zip(runs["default"], runs["low_memory"], strict=True)]
        out[key] = {
            "default": statistics.median(runs["default"]),
            "low_memory": statistics.median(runs["low_memory"]),
            "paired_ratio": statistics.median(pairs),
            "n": len(pairs),
        }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
