"""The window with its local server on: Settings switches it on, it serves the model the window shows, and
window answers and API answers take turns on that one model."""

from __future__ import annotations

import socket
import threading

import openai
import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from qwen_desktop.ui.settings_dialog import SettingsDialog

# the offscreen platform says this for every dialog opened with exec()
pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def switch_server_on(qtbot, window, port, key=""):
    """Open Settings with its button, tick Local server, set the port (and key), press OK."""
    done = {}

    def fill():
        dialog = next(
            w for w in QApplication.topLevelWidgets() if isinstance(w, SettingsDialog) and w.isVisible()
        )
        assert "Off" in dialog.server_url.text()
        qtbot.mouseClick(dialog.server_enabled, Qt.MouseButton.LeftButton)
        dialog.server_port.lineEdit().selectAll()
        qtbot.keyClicks(dialog.server_port.lineEdit(), str(port))
        if key:
            qtbot.keyClicks(dialog.server_key, key)
        done["url"] = dialog.server_url.text()
        ok = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, fill)
    qtbot.mouseClick(window.sidebar.settings_button, Qt.MouseButton.LeftButton)
    return done["url"]


def test_settings_switch_the_server_on_and_it_serves_the_window_model(ready_window, qtbot):
    window = ready_window
    assert window.server is None and not window.server_label.isVisible()
    port = free_port()
    shown = switch_server_on(qtbot, window, port, key="k3y")
    assert f"http://127.0.0.1:{port}/v1" in shown
    assert window.settings.server_enabled and window.server is not None
    assert window.server_label.isVisible() and str(port) in window.server_label.text()
    with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="k3y", max_retries=0) as client:
        assert [m.id for m in client.models.list()] == [window.model_info.folder.name]
        reply = client.chat.completions.create(
            model=window.model_info.folder.name, messages=[{"role": "user", "content": "Hi"}], max_tokens=6
        )
    assert reply.choices[0].message.content
    # switched off again: nothing listens
    window.apply_settings(window.settings.__class__(**{**window.settings.__dict__, "server_enabled": False}))
    assert window.server is None
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_a_window_answer_and_an_api_answer_queue_and_both_finish(ready_window, qtbot):
    window = ready_window
    port = free_port()
    switch_server_on(qtbot, window, port)
    api_text = {}
    api_started = threading.Event()

    def api_request():
        with openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="-", max_retries=0) as client:
            stream = client.chat.completions.create(
                model=window.model_info.folder.name,
                messages=[{"role": "user", "content": "Tell me a long story"}],
                max_tokens=120,
                temperature=0.8,
                stream=True,
            )
            parts = []
            for chunk in stream:
                api_started.set()
                parts.extend(c.delta.content or "" for c in chunk.choices)
            api_text["text"] = "".join(parts)

    seen_busy = []
    window.bridge.api_activity.connect(seen_busy.append)
    client = threading.Thread(target=api_request)
    client.start()
    assert api_started.wait(30)
    window.composer.setPlainText("And my question?")
    with qtbot.waitSignal(window.answer_finished, timeout=60000) as blocker:
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    client.join(60)
    assert blocker.args[0].reason in ("stop", "length") and blocker.args[0].text
    assert api_text["text"]
    qtbot.waitUntil(lambda: seen_busy[-1:] == [False], timeout=10000)
    assert True in seen_busy  # the window heard the API request run
    assert "running" not in window.server_label.text()


def test_a_busy_port_is_a_banner_not_a_crash(ready_window, qtbot):
    window = ready_window
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        switch_server_on(qtbot, window, port)
        assert window.server is None
        assert window.banner.isVisible() and str(port) in window.banner_label.text()
