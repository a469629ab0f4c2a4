"""The ``qwen-desktop`` command: the app with no arguments, headless tools as subcommands."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from qwen_desktop import __version__, cli_args
from qwen_desktop.library.catalog import CATALOG_ENV
from qwen_desktop.units import human_bytes, human_seconds

if TYPE_CHECKING:
    from qwen_desktop.library.catalog import CatalogEntry
    from qwen_desktop.library.download import DownloadProgress


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


class DownloadBar:
    """A download progress line: bar, bytes, speed and time left; on a non-terminal, a line every 10%."""

    def __init__(self, label: str, stream: TextIO | None = None, width: int = 30) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.width = width
        self.tty = self.stream.isatty()
        self._last_draw = 0.0
        self._last_tenth = -1

    def __call__(self, p: DownloadProgress) -> None:
        if self.tty:
            now = time.monotonic()
            if now - self._last_draw < 0.1 and p.done < p.total:
                return
            self._last_draw = now
            filled = int(self.width * p.done / p.total) if p.total else self.width
            bar = "#" * filled + "." * (self.width - filled)
            self.stream.write(f"\r[{bar}] {self._numbers(p)}\033[K")
            self.stream.flush()
            return
        tenth = 10 * p.done // p.total if p.total else 10
        if tenth != self._last_tenth:
            self._last_tenth = tenth
            self.stream.write(f"{self.label}: {self._numbers(p)}\n")
            self.stream.flush()

    @staticmethod
    def _numbers(p: DownloadProgress) -> str:
        text = f"{human_bytes(p.done)} / {human_bytes(p.total)}"
        if p.speed > 0:
            text += f"  {human_bytes(p.speed)}/s"
        if p.eta is not None and p.done < p.total:
            text += f"  {human_seconds(p.eta)} left"
        return text

    def close(self) -> None:
        if self.tty and self._last_draw:
            self._last_draw = 0.0
            self.stream.write("\n")
            self.stream.flush()


def cmd_build_model(args: argparse.Namespace) -> int:
    from qwen_desktop.convert.builder import build_model

    bar = ProgressBar()
    try:
        result = build_model(
            Path(args.src),
            Path(args.out),
            precision=args.precision,
            head_precision=args.head_precision,
            style=args.style,
            progress=bar,
            prefill=args.prefill,
            fit=args.fit,
            quality=args.quality,
        )
    finally:
        bar.close()
    prefill = f", {result.prefill_precision} prefill graph" if result.prefill_precision else ""
    fitted = ", fitted to calibration text" if result.fit == "gptq" else ""
    print(
        f"Built {result.folder} in {result.seconds:.1f} s: {human_bytes(result.bytes_on_disk)} on disk, "
        f"{result.precision} layers{fitted}, {result.head_precision} embedding/head, {result.style} graph{prefill}"
    )
    if args.timings:
        width = max(len(name) for name, _ in result.phases)
        for name, seconds in result.phases:
            share = 100 * seconds / result.seconds if result.seconds else 0.0
            print(f"  {name:<{width}}  {seconds:7.1f} s  {share:4.0f} %")
    return 0


def cmd_make_tiny_model(args: argparse.Namespace) -> int:
    from qwen_desktop.convert.tiny import make_tiny_source

    out = make_tiny_source(Path(args.out), fmt=args.format, seed=args.seed)
    print(out)
    return 0


def _models_dir(args: argparse.Namespace) -> Path:
    """``--dir``, else the folder chosen in the settings, else the default under the user data folder."""
    from qwen_desktop.library.registry import default_models_dir
    from qwen_desktop.storage.settings import load_settings

    if args.dir:
        return Path(args.dir).expanduser()
    return default_models_dir(load_settings()[0].models_dir)


def _catalog(args: argparse.Namespace) -> list[CatalogEntry]:
    from qwen_desktop.library.catalog import load_app_catalog

    return load_app_catalog(args.catalog)


def cmd_models(args: argparse.Namespace) -> int:
    from qwen_desktop.library.registry import Registry

    folder = _models_dir(args)
    registry = Registry(folder)
    if args.delete:
        registry.delete_model(args.delete)
        print(f"Deleted {args.delete}")
    if args.set_default:
        registry.set_default(args.set_default)
        print(f"{args.set_default} is now the default model")
    models = registry.list_models()
    print(f"Models in {folder}")
    if models:
        rows = [("", "NAME", "PRECISION", "SIZE", "CHECKSUM", "SOURCE")]
        rows += [
            (
                "*" if m.is_default else "",
                m.name,
                m.precision,
                human_bytes(m.bytes_on_disk),
                m.checksum[:12],
                f"BROKEN: {m.problem} (qwen-desktop models --delete {m.name})" if m.broken else m.source_text,
            )
            for m in models
        ]
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])
        print("* = default (opened at start)")
    else:
        print("No models installed yet.")
    installed = {m.name for m in models}
    available = [e for e in _catalog(args) if e.name not in installed]
    if available:
        print("\nAvailable to download (qwen-desktop download NAME):")
        for e in available:
            size = f"~{human_bytes(e.approx_bytes)}" if e.approx_bytes else ""
            print(f"  {e.name:<30} {size:>10}  {e.display_name}, {e.license}")
    return 0


def cmd_download(args: argparse.Namespace) -> int:
    import signal
    import threading

    from qwen_desktop.library.download import DownloadCancelledError
    from qwen_desktop.library.registry import DOWNLOADS, Registry

    folder = _models_dir(args)
    registry = Registry(folder)
    cancel = threading.Event()
    bar = DownloadBar(args.name)
    build_bar: ProgressBar | None = None

    def on_build(stage: str, done: int, total: int) -> None:
        nonlocal build_bar
        if build_bar is None:
            bar.close()
            print("Building the model folder", file=sys.stderr)
            build_bar = ProgressBar()
        build_bar(stage, done, total)

    def on_interrupt(signum: int, frame: object) -> None:
        cancel.set()  # the download stops at the next chunk and keeps its .part file
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C stops at once

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        model = registry.install_from_download(
            args.name,
            catalog=_catalog(args),
            precision=args.precision,
            on_download=bar,
            on_build=on_build,
            cancel=cancel,
        )
    except DownloadCancelledError as exc:
        bar.close()
        print(f"qwen-desktop: {exc}. Run the same command again to resume.", file=sys.stderr)
        print(f"(partial files are in {folder / DOWNLOADS})", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGINT, previous)
        bar.close()
        if build_bar is not None:
            build_bar.close()
    print(
        f"Installed {model.name} ({model.precision}, {human_bytes(model.bytes_on_disk)}) in {model.folder}"
        + (" - the default model" if model.is_default else "")
    )
    print(f"Source: {model.source_text}, sha256 {model.checksum}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from qwen_desktop.library.registry import Registry

    bar = ProgressBar()
    try:
        model = Registry(_models_dir(args)).import_model(
            Path(args.path), name=args.name, precision=args.precision, on_build=bar
        )
    finally:
        bar.close()
    print(f"Installed {model.name} ({model.precision}, {human_bytes(model.bytes_on_disk)}) in {model.folder}")
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
    p.add_argument(
        "--precision", default="int4", choices=["int4", "int8", "w8a8", "fp32"], help="decoder layers"
    )
    p.add_argument(
        "--head-precision",
        default=None,
        choices=["int4", "int8", "fp32"],
        help="embedding and output head (default: same as --precision)",
    )
    p.add_argument("--style", default="fast", choices=["fast", "plain"], help="graph style (default fast)")
    p.add_argument(
        "--prefill",
        default="w8a8",
        choices=["w8a8", "none"],
        help="also write an int8 prompt graph (fast style; default w8a8: 2x faster prompts, +0.5 GB memory)",
    )
    p.add_argument(
        "--fit",
        default="gptq",
        choices=["gptq", "plain"],
        help="4-bit weights: fitted to a calibration text (default gptq: fewer bytes per token, a few "
        "minutes more to build) or rounded block by block (plain)",
    )
    p.add_argument(
        "--quality",
        default="default",
        choices=["default", "best"],
        help="with --fit gptq: best also fits down_proj (about 2.5x the fitting time, no gain measured on the "
        "0.5B model)",
    )
    p.add_argument("--timings", action="store_true", help="print the seconds each phase of the build took")
    p.set_defaults(func=cmd_build_model)

    p = sub.add_parser("make-tiny-model", help="write a tiny random Qwen2 model (for tests and smoke tests)")
    p.add_argument("out", help="a .gguf path, or a folder for --format hf")
    p.add_argument("--format", default="gguf", choices=["gguf", "hf"])
    p.add_argument("--seed", type=cli_args.seed, default=0)
    p.set_defaults(func=cmd_make_tiny_model)

    dir_help = "the models folder (default: the one in the settings, else <user data folder>/models)"
    catalog_help = f"a catalogue JSON file to use instead of the packaged one (also: ${CATALOG_ENV})"
    p = sub.add_parser("models", help="list installed models (and those available to download)")
    p.add_argument("--dir", help=dir_help)
    p.add_argument("--catalog", help=catalog_help)
    p.add_argument("--delete", metavar="NAME", help="delete an installed model")
    p.add_argument("--set-default", metavar="NAME", help="make NAME the model the app opens at start")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser(
        "download", help="download a model from the Hugging Face hub, verify, build and install it"
    )
    p.add_argument("name", help="a catalogue name, e.g. qwen2.5-0.5b-instruct (see `qwen-desktop models`)")
    p.add_argument("--precision", default=None, choices=["int4", "int8", "fp32"], help="build precision")
    p.add_argument("--dir", help=dir_help)
    p.add_argument("--catalog", help=catalog_help)
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("import", help="install a GGUF file, a Hugging Face folder or a built model folder")
    p.add_argument("path", help="a .gguf file, a Hugging Face folder, or a folder with manifest.json")
    p.add_argument("--name", default=None, help="the model's name (default: from the file or folder name)")
    p.add_argument("--precision", default="int4", choices=["int4", "int8", "fp32"], help="build precision")
    p.add_argument("--dir", help=dir_help)
    p.set_defaults(func=cmd_import)
    from qwen_desktop.cli_chat import add_parsers
    from qwen_desktop.cli_chats import add_parsers as add_history_parsers
    from qwen_desktop.cli_serve import add_parser as add_serve_parser

    add_parsers(sub)
    add_serve_parser(sub)
    add_history_parsers(sub)
    return parser


def _one_line(text: str) -> str:
    return " ".join(text.split())


def error_line(exc: BaseException) -> str | None:
    """The one line to show for an error the user can act on, or None for a bug (an unexpected error).

    Project errors (a bad model file, settings or chats that cannot be used, a failed download) carry a
    message written for the user; an `OSError` says what the system refused and on which file.
    """
    from qwen_desktop.engine.errors import ModelError
    from qwen_desktop.storage.errors import StorageError

    if isinstance(exc, (ModelError, StorageError)):
        return _one_line(str(exc)) or type(exc).__name__
    if isinstance(exc, OSError):
        reason = exc.strerror or str(exc) or type(exc).__name__
        return _one_line(f"{exc.filename}: {reason}" if exc.filename else reason)
    return None


def _log_unexpected(exc: BaseException) -> Path | None:
    """Write the traceback of a bug to ``<data folder>/logs/cli-error.log``; returns the file, if written."""
    import traceback

    from qwen_desktop.storage.paths import data_dir

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        folder = data_dir() / "logs"
        folder.mkdir(parents=True, exist_ok=True)
        log = folder / "cli-error.log"
        log.write_text(f"qwen-desktop {__version__}, {time.strftime('%Y-%m-%d %H:%M:%S')}\n{text}")
    except OSError:
        return None
    return log


def run_command(func: Callable[[], int]) -> int:
    """Run a subcommand and turn whatever it raises into one line on stderr and an exit status.

    Returns the command's own status; 1 after an error (a project error, an `OSError`, or a bug, whose
    traceback goes to a log file rather than the screen); 130 after Ctrl-C.
    """
    try:
        return int(func())
    except KeyboardInterrupt:
        print("qwen-desktop: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        line = error_line(exc)
        if line is not None:
            print(f"qwen-desktop: error: {line}", file=sys.stderr)
            return 1
        log = _log_unexpected(exc)
        where = f"; details are in {log}" if log is not None else ""
        detail = _one_line(str(exc))
        print(
            f"qwen-desktop: unexpected error ({type(exc).__name__}{': ' + detail if detail else ''}){where}",
            file=sys.stderr,
        )
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``qwen-desktop`` command.

    Exit status: 0 on success, 1 when the command failed (one line on stderr says why; a chat answer that
    ended in an error counts), 2 for a usage error (an unknown option or a value out of range), 130 after
    Ctrl-C.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        from qwen_desktop.ui.app import run_app

        return run_command(run_app)
    return run_command(lambda: args.func(args))
