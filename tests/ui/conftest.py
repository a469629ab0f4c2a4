"""Fixtures for the window tests: a private data folder per test and a window on the tiny model."""

from __future__ import annotations

import json

import pytest

from qwen_desktop.storage.settings import Settings, save_settings


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A fresh data folder (settings, chats, models) for one test."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("QWEN_DESKTOP_HOME", str(folder))
    return folder


@pytest.fixture
def settings_for(home):
    """Write settings.json in the test's data folder: ``settings_for(model_path=..., threads=1)``."""

    def write(**values) -> Settings:
        base = {"threads": 1, "theme": "light", "temperature": 0.7, "seed": 0}
        settings = Settings(**(base | values))
        save_settings(settings, home / "settings.json")
        return settings

    return write


@pytest.fixture
def make_window(qtbot, home):
    """Open a ``MainWindow`` on this test's data folder and wait until its model is ready (if any)."""
    from qwen_desktop.ui.main_window import MainWindow

    opened = []

    def make(wait_ready: bool = True) -> MainWindow:
        window = MainWindow()
        qtbot.addWidget(window)
        opened.append(window)
        if wait_ready:
            with qtbot.waitSignal(window.model_ready, timeout=60000):
                window.show()
        else:
            window.show()
        return window

    yield make
    for window in opened:
        if not window._closing:
            window.close()


@pytest.fixture
def ready_window(settings_for, make_window, tiny_model_dir):
    """A window with the tiny model loaded (1 thread), and a fresh conversation."""
    settings_for(model_path=str(tiny_model_dir))
    return make_window()


def settings_file(home):
    return json.loads((home / "settings.json").read_text())
