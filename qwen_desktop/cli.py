"""The ``qwen-desktop`` command: the app with no arguments, headless tools as subcommands."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from qwen_desktop import __version__


class ProgressBar:
    """A one-line progress bar on a terminal; plain stage lines when output is not a terminal."""

    def __init__(self, stream: TextIO | None = None, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self._last_stage = ""
        self._last_draw = 0.0

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.tty:
            now = time.monotonic()
            if now - self._last_draw < 0.05 and done < total:
                return
            self._last_draw = now
            filled = int(self.width * done / total) if total else 0
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r[{bar}] {stage:<24.24}")
            self.stream.flush()
        else:
            head = stage.split(" ", maxsplit=1)[0]
            if head != self._last_stage:
                self._last_stage = head
                self.stream.write(f"{stage}...\n")
                self.stream.flush()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def cmd_build_model(args: argparse.Namespace) -> int:
    from qwen_desktop.models.builder import build_model

    bar = ProgressBar()
    try:
        result = build_model(
            Path(args.src),
            Path(args.out),
            precision=args.precision,
            head_precision=args.head_precision,
            style=args.style,
            progress=bar,
        )
    finally:
        bar.close()
    print(
        f"Built {result.folder} in {result.seconds:.1f} s: {_human_bytes(result.bytes_on_disk)} on disk, "
        f"{result.precision} layers, {result.head_precision} embedding/head, {result.style} graph"
    )
    return 0


def cmd_make_tiny_model(args: argparse.Namespace) -> int:
    from qwen_desktop.models.tiny import make_tiny_source

    out = make_tiny_source(Path(args.out), fmt=args.format, seed=args.seed)
    print(out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="qwen-desktop",
        description="Offline chat with a local Qwen2.5 model. With no command, opens the app.",
    )
    parser.add_argument("--version", action="version", version=f"qwen-desktop {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("build-model", help="turn a GGUF file or Hugging Face folder into a model folder")
    p.add_argument("src", help="a .gguf file or a Hugging Face model folder (config.json, *.safetensors)")
    p.add_argument("out", help="the model folder to create (must not exist)")
    p.add_argument("--precision", default="int4", choices=["int4", "int8", "fp32"], help="decoder layers")
    p.add_argument(
        "--head-precision",
        default=None,
        choices=["int4", "int8", "fp32"],
        help="embedding and output head (default: int8, or fp32 for fp32 builds)",
    )
    p.add_argument("--style", default="fast", choices=["fast", "plain"], help="graph style (default fast)")
    p.set_defaults(func=cmd_build_model)

    p = sub.add_parser("make-tiny-model", help="write a tiny random Qwen2 model (for tests and smoke tests)")
    p.add_argument("out", help="a .gguf path, or a folder for --format hf")
    p.add_argument("--format", default="gguf", choices=["gguf", "hf"])
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_make_tiny_model)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``qwen-desktop`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        from qwen_desktop.ui.app import run_app

        return run_app()
    from qwen_desktop.models.errors import ModelError

    try:
        return int(args.func(args))
    except ModelError as exc:
        print(f"qwen-desktop: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("qwen-desktop: interrupted", file=sys.stderr)
        return 130
