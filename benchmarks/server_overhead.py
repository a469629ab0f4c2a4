"""What the HTTP API costs: TTFT and decode tok/s through the server (openai client, streamed) against the
same host called in-process, alternating in one run, medians over the rounds.

    python3 benchmarks/server_overhead.py MODEL_DIR [--rounds 7] [--tokens 64] [--threads 2]

Both paths answer the same greedy request from an empty KV cache (a fixed seed turns cache reuse off),
so the difference is the server: request parsing, the thread hop into the event loop, SSE framing, the
local socket and the client's parsing. TTFT is from sending the request to the first text; decode tok/s
counts the tokens after the first over the time after it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace
from pathlib import Path

from qwen_desktop.engine.bench import SHORT_QUESTION, machine_info
from qwen_desktop.engine.chat import ChatEngine
from qwen_desktop.engine.generate import GREEDY
from qwen_desktop.engine.host import API, EngineHost, Finished, Piece
from qwen_desktop.server import LocalServer

MESSAGES = [{"role": "user", "content": SHORT_QUESTION}]


def in_process(host: EngineHost, tokens: int) -> tuple[float, float]:
    params = replace(GREEDY, max_tokens=tokens, seed=1)
    began = time.perf_counter()
    job = host.submit_answer(MESSAGES, params, client=API, strict=True, reuse_cache=False)
    first = None
    for event in job:
        if isinstance(event, Piece) and first is None:
            first = time.perf_counter()
        if isinstance(event, Finished):
            end = time.perf_counter()
            assert first is not None and event.stats is not None
            return first - began, (event.stats.generated_tokens - 1) / (end - first)
    raise RuntimeError("the answer failed")


def over_http(client: object, model: str, tokens: int) -> tuple[float, float]:
    began = time.perf_counter()
    stream = client.chat.completions.create(  # type: ignore[attr-defined]
        model=model,
        messages=MESSAGES,
        temperature=0,
        seed=1,
        max_tokens=tokens,
        stream=True,
        stream_options={"include_usage": True},
    )
    first = None
    generated = 0
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content and first is None:
            first = time.perf_counter()
        if chunk.usage is not None:
            generated = chunk.usage.completion_tokens
    end = time.perf_counter()
    assert first is not None
    return first - began, (generated - 1) / (end - first)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()

    import openai

    host = EngineHost(engine=ChatEngine(args.model, threads=args.threads, context_limit=4096))
    server = LocalServer(host, port=0)
    server.start()
    model = host.model.id if host.model else ""
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    try:
        in_process(host, args.tokens)  # warm both paths once
        over_http(client, model, args.tokens)
        rows: dict[str, list[tuple[float, float]]] = {"in-process": [], "http": []}
        for _ in range(args.rounds):
            rows["in-process"].append(in_process(host, args.tokens))
            rows["http"].append(over_http(client, model, args.tokens))
    finally:
        client.close()
        server.stop()
        host.close()
    ttft = {k: statistics.median(r[0] for r in v) * 1000 for k, v in rows.items()}
    tps = {k: statistics.median(r[1] for r in v) for k, v in rows.items()}
    result = {
        "machine": machine_info(),
        "threads": args.threads,
        "rounds": args.rounds,
        "ttft_ms": ttft,
        "decode_tps": tps,
        "ttft_overhead_ms": ttft["http"] - ttft["in-process"],
        "decode_overhead_pct": 100 * (1 - tps["http"] / tps["in-process"]),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
