"""Small file helpers shared by settings and chats: atomic writes and moving a bad file aside."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qwen_desktop.storage.errors import os_storage_error


def atomic_write_bytes(path: Path, data: bytes, *, what: str = "write") -> None:
    """Replace `path` with `data` so a reader sees either the old file or the new one, never a mix.

    Writes a temporary file in the same folder, fsyncs it and renames it over `path`.

    Args:
        path: The file to write; its folder is created if missing.
        data: The whole new content.
        what: A verb phrase for error messages ("save settings to").

    Raises:
        StorageError: The folder or file cannot be written (the message says if the disk is full).
    """
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise os_storage_error(what, path, exc) from exc
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise os_storage_error(what, path, exc) from exc
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    """Make a rename durable; folders cannot be opened for fsync on Windows, where this is a no-op."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def move_aside(path: Path, companions: Sequence[str] = ()) -> Path:
    """Rename a damaged file to `<name>.corrupt-<timestamp>` so the user can still recover it.

    Args:
        path: The damaged file.
        companions: Suffixes of files that belong to it (SQLite's "-wal", "-shm"); each moves along as
            `<new name><suffix>`, so SQLite still opens the pair together.

    Returns:
        The new path of `path`.

    Raises:
        OSError: The rename failed.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    path.replace(aside)
    for suffix in companions:
        companion = path.with_name(path.name + suffix)
        if companion.exists():
            companion.replace(aside.with_name(aside.name + suffix))
    return aside


def read_json(data: bytes | str) -> Any:
    """Parse JSON from a file we wrote but cannot trust (a user may edit it, a crash may cut it); None if
    it is not readable JSON.

    Besides invalid UTF-8 and invalid JSON this covers nesting too deep for the parser (RecursionError) and
    numbers too long to convert (ValueError), so a caller only needs to check the type of the result.
    """
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        return json.loads(text)
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return None
