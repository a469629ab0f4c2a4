"""``qwen-desktop serve``: the local OpenAI-compatible API on the command line (see docs/server.md)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from typing import Any

from qwen_desktop import cli_args as ranges


def cmd_serve(args: argparse.Namespace) -> int:
    from qwen_desktop.cli_chat import _resolve_model
    from qwen_desktop.engine.host import EngineHost, Finished
    from qwen_desktop.server import LocalServer, ServerConfig, is_loopback
    from qwen_desktop.storage.paths import ort_cache_dir

    if not is_loopback(args.host) and not args.allow_remote:
        print(
            f"qwen-desktop: error: {args.host} lets other machines use the model; "
            "pass --allow-remote to mean it (and consider --api-key)",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    folder = _resolve_model(args.model)
    host = EngineHost(max_queue=args.max_queue, cache_root=ort_cache_dir())
    print(f"loading {folder} …", file=sys.stderr, flush=True)
    loaded = host.submit_load(
        folder, threads=args.threads, context_limit=args.context, low_memory=args.low_memory
    ).wait()
    if not isinstance(loaded, Finished):
        host.close()
        message = getattr(loaded, "message", "the model did not load")
        print(f"qwen-desktop: error: {message}", file=sys.stderr)
        return 1
    config = ServerConfig(api_key=args.api_key or None, cors_origins=tuple(args.cors_origin or ()))
    server = LocalServer(host, args.host, args.port, config)
    try:
        url = server.start()
    except OSError as exc:
        host.close()
        print(
            f"qwen-desktop: error: cannot listen on {args.host}:{args.port} ({exc.strerror or exc})",
            file=sys.stderr,
        )
        return 1
    info = host.model
    assert info is not None
    if not is_loopback(args.host):
        print(
            f"warning: listening on {args.host}: other machines on the network can use this model",
            file=sys.stderr,
        )
    print(
        f"serving {info.id} on {url}  (OpenAI base URL {url}/v1, chat page {url}/; Ctrl-C stops)", flush=True
    )
    stopped = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stopped.set())
    try:
        while not stopped.wait(0.5) and server.running:
            pass
    finally:
        server.stop()
        host.close()
    print("stopped", file=sys.stderr)
    return 0


def add_parser(sub: Any) -> None:
    """Register ``serve`` on the main parser's subparsers."""
    p = sub.add_parser(
        "serve", help="serve the model over a local OpenAI-compatible HTTP API (with a chat page)"
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=ranges.int_in(0, 65535), default=8765, help="port (0 = any free port)")
    p.add_argument("--model", help="model folder (default: the app's current model)")
    p.add_argument("--threads", type=ranges.threads, default=0, help="CPU threads (0 = all cores)")
    p.add_argument(
        "--low-memory",
        action="store_true",
        help="use less memory: leave the prefill graph unloaded (one weight set, ~390 MB less for 0.5B; prompts 1.6-2.4x as long)",
    )
    p.add_argument(
        "--context", type=ranges.context, default=4096, help="context limit in tokens (prompt + reply)"
    )
    p.add_argument("--api-key", default=None, help="require 'Authorization: Bearer KEY' on /v1/ requests")
    p.add_argument("--allow-remote", action="store_true", help="allow a --host other machines can reach")
    p.add_argument(
        "--cors-origin",
        action="append",
        help="a web origin allowed to call the API from a browser (repeatable)",
    )
    p.add_argument(
        "--max-queue", type=ranges.int_in(1, 1024), default=16, help="requests that may wait (then 503)"
    )
    p.set_defaults(func=cmd_serve)
