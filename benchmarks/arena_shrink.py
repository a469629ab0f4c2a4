"""What giving ONNX Runtime's arena back after a long run costs in speed: one model, the shrink on
(``session.SHRINK_MIN_TOKENS`` as shipped) and off (never shrinking) in alternate rounds of one process, the
order flipping every round; medians over the rounds and the median of the paired ratios.

    python3 benchmarks/arena_shrink.py MODEL_DIR [--rounds 10] [--threads 2]

Each round runs the long bench prompt from an empty cache (a run the shrink applies to, so the next long
prompt has to grow the arena again) and 32 greedy decode steps after it. Memory is not measured here: use
``qwen-desktop bench`` (its memory rows).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import numpy as np

from qwen_desktop.engine import session
from qwen_desktop.engine.bench import long_prompt, machine_info
from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.storage.paths import ort_cache_dir

NEVER = 10**9  # no run is that long: the shrink never applies


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    shipped = session.SHRINK_MIN_TOKENS
    engine = ChatEngine(args.model, threads=args.threads, context_limit=4096, cache_root=ort_cache_dir())
    ids = engine.context.encode([{"role": "user", "content": long_prompt(engine.tokenizer)}])
    prompt: dict[str, list[float]] = {"on": [], "off": []}
    decode: dict[str, list[float]] = {"on": [], "off": []}
    for r in range(args.rounds):
        for mode in ("on", "off") if r % 2 == 0 else ("off", "on"):
            session.SHRINK_MIN_TOKENS = shipped if mode == "on" else NEVER
            engine.model.reset()
            started = time.perf_counter()
            token = int(np.argmax(engine.model.forward(ids)[-1]))
            prompt[mode].append(time.perf_counter() - started)
            started = time.perf_counter()
            for _ in range(32):
                token = int(np.argmax(engine.model.forward([token])[-1]))
            decode[mode].append(32 / (time.perf_counter() - started))
    session.SHRINK_MIN_TOKENS = shipped
    out = {
        "machine": machine_info(),
        "rounds": args.rounds,
        "prompt_tokens": len(ids),
        "prompt_s": {m: statistics.median(v) for m, v in prompt.items()},
        "prompt_on_over_off": statistics.median(
            a / b for a, b in zip(prompt["on"], prompt["off"], strict=True)
        ),
        "decode_tps": {m: statistics.median(v) for m, v in decode.items()},
        "decode_on_over_off": statistics.median(
            a / b for a, b in zip(decode["on"], decode["off"], strict=True)
        ),
    }
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
