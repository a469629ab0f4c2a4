""" "Auto" threads without the wait (issue 23 item 5): the speed of each thread count is measured once per machine
and model, when the window has been idle a while, never in front of the user; a later start reuses it; a message
sent while it measures is answered at once; Settings shows what was measured."""

from __future__ import annotations

import os

import pytest
from PySide6.QtCore import Qt, QTimer

from qwen_desktop.engine.bench import fastest, sweep_key
from qwen_desktop.storage.thread_sweeps import FILE_NAME, ThreadSweeps
from qwen_desktop.ui.main_window import MainWindow

COUNTS = set(range(1, (os.cpu_count() or 1) + 1))


@pytest.fixture
def quick_idle(monkeypatch):
    """Idle means 0.3 s here, not 20 s."""
    monkeypatch.setattr(MainWindow, "SWEEP_IDLE_MS", 300)


def stored(home, folder):
    return ThreadSweeps(home / "cache" / FILE_NAME).get(sweep_key(folder))


def test_the_first_start_is_ready_at_once_and_measures_later_at_idle(
    settings_for, make_window, tiny_model_dir, home, qtbot, quick_idle
):
    settings_for(model_path=str(tiny_model_dir), threads=0)
    window = make_window()
    # ready and usable straight away: nothing is measured in front of the user
    assert window.status_label.text().startswith("Ready · ")
    assert window.send_button.isEnabled() and not window._sweeping
    assert stored(home, tiny_model_dir) is None
    with qtbot.waitSignal(window.bridge.sweep_done, timeout=60000) as done:
        pass  # the window is left alone: after the idle time it measures
    measured = stored(home, tiny_model_dir)
    assert measured is not None and set(measured) == COUNTS == set(done.args[0])
    best = fastest(measured)
    assert window.settings.auto_threads == best
    qtbot.waitUntil(lambda: window.bridge.engine.model.threads == best, timeout=60000)
    qtbot.waitUntil(lambda: window.status_label.text().startswith("Ready · "), timeout=60000)

    # a later start of the same model on this machine uses the measurement and does not measure again
    window.close()
    again = make_window()
    assert again.bridge.engine.model.threads == best
    swept = []
    again.bridge.sweep_progress.connect(lambda *args: swept.append(args))
    qtbot.wait(1000)  # more than the idle time
    assert swept == [] and not again._sweeping


def test_a_message_sent_while_measuring_is_answered_and_the_measurement_finishes_later(
    settings_for, make_window, tiny_model_dir, home, qtbot, quick_idle, monkeypatch
):
    settings_for(model_path=str(tiny_model_dir), threads=0, max_tokens=8)
    window = make_window()
    started = []
    sweep = window.bridge.sweep

    def user_types_as_it_starts(folder, counts):
        started.append(window.send_button.isEnabled())  # Send stays available while measuring
        sweep(folder, counts)
        if len(started) == 1:
            QTimer.singleShot(0, send_now)

    def send_now():
        window.composer.setPlainText("Are you there?")
        qtbot.mouseClick(window.send_button, Qt.MouseButton.LeftButton)

    monkeypatch.setattr(window.bridge, "sweep", user_types_as_it_starts)
    with qtbot.waitSignal(window.answer_finished, timeout=60000) as answered:
        pass
    assert started and started[0] is True
    assert answered.args[0].reason in ("stop", "length")
    last = window.store.path(window.conversation_id)[-1]
    assert (last.role, last.content, last.status) == ("assistant", answered.args[0].text, "complete")
    # whether the message stopped the measurement or it had already ended, it is complete in the end
    qtbot.waitUntil(lambda: stored(home, tiny_model_dir) is not None, timeout=60000)
    assert set(stored(home, tiny_model_dir)) == COUNTS


@pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")
def test_settings_show_the_speed_measured_for_each_thread_count(
    settings_for, make_window, tiny_model_dir, home, qtbot, monkeypatch
):
    from qwen_desktop.ui.settings_dialog import SettingsDialog

    settings_for(model_path=str(tiny_model_dir), threads=0)
    ThreadSweeps(home / "cache" / FILE_NAME).put(sweep_key(tiny_model_dir), {1: 412.0, 2: 655.4})
    window = make_window()
    assert window.bridge.engine.model.threads == 2  # the stored measurement picks the count at load
    shown = []
    monkeypatch.setattr(SettingsDialog, "exec", lambda dialog: shown.append(dialog) or 0)
    qtbot.keyClick(window, Qt.Key.Key_Comma, Qt.KeyboardModifier.ControlModifier)  # Ctrl+, opens Settings
    assert shown, "Ctrl+, opened the settings"
    dialog = shown[0]
    assert "now 2" in dialog.threads.itemText(0)
    assert dialog.measured.text().endswith("1 → 412 tokens/s · 2 → 655 tokens/s")


def test_a_damaged_measurement_file_only_means_measuring_again(tmp_path):
    path = tmp_path / FILE_NAME
    sweeps = ThreadSweeps(path, machine="cpu A")
    assert sweeps.get("m") is None  # no file
    for junk in (
        b"\xff\xfe",
        b"[1, 2]",
        b'{"format": "qwen-desktop-thread-sweeps", "entries": []}',
        b"{" * 5000,
    ):
        path.write_bytes(junk)
        assert sweeps.get("m") is None
    sweeps.put("m", {1: 10.0, 2: 20.5})
    assert sweeps.get("m") == {1: 10.0, 2: 20.5}
    # another machine (a synced home folder) does not reuse this one's figures
    assert ThreadSweeps(path, machine="cpu B").get("m") is None
    text = path.read_text().replace('"2": 20.5', '"2": "fast"').replace('"1": 10.0', '"-1": 10.0')
    path.write_text(text)
    assert sweeps.get("m") is None  # nothing usable left: measured again
