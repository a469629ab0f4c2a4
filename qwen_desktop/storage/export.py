"""Chats out of and into the database: Markdown to read, JSON to keep or move to another computer.

Markdown (`chat_markdown`, `export_markdown`) is one chat as it is shown: title, model, dates and the
branch on show, each message under who wrote it. JSON (`chats_json`, `export_json`) is everything: every
version of every message (the whole tree), each chat's own system prompt, pin and stable id, each
answer's saved figures (`stats`) and all timestamps. One chat or all of them go into the same file format,
`FORMAT` at `VERSION`:

    {"format": "qwen-desktop-chats", "version": 1, "exported_at": 1760000000.0, "app_version": "0.1.0",
     "conversations": [{"uid": "…", "title": "…", "created_at": …, "updated_at": …, "pinned": false,
                        "system_prompt": null, "preset": null, "head": 3,
                        "messages": [{"id": 1, "parent": null, "role": "user", "content": "…",
                                      "status": "complete", "stats": null, "created_at": …,
                                      "updated_at": …}, …]}, …]}

Message ids count from 1 in each chat, parents before children; "head" is the last message of the branch
on show. Times are Unix seconds. Files are written atomically (a temporary file renamed over the target).

`import_chats_file` reads such a file back into a database in one transaction. The file is untrusted:
anything that is not a complete, well-formed export of a version this app reads is refused with
`ImportFileError` (one line saying why) and the database is left as it was. A chat whose `uid` is already in
the database is skipped, not duplicated, and the result says so: importing the same file twice adds
nothing the second time.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from qwen_desktop import __version__
from qwen_desktop.storage.chats import (
    ROLES,
    STATUSES,
    ChatDump,
    ChatStore,
    Conversation,
    ImportResult,
    Message,
    Role,
    Status,
)
from qwen_desktop.storage.errors import DamagedChatError, StorageError, os_storage_error
from qwen_desktop.storage.files import atomic_write_bytes

FORMAT: Final = "qwen-desktop-chats"
VERSION: Final = 1
MAX_IMPORT_BYTES: Final = 1 << 30  # 1 GiB: far more than years of chats; a bigger file is not an export
_UID_LENGTH = 128
_MARKDOWN_ROLES: Final[dict[str, str]] = {"user": "You", "assistant": "Assistant", "system": "System"}
_STATUS_NOTES: Final[dict[str, str]] = {
    "streaming": "being written",
    "failed": "failed",
    "cancelled": "stopped",
    "interrupted": "interrupted",
}


class ImportFileError(StorageError):
    """A file offered for import is not a complete chat export this app can read; nothing was imported."""


@dataclass(frozen=True)
class ExportResult:
    """What an export wrote.

    Attributes:
        chats: How many chats are in the file.
        damaged: Titles of chats left out because their messages refer to each other in a loop (a damaged
            database; only an export of all chats leaves them out, one chat asked for by id raises).
    """

    chats: int
    damaged: tuple[str, ...] = ()


# Export


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(seconds))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def chat_markdown(store: ChatStore, conversation_id: int) -> str:
    """One chat as Markdown: the title, when, the model if the answers recorded it, and the branch on show.

    Raises:
        NotFoundError: There is no such chat.
        DamagedChatError: Its messages refer to each other in a loop.
    """
    conversation = store.get_conversation(conversation_id)
    shown = store.path(conversation_id)
    total = len(store.messages(conversation_id))
    models = sorted(
        {str(m.stats["model"]) for m in shown if m.stats and isinstance(m.stats.get("model"), str)}
    )
    lines = [f"# {_one_line(conversation.title) or 'Chat'}", ""]
    facts = [f"Created {_when(conversation.created_at)}", f"last message {_when(conversation.updated_at)}"]
    if models:
        facts.append(f"model: {', '.join(models)}")
    lines.append(" · ".join(facts))
    if conversation.system_prompt is not None:
        lines += ["", f"System prompt: {_one_line(conversation.system_prompt)}"]
    if total > len(shown):
        others = total - len(shown)
        lines += [
            "",
            f"*The version on show; {others} message{'s' if others != 1 else ''} from other versions "
            f"{'is' if others == 1 else 'are'} in the JSON export.*",
        ]
    for message in shown:
        note = _STATUS_NOTES.get(message.status)
        heading = f"### {_MARKDOWN_ROLES.get(message.role, message.role)} · {_when(message.created_at)}"
        body = _close_fence(message.content.rstrip("\n"))
        lines += ["", "---", "", heading + (f" ({note})" if note else ""), "", body]
    return "\n".join(lines) + "\n"


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def _close_fence(text: str) -> str:
    """`text` with a code fence it leaves open (an answer stopped inside a code block) closed, so the
    messages after it are not read as code."""
    opened: str | None = None
    for line in text.splitlines():
        found = _FENCE.match(line)
        if found is None:
            continue
        fence = found.group(1)
        if opened is None:
            opened = fence
        elif fence[0] == opened[0] and len(fence) >= len(opened) and not line[found.end() :].strip():
            opened = None
    return text if opened is None else f"{text}\n{opened}"


def _parents_first(dump: ChatDump) -> list[Message]:
    """The messages with each parent before its children (oldest first where free to choose).

    Raises:
        DamagedChatError: Some parents form a loop or point outside the chat.
    """
    children: dict[int | None, list[Message]] = {}
    ids = {m.id for m in dump.messages}
    for message in dump.messages:
        parent = message.parent_id if message.parent_id in ids else None
        if message.parent_id is not None and parent is None:
            break  # a parent outside the chat: reported below as damage
        children.setdefault(parent, []).append(message)
    ordered: list[Message] = []
    stack = list(reversed(children.get(None, [])))
    while stack:
        message = stack.pop()
        ordered.append(message)
        stack.extend(reversed(children.get(message.id, [])))
    if len(ordered) != len(dump.messages):
        raise DamagedChatError(
            f"Conversation {dump.conversation.id} is damaged: its messages refer to each other in a loop, "
            "so it cannot be exported (the other chats are fine)."
        )
    return ordered


def _conversation_json(dump: ChatDump) -> dict[str, Any]:
    ordered = _parents_first(dump)
    numbers = {m.id: n for n, m in enumerate(ordered, start=1)}
    conversation = dump.conversation
    head = conversation.head_message_id
    return {
        "uid": conversation.uid,
        "title": conversation.title,
        "created_at": conversation.created_at,
        "updated_at": conversation.updated_at,
        "pinned": conversation.pinned,
        "system_prompt": conversation.system_prompt,
        "preset": conversation.preset,
        "head": numbers.get(head) if head is not None else None,
        "messages": [
            {
                "id": numbers[m.id],
                "parent": None if m.parent_id is None else numbers[m.parent_id],
                "role": m.role,
                "content": m.content,
                "status": m.status,
                "stats": m.stats,
                "created_at": m.created_at,
                "updated_at": m.updated_at,
            }
            for m in ordered
        ],
    }


def chats_json(store: ChatStore, conversation_ids: Sequence[int] | None = None) -> tuple[bytes, ExportResult]:
    """Chats in the export format, as UTF-8 JSON bytes, read from one consistent snapshot.

    Args:
        store: The database.
        conversation_ids: The chats to export, or None for all of them (in the list's order). With ids, a
            damaged chat raises; with None it is left out and named in the result.

    Raises:
        NotFoundError: An id does not exist.
        DamagedChatError: A chat asked for by id is damaged.
    """
    conversations: list[dict[str, Any]] = []
    damaged: list[str] = []
    for dump in store.dump(conversation_ids):
        try:
            conversations.append(_conversation_json(dump))
        except DamagedChatError:
            if conversation_ids is not None:
                raise
            damaged.append(dump.conversation.title)
    document = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": time.time(),
        "app_version": __version__,
        "conversations": conversations,
    }
    try:
        data = json.dumps(document, ensure_ascii=False, indent=1).encode("utf-8")
    except UnicodeEncodeError:  # stats with a lone surrogate (a hand-edited database): escape everything
        data = json.dumps(document, ensure_ascii=True, indent=1).encode("ascii")
    return data + b"\n", ExportResult(len(conversations), tuple(damaged))


def export_json(store: ChatStore, path: Path, conversation_ids: Sequence[int] | None = None) -> ExportResult:
    """Write chats (all of them by default) to `path` as JSON, atomically. See `chats_json`.

    Raises:
        StorageError: The file cannot be written (the message says why), an id does not exist or a chat
            asked for by id is damaged.
    """
    data, result = chats_json(store, conversation_ids)
    atomic_write_bytes(Path(path), data, what="export chats to")
    return result


def export_markdown(store: ChatStore, conversation_id: int, path: Path) -> None:
    """Write one chat to `path` as Markdown, atomically. See `chat_markdown`.

    Raises:
        StorageError: The file cannot be written, or the chat does not exist or is damaged.
    """
    text = chat_markdown(store, conversation_id)
    # "replace": a model name in hand-edited stats could hold a lone surrogate
    atomic_write_bytes(Path(path), text.encode("utf-8", "replace"), what="export the chat to")


# Import


class _RefusedError(Exception):
    """Why a document is not an export we read; becomes the reason in `ImportFileError`."""


def _where(place: str, key: str) -> str:
    return f"{place}: {key!r}" if place else repr(key)


def _field(obj: dict[str, Any], key: str, place: str, *, default: Any = ..., kinds: tuple[type, ...]) -> Any:
    if key not in obj:
        if default is ...:
            raise _RefusedError(f"{_where(place, key)} is missing")
        return default
    value = obj[key]
    # bool is an int in Python, but true is not a number in a file
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        names = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise _RefusedError(f"{_where(place, key)} must be {names}, not {type(value).__name__}")
    return value


def _text(obj: dict[str, Any], key: str, place: str, *, optional: bool = False) -> str | None:
    kinds: tuple[type, ...] = (str, type(None)) if optional else (str,)
    value = _field(obj, key, place, default=None if optional else ..., kinds=kinds)
    if value is not None:
        _check_unicode(value, f"{_where(place, key)}")
    return cast("str | None", value)


def _check_unicode(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _RefusedError(
            f"{what} contains a lone surrogate (\\ud800-\\udfff), which is not text"
        ) from None


def _time(obj: dict[str, Any], key: str, place: str, default: Any = ...) -> float:
    value = _field(obj, key, place, default=default, kinds=(int, float))
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds) or abs(seconds) > 1e12:
        raise _RefusedError(f"{_where(place, key)} is not a time in seconds")
    return seconds


def _check_stats(value: Any, what: str, depth: int = 0) -> None:
    """Stats are kept as JSON: any JSON will do, but its text must be storable (no lone surrogates)."""
    if depth > 64:
        raise _RefusedError(f"{what} is nested too deeply")
    if isinstance(value, str):
        _check_unicode(value, what)
    elif isinstance(value, list):
        for item in value:
            _check_stats(item, what, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_unicode(key, what)
            _check_stats(item, what, depth + 1)


def _message(raw: Any, place: str, earlier: set[int]) -> Message:
    if not isinstance(raw, dict):
        raise _RefusedError(f"{place} is not an object")
    number = _field(raw, "id", place, kinds=(int,))
    if number in earlier:
        raise _RefusedError(f"{place} has the same id as an earlier message ({number})")
    parent = _field(raw, "parent", place, default=None, kinds=(int, type(None)))
    if parent is not None and parent not in earlier:
        raise _RefusedError(f"{place}: its parent {parent} is not an earlier message of the chat")
    role = _field(raw, "role", place, kinds=(str,))
    if role not in ROLES:
        raise _RefusedError(f"{_where(place, 'role')} must be one of {', '.join(ROLES)}")
    status = _field(raw, "status", place, default="complete", kinds=(str,))
    if status not in STATUSES:
        raise _RefusedError(f"{_where(place, 'status')} must be one of {', '.join(STATUSES)}")
    if status == "streaming":
        status = "interrupted"  # nothing is writing it here: the app shows it as cut off
    content = _text(raw, "content", place)
    stats = _field(raw, "stats", place, default=None, kinds=(dict, type(None)))
    if stats is not None:
        _check_stats(stats, _where(place, "stats"))
    created = _time(raw, "created_at", place)
    updated = _time(raw, "updated_at", place, default=created)
    earlier.add(number)
    return Message(
        id=number,
        conversation_id=0,
        parent_id=parent,
        role=cast(Role, role),
        content=cast(str, content),
        status=cast(Status, status),
        stats=stats,
        created_at=created,
        updated_at=updated,
    )


def _conversation(raw: Any, place: str) -> ChatDump:
    if not isinstance(raw, dict):
        raise _RefusedError(f"{place} is not an object")
    uid = _text(raw, "uid", place)
    assert uid is not None
    if not uid.strip() or len(uid) > _UID_LENGTH:
        raise _RefusedError(f"{_where(place, 'uid')} must be 1 to {_UID_LENGTH} characters")
    title = _text(raw, "title", place)
    created = _time(raw, "created_at", place)
    updated = _time(raw, "updated_at", place, default=created)
    pinned = _field(raw, "pinned", place, default=False, kinds=(bool,))
    system_prompt = _text(raw, "system_prompt", place, optional=True)
    preset = _text(raw, "preset", place, optional=True)  # absent in files from before presets
    if preset is not None and not 0 < len(preset) <= _UID_LENGTH:
        raise _RefusedError(f"{_where(place, 'preset')} must be 1 to {_UID_LENGTH} characters")
    raw_messages = _field(raw, "messages", place, kinds=(list,))
    earlier: set[int] = set()
    messages = tuple(
        _message(item, f"{place}, message {n}", earlier) for n, item in enumerate(raw_messages, start=1)
    )
    head = _field(raw, "head", place, default=None, kinds=(int, type(None)))
    if head is not None and head not in earlier:
        raise _RefusedError(f"{_where(place, 'head')} {head} is not a message of the chat")
    conversation = Conversation(
        id=0,
        title=cast(str, title),
        created_at=created,
        updated_at=updated,
        head_message_id=head,
        system_prompt=system_prompt,
        pinned=pinned,
        uid=uid,
        preset=preset,
    )
    return ChatDump(conversation, messages)


def _document(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # The text ends where more was expected, inside a string (the decoder points at its start), or
        # inside a literal ("nu" of null: the decoder points at its start too).
        tail = text[exc.pos :].rstrip()
        if (
            exc.pos >= len(text.rstrip())
            or exc.msg.startswith("Unterminated string")
            or (tail and any(word.startswith(tail) for word in ("null", "true", "false")))
        ):
            raise _RefusedError("it is cut short (the JSON ends early)") from None
        raise _RefusedError(
            f"it is not valid JSON ({exc.msg.lower()}: line {exc.lineno}, column {exc.colno})"
        ) from None
    except RecursionError:
        raise _RefusedError("it is nested too deeply to be an export") from None
    except ValueError as exc:  # an integer with thousands of digits
        raise _RefusedError(f"it is not a readable export ({_one_line(str(exc))})") from None


def _chats(data: bytes) -> list[ChatDump]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _RefusedError(f"it is not UTF-8 text (byte {exc.start})") from None
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise _RefusedError("it is empty")
    document = _document(text)
    if not isinstance(document, dict) or "format" not in document:
        raise _RefusedError(f'it is not a Qwen Desktop chat export (no "format": "{FORMAT}")')
    if document["format"] != FORMAT:
        raise _RefusedError(f'it is not a Qwen Desktop chat export ("format" is not "{FORMAT}")')
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise _RefusedError('its "version" is missing or not a number')
    shown = version if abs(version) < 10**9 else "?"
    if version > VERSION:
        raise _RefusedError(
            f"it was written by a newer Qwen Desktop (format version {shown}; this one reads {VERSION}): "
            "update the app"
        )
    if version != VERSION:
        raise _RefusedError(f"format version {shown} is not one this app reads (it reads {VERSION})")
    raw = _field(document, "conversations", "", kinds=(list,))
    chats = [_conversation(item, f"chat {n}") for n, item in enumerate(raw, start=1)]
    seen: dict[str, int] = {}
    for n, dump in enumerate(chats, start=1):
        first = seen.setdefault(dump.conversation.uid, n)
        if first != n:
            raise _RefusedError(f"chats {first} and {n} have the same uid")
    return chats


def read_export(data: bytes, source: str = "the file") -> list[ChatDump]:
    """Check and read an export's bytes: the chats in it, with the file's message ids.

    Args:
        data: The file's content.
        source: What to call it in the error message (its path).

    Raises:
        ImportFileError: It is not a complete export this app reads; the message says why, in one line.
    """
    try:
        return _chats(data)
    except _RefusedError as exc:
        raise ImportFileError(_one_line(f"{source} cannot be imported: {exc}.")) from None


def import_chats_file(store: ChatStore, path: Path) -> ImportResult:
    """Import every chat of an export file, in one transaction; chats already in `store` are skipped.

    A chat counts as already there when a chat with the same `uid` is in the database (it was exported
    from it, or imported before): it is left as it is, not merged or duplicated.

    Returns:
        The new conversations' ids and the ids of the existing chats that were skipped.

    Raises:
        ImportFileError: The file is not a complete export this app reads (nothing was imported).
        StorageError: The file cannot be read, or the database cannot be written (nothing was imported).
    """
    path = Path(path)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_IMPORT_BYTES + 1)
    except OSError as exc:
        raise os_storage_error("read", path, exc) from exc
    if len(data) > MAX_IMPORT_BYTES:
        raise ImportFileError(
            _one_line(f"{path} cannot be imported: it is larger than {MAX_IMPORT_BYTES:,} bytes.")
        )
    chats = read_export(data, str(path))
    try:
        return store.import_chats(chats)
    except ValueError as exc:  # read_export checked what import_chats checks; kept as a second guard
        raise ImportFileError(_one_line(f"{path} cannot be imported: {exc}.")) from None
