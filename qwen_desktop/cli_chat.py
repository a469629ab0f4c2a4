"""``qwen-desktop chat`` and ``qwen-desktop bench``: the headless front ends of the engine."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from qwen_desktop import cli_args as ranges
from qwen_desktop.engine.errors import ModelError


def _resolve_model(arg: str | None) -> Path:
    """--model, else the model chosen in the app's settings, else the installed default."""
    if arg:
        return Path(arg).expanduser()
    from qwen_desktop.storage.settings import load_settings

    settings, _warning = load_settings()
    if settings.model_path:
        return Path(settings.model_path)
    try:
        from qwen_desktop.library import registry

        default = registry.get_default(registry.default_models_dir(settings.models_dir))
        if default is not None:
            return Path(default.folder)
    except (ImportError, AttributeError, ModelError):
        pass
    raise ModelError("no model chosen: pass --model DIR (build one with `qwen-desktop build-model`)")


@contextlib.contextmanager
def _ctrl_c_cancels(cancel: threading.Event) -> Iterator[None]:
    """While an answer streams, Ctrl-C sets ``cancel`` instead of ending the program."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, lambda *_: cancel.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _params(args: argparse.Namespace) -> Any:
    from qwen_desktop.engine.generate import SamplingParams

    return SamplingParams.from_settings(args)


def _answer(engine: Any, messages: list[dict[str, str]], params: Any, stats: bool) -> tuple[str, Any]:
    from qwen_desktop.engine.generate import Finished

    cancel = threading.Event()
    parts: list[str] = []
    finished = None
    plan = engine.plan(messages, params.max_tokens)
    if plan.notice():
        print(f"[{plan.notice()}]", file=sys.stderr)
    with _ctrl_c_cancels(cancel):
        for ev in engine.chat(messages, params, cancel):
            if isinstance(ev, Finished):
                finished = ev
            else:
                parts.append(ev.text)
                sys.stdout.write(ev.text)
                sys.stdout.flush()
    sys.stdout.write("\n")
    assert finished is not None
    if finished.reason == "cancelled":
        print("[stopped]", file=sys.stderr)
    elif finished.reason == "error":
        print(f"[error: {finished.error}]", file=sys.stderr)
    elif finished.reason == "length":
        print("[reply length limit reached]", file=sys.stderr)
    if stats:
        s = finished.stats
        print(
            f"[{s.generated_tokens} tokens, first after {s.ttft * 1000:.0f} ms "
            f"({s.prompt_tokens} prompt tokens, {s.reused_tokens} reused), {s.decode_tps:.1f} tokens/s]",
            file=sys.stderr,
        )
    return "".join(parts), finished


def cmd_chat(args: argparse.Namespace) -> int:
    from qwen_desktop.engine.chat import ChatEngine
    from qwen_desktop.storage.paths import ort_cache_dir

    folder = _resolve_model(args.model)
    one_shot = args.prompt is not None
    say = None if one_shot else (lambda phase: print(phase.text, file=sys.stderr))
    engine = ChatEngine(
        folder,
        threads=args.threads,
        context_limit=args.context,
        progress=say,
        cache_root=ort_cache_dir(),
        low_memory=args.low_memory,
    )
    params = _params(args)
    system = {"role": "system", "content": args.system}
    if one_shot:
        _text, finished = _answer(
            engine, [system, {"role": "user", "content": args.prompt}], params, stats=args.stats
        )
        return 1 if finished.reason == "error" else 0
    print(
        f"{engine.files.display_name}: ready (load {engine.load_seconds:.1f} s, warm-up "
        f"{engine.warmup_seconds:.1f} s, {engine.threads} thread{'' if engine.threads == 1 else 's'}). "
        "Ctrl-C stops an answer; /reset, /system TEXT, /quit.",
        file=sys.stderr,
    )
    history: list[dict[str, str]] = [system]
    while True:
        try:
            line = input("> ")
        except (EOFError, KeyboardInterrupt):
            print(file=sys.stderr)
            return 0
        if not line.strip():
            continue
        if line.strip() in ("/quit", "/exit"):
            return 0
        if line.strip() == "/reset":
            history = [history[0]]
            print("[conversation cleared]", file=sys.stderr)
            continue
        if line.startswith("/system"):
            history = [{"role": "system", "content": line[len("/system") :].strip()}]
            print("[system prompt set; conversation cleared]", file=sys.stderr)
            continue
        history.append({"role": "user", "content": line})
        text, _finished = _answer(engine, history, params, stats=True)
        history.append({"role": "assistant", "content": text})


def cmd_bench(args: argparse.Namespace) -> int:
    from qwen_desktop.engine.bench import fastest, run_bench, sweep_threads
    from qwen_desktop.storage.paths import ort_cache_dir

    folder = _resolve_model(args.model)
    say = (lambda m: print(f"... {m}", file=sys.stderr)) if not args.json else None
    if args.sweep_threads:
        import os

        counts = list(range(1, (os.cpu_count() or 1) + 1))
        sweep = sweep_threads(folder, counts, tokens=32)
        best = fastest(sweep)
        if args.json:
            print(json.dumps({"decode_tps_by_threads": sweep, "fastest": best}))
        else:
            for n, tps in sweep.items():
                print(
                    f"{n} thread{'s' if n > 1 else ' '}: {tps:6.1f} tokens/s{'   <- fastest' if n == best else ''}"
                )
        return 0
    r = run_bench(
        folder,
        threads=args.threads,
        runs=args.runs,
        decode_tokens=args.decode_tokens,
        say=say,
        cache_root=ort_cache_dir(),
        low_memory=args.low_memory,
    )
    if args.json:
        print(json.dumps(r.to_dict(), indent=2))
        return 0
    rows = [
        ("model", r.model),
        ("threads", str(r.threads)),
        ("load", f"{r.load_s:.2f} s" + ("" if r.from_cache else " (optimized the graphs: a first load)")),
        ("warm-up", f"{r.warmup_s:.2f} s"),
        *(
            [("launch to ready (imports, load, warm-up)", f"{r.ready_s:.2f} s")]
            if r.ready_s is not None
            else []
        ),
        ("use less memory", "on: prompts on the decode graph" if r.low_memory else "off"),
        *([("prefill graph", f"closed: {r.prefill_skipped}")] if r.prefill_skipped else []),
        (f"TTFT short ({r.short_prompt_tokens} tokens)", f"{r.ttft_short_s * 1000:.0f} ms"),
        (
            f"TTFT short, read ahead while typed ({r.typed_reused_tokens} reused)",
            f"{r.ttft_typed_s * 1000:.0f} ms",
        ),
        (f"TTFT long ({r.long_prompt_tokens} tokens)", f"{r.ttft_long_s * 1000:.0f} ms"),
        ("prefill", f"{r.prefill_tps:.0f} tokens/s"),
        (f"decode ({r.decode_tokens} tokens)", f"{r.decode_tps:.1f} tokens/s"),
        ("decode, the app's sampling settings", f"{r.sampled_decode_tps:.1f} tokens/s"),
        (
            f"turn 6 TTFT ({r.turn6_prompt_tokens} tokens, {r.turn6_reused_tokens} reused)",
            f"{r.turn6_ttft_s * 1000:.0f} ms",
        ),
        ("code edit, plain decode", f"{r.plain_edit_decode_tps:.1f} tokens/s"),
        ("code edit, prompt lookup", f"{r.lookup_decode_tps:.1f} tokens/s"),
        (f"decode after {r.long_context_tokens} tokens", f"{r.long_context_decode_tps:.1f} tokens/s"),
        *(
            [
                (
                    "decode ceiling (memory read / bytes a token)",
                    f"{r.ceiling_tps:.1f} tokens/s ({r.read_gb_s:.1f} GB/s / {r.decode_mb:.0f} MB): "
                    f"decode is {100 * r.decode_tps / r.ceiling_tps:.0f} % of it",
                )
            ]
            if r.ceiling_tps and r.read_gb_s and r.decode_mb
            else []
        ),
        ("peak RSS, a chat (load, prompts, a reply)", f"{r.chat_peak_rss_mb:.0f} MB"),
        ("peak RSS", f"{r.peak_rss_mb:.0f} MB"),
    ]
    for label, mem in (
        ("loaded", r.memory_loaded),
        ("at the end of the long prompt", r.memory_long_prompt),
        ("after a chat (load, prompts, a reply)", r.memory_chat),
        (f"after {r.long_context_tokens} tokens", r.memory_end),
    ):
        if mem is None:
            continue
        graphs = ", ".join(f"{role} {mb:.0f}" for role, mb in mem["graphs_mb"].items())
        rows.append(
            (
                f"memory {label}",
                f"{mem['rss_mb']:.0f} MB resident: {mem['anon_mb']:.0f} anonymous, {mem['file_mb']:.0f} "
                f"file-backed" + (f" (graph files: {graphs} MB)" if graphs else ""),
            )
        )
    width = max(len(k) for k, _ in rows)
    print(f"median of {r.runs} runs, {r.machine.get('cpu')}, onnxruntime {r.machine.get('onnxruntime')}")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")
    return 0


def add_parsers(sub: Any) -> None:
    """Register ``chat`` and ``bench`` on the main parser's subparsers."""
    p = sub.add_parser("chat", help="chat in the terminal (or answer one --prompt and exit)")
    p.add_argument("--model", help="model folder (default: the app's current model)")
    p.add_argument("--prompt", help="answer this one message, print only the answer, and exit")
    p.add_argument("--system", default="You are a helpful assistant.", help="system prompt")
    p.add_argument("--threads", type=ranges.threads, default=0, help="CPU threads (0 = all cores)")
    p.add_argument(
        "--context", type=ranges.context, default=4096, help="context limit in tokens (prompt + reply)"
    )
    p.add_argument("--max-tokens", type=ranges.tokens, default=1024, help="longest reply in tokens")
    p.add_argument("--temperature", type=ranges.temperature, default=0.7, help="0 = greedy")
    p.add_argument("--top-p", type=ranges.top_p, default=0.8, help="more than 0, at most 1")
    p.add_argument("--top-k", type=ranges.top_k, default=20, help="0 = off")
    p.add_argument("--min-p", type=ranges.min_p, default=0.0, help="0..1")
    p.add_argument(
        "--repetition-penalty", type=ranges.repetition_penalty, default=1.05, help="more than 0; 1 = off"
    )
    p.add_argument("--seed", type=ranges.seed, default=None, help="makes sampling repeatable (0 or more)")
    p.add_argument("--stats", action="store_true", help="with --prompt: print speed figures to stderr")
    p.add_argument(
        "--low-memory",
        action="store_true",
        help="use less memory: leave the prefill graph unloaded (one weight set, ~390 MB less for 0.5B; prompts 1.6-2.4x as long)",
    )
    p.set_defaults(func=cmd_chat)

    p = sub.add_parser("bench", help="measure load, time to first token, prefill and decode speed")
    p.add_argument("--model", help="model folder (default: the app's current model)")
    p.add_argument("--threads", type=ranges.threads, default=0, help="CPU threads (0 = all cores)")
    p.add_argument("--runs", type=ranges.int_in(1, 1000), default=3, help="repetitions; medians are reported")
    p.add_argument("--decode-tokens", type=ranges.tokens, default=128)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument(
        "--low-memory",
        action="store_true",
        help="use less memory: leave the prefill graph unloaded (one weight set, ~390 MB less for 0.5B; prompts 1.6-2.4x as long)",
    )
    p.add_argument("--sweep-threads", action="store_true", help="try each thread count and name the fastest")
    p.set_defaults(func=cmd_bench)
