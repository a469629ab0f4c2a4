"""``qwen-desktop chats``, ``export`` and ``import-chats``: the chat history on the command line.

They use the app's chat database (``<data folder>/chats.sqlite3``; ``QWEN_DESKTOP_HOME`` moves the data
folder, as for the app) and may run while the app is open: they leave its answer in progress alone.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from qwen_desktop.storage.chats import ChatStore

MARKDOWN_SUFFIXES = (".md", ".markdown")


def _open_store() -> ChatStore:
    from qwen_desktop.storage.chats import ChatStore
    from qwen_desktop.storage.paths import database_path

    # mark_interrupted=False: the app may be writing an answer into this database right now.
    return ChatStore(database_path(), mark_interrupted=False)


def _chats(n: int) -> str:
    return f"{n} chat" if n == 1 else f"{n} chats"


def cmd_export(args: argparse.Namespace) -> int:
    from qwen_desktop.storage.export import export_json, export_markdown

    out = Path(args.out).expanduser()
    fmt = args.format or ("md" if out.suffix.lower() in MARKDOWN_SUFFIXES else "json")
    if fmt == "md" and args.chat is None:
        print(
            "qwen-desktop: error: a Markdown export holds one chat: pass --chat ID "
            "(`qwen-desktop chats` lists them), or --format json for all of them",
            file=sys.stderr,
        )
        return 2
    with _open_store() as store:
        if fmt == "md":
            export_markdown(store, args.chat, out)
            print(f"Exported chat {args.chat} to {out}")
            return 0
        result = export_json(store, out, None if args.chat is None else [args.chat])
    print(f"Exported {_chats(result.chats)} to {out}")
    if result.damaged:
        names = ", ".join(repr(title) for title in result.damaged)
        print(f"warning: left out {_chats(len(result.damaged))} that are damaged: {names}", file=sys.stderr)
    return 0


def cmd_import_chats(args: argparse.Namespace) -> int:
    from qwen_desktop.storage.export import import_chats_file

    source = Path(args.file).expanduser()
    with _open_store() as store:
        result = import_chats_file(store, source)
    line = f"Imported {_chats(len(result.imported))} from {source}"
    if result.skipped:
        line += f"; {_chats(len(result.skipped))} already here (same chat id) left as they are"
    print(line)
    return 0


def cmd_chats(args: argparse.Namespace) -> int:
    from qwen_desktop.storage.chats import HIT_END, HIT_START

    bold, plain = ("\033[1m", "\033[0m") if sys.stdout.isatty() else ("[", "]")
    with _open_store() as store:
        if args.search is not None:
            hits = store.search(args.search, limit=args.limit)
            for hit in hits:
                snippet = hit.snippet.replace(HIT_START, bold).replace(HIT_END, plain)
                print(f"{hit.conversation_id:>5}  {hit.title}  ({hit.role}, message {hit.message_id})")
                print(f"       {snippet}")
            if not hits:
                print("No message contains that.", file=sys.stderr)
            return 0
        conversations = store.list_conversations()
    for c in conversations:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(c.updated_at))
        print(f"{c.id:>5}  {when}  {'*' if c.pinned else ' '} {c.title}")
    if not conversations:
        print("No chats yet.", file=sys.stderr)
    return 0


def add_parsers(sub: Any) -> None:
    """Register ``chats``, ``export`` and ``import-chats`` on the main parser's subparsers."""
    from qwen_desktop import cli_args

    p = sub.add_parser(
        "chats", help="list the app's chats (id, last message, * = pinned, title), or search them"
    )
    p.add_argument("--search", metavar="TEXT", help="list the messages that contain TEXT instead")
    p.add_argument(
        "--limit", type=cli_args.int_in(1, 10_000), default=50, help="most hits shown (default 50)"
    )
    p.set_defaults(func=cmd_chats)

    p = sub.add_parser("export", help="write chats to a JSON file (everything) or one chat to Markdown")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--chat", type=cli_args.int_in(1), metavar="ID", help="one chat (ids: qwen-desktop chats)"
    )
    which.add_argument("--all", action="store_true", help="every chat (the default)")
    p.add_argument(
        "--format",
        choices=["md", "json"],
        default=None,
        help="md (one chat as it is shown) or json (every version, settings and times; importable); "
        "default: md for an OUT ending in .md, else json",
    )
    p.add_argument("out", metavar="OUT", help="the file to write (replaced if it exists)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("import-chats", help="add the chats of a JSON export to the app's chats")
    p.add_argument(
        "file", metavar="FILE", help="a file written by `qwen-desktop export`; chats already here are skipped"
    )
    p.set_defaults(func=cmd_import_chats)
