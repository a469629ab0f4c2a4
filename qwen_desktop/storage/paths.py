"""Where Qwen Desktop keeps its files. Each function creates its folder on demand.

Everything lives under `data_dir()`: the platform's user data folder for "QwenDesktop", or the folder named
by the `QWEN_DESKTOP_HOME` environment variable (tests and portable installs set it).
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

APP_NAME = "QwenDesktop"
HOME_ENV = "QWEN_DESKTOP_HOME"


def data_dir() -> Path:
    """The folder that holds settings, chats and (by default) models; created if missing."""
    home = os.environ.get(HOME_ENV)
    folder = Path(home).expanduser() if home else Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def models_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The folder where downloaded and built models go; created if missing.

    Args:
        override: `Settings.models_dir` when the user chose another folder; `None` or "" for the default,
            `data_dir()/models`.
    """
    folder = Path(override).expanduser() if override else data_dir() / "models"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def database_path() -> Path:
    """The chat database file, `data_dir()/chats.sqlite3` (its folder exists; the file may not)."""
    return data_dir() / "chats.sqlite3"


def settings_path() -> Path:
    """The settings file, `data_dir()/settings.json` (its folder exists; the file may not)."""
    return data_dir() / "settings.json"


def cache_dir() -> Path:
    """Rebuildable files (ONNX Runtime's optimized graphs): ``<home>/cache`` when ``QWEN_DESKTOP_HOME`` is
    set, else the platform's user cache folder. Safe to delete at any time."""
    home = os.environ.get(HOME_ENV)
    folder = (
        Path(home).expanduser() / "cache"
        if home
        else Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))
    )
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def ort_cache_dir() -> Path:
    """Where the engine keeps ONNX Runtime's optimized copies of the graphs: ``cache_dir()/ort``."""
    return cache_dir() / "ort"
