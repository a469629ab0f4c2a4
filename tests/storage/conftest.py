"""Storage fixtures: a private data folder for every test, an open chat store, and a tiny full-able disk."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from qwen_desktop.storage.chats import ChatStore
from qwen_desktop.storage.paths import HOME_ENV


@pytest.fixture(autouse=True)
def qwen_home(tmp_path, monkeypatch) -> Path:
    """Point QWEN_DESKTOP_HOME at a fresh folder so no test touches the real user data folder."""
    home = tmp_path / "home"
    monkeypatch.setenv(HOME_ENV, str(home))
    return home


@pytest.fixture
def store(tmp_path):
    with ChatStore(tmp_path / "chats.sqlite3") as chat_store:
        yield chat_store


@pytest.fixture
def small_disk(tmp_path) -> Path:
    """A 256 KiB tmpfs, so a write can really fail with "no space left on device"."""
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill the disk needs root on Linux")
    mount = shutil.which("mount")
    umount = shutil.which("umount")
    if mount is None or umount is None:
        pytest.skip("mount/umount not found: cannot make a small disk to fill")
    folder = tmp_path / "small-disk"
    folder.mkdir()
    result = subprocess.run(
        [mount, "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs: {result.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run([umount, str(folder)], check=True)
