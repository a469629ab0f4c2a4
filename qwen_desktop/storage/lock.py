"""One app instance per data folder: an OS file lock held for the life of the process.

Two windows on one chat database would undo each other's work (the second marks the first's live answer
"interrupted" when it opens the database, and can delete a chat the first is writing to). The app takes
`InstanceLock` on the data folder before it opens anything there; a second start finds it held and says so.

The lock is the operating system's (``fcntl.flock`` on POSIX, ``msvcrt.locking`` on Windows), not the mere
existence of a file, so it is released when the process ends in any way, a crash or a kill included: a
stale lock file never keeps the app from starting.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

from qwen_desktop.storage.errors import AlreadyRunningError, os_storage_error

LOCK_FILE = "instance.lock"


class InstanceLock:
    """An exclusive lock on a data folder, taken with `acquire` and held until `release` or exit."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / LOCK_FILE
        self._file: IO[bytes] | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._file is not None

    def acquire(self) -> None:
        """Take the lock without waiting.

        Raises:
            AlreadyRunningError: Another process holds it.
            StorageError: The lock file cannot be created (the message says why).
        """
        if self._file is not None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = self.path.open("a+b")
        except OSError as exc:
            raise os_storage_error("lock the data folder", self.path.parent, exc) from exc
        try:
            _lock(handle)
        except OSError:
            handle.close()
            raise AlreadyRunningError(
                f"Qwen Desktop is already running with the data folder {self.path.parent}."
            ) from None
        # The holder's process id, for a person looking at the folder; the lock itself is what counts.
        with contextlib.suppress(OSError):
            handle.truncate(0)
            handle.write(f"{os.getpid()}\n".encode())
            handle.flush()
        self._file = handle

    def release(self) -> None:
        """Let go of the lock (the process ending does the same). Calling it twice is harmless."""
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            _unlock(self._file)
        self._file.close()
        self._file = None

    def __enter__(self) -> InstanceLock:
        self.acquire()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.release()


if os.name == "nt":
    import msvcrt

    def _lock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]

    def _unlock(handle: IO[bytes]) -> None:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined,unused-ignore]

else:
    import fcntl

    def _lock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(handle: IO[bytes]) -> None:
        fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
