"""Errors whose message is meant for the person using the app: one line that says what went wrong."""

from __future__ import annotations

import errno
import sqlite3
from pathlib import Path

# SQLite primary result codes (https://sqlite.org/rescode.html); extended codes keep these in the low byte.
_SQLITE_CORRUPT = 11
_SQLITE_FULL = 13
_SQLITE_NOTADB = 26

_DISK_FULL_ERRNOS = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


class StorageError(Exception):
    """Settings or chats cannot be read or written; the message says why in one line."""


class CorruptDatabaseError(StorageError):
    """The chat database is not an SQLite file or is damaged.

    `open_chat_store` catches this, moves the bad file aside and starts a fresh database.
    """


class DamagedChatError(StorageError):
    """One conversation's messages cannot be put in order (their parents form a loop); the rest of the
    database is usable. The message names the conversation."""


class AlreadyRunningError(StorageError):
    """Another Qwen Desktop process is using this data folder (see `storage.lock`)."""


class NotFoundError(StorageError):
    """A conversation or message id does not exist (it may have been deleted)."""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def os_storage_error(action: str, path: Path, exc: OSError) -> StorageError:
    """Turn an `OSError` from a file operation into a one-line `StorageError`.

    Args:
        action: What was being done, as a verb phrase ("save settings to").
        path: The file involved.
        exc: The original error.
    """
    if exc.errno in _DISK_FULL_ERRNOS:
        return StorageError(f"Cannot {action} {path}: the disk is full.")
    if exc.errno == errno.EFBIG:
        return StorageError(f"Cannot {action} {path}: the file is too large for this disk.")
    return StorageError(f"Cannot {action} {path}: {_one_line(exc.strerror or str(exc))}.")


def sqlite_storage_error(exc: sqlite3.Error | UnicodeDecodeError, path: Path) -> StorageError:
    """Turn an `sqlite3.Error` into a one-line `StorageError` (or `CorruptDatabaseError`).

    A `UnicodeDecodeError` is what Python's sqlite3 raises when a damaged file makes SQLite report an
    error whose text is not UTF-8: the file is damaged.
    """
    if isinstance(exc, UnicodeDecodeError):
        return CorruptDatabaseError(f"{path} is not a readable chat database (damaged data).")
    message = _one_line(str(exc))
    # sqlite_errorcode exists from Python 3.11; the message test covers 3.10.
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None
    lowered = message.lower()
    if primary == _SQLITE_FULL or "disk is full" in lowered:
        return StorageError(f"Cannot save chats to {path}: the disk is full.")
    if primary in (_SQLITE_CORRUPT, _SQLITE_NOTADB) or "not a database" in lowered or "malformed" in lowered:
        return CorruptDatabaseError(f"{path} is not a readable chat database ({message}).")
    return StorageError(f"Chat database {path}: {message}.")
