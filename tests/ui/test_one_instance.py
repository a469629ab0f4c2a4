"""One app per data folder, and a window that survives its chat being changed underneath it (issue 25,
defects 5 and 12)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

from PySide6.QtCore import Qt

from qwen_desktop.storage.chats import ChatStore
from tests.ui.test_window import never_stopping_copy


def _app(home, *args):
    env = os.environ | {"QWEN_DESKTOP_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return [sys.executable, "-m", "qwen_desktop", *args], env


def test_a_second_start_on_the_same_data_folder_says_so_and_exits_0(home, settings_for):
    settings_for()  # no model: the welcome page, quick to open
    command, env = _app(home)
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lock = home / "instance.lock"
        deadline = time.monotonic() + 60
        while not (lock.exists() and lock.read_text().strip()):
            assert first.poll() is None, first.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "the first app never took the lock"
            time.sleep(0.1)
        assert lock.read_text().strip() == str(first.pid)
        # The first window may still be opening: start again until it has raised its window once.
        raised = False
        while not raised:
            second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)
            assert second.returncode == 0, second.stderr
            assert "Traceback" not in second.stderr
            line = second.stderr.strip().splitlines()[-1]
            assert line.startswith(
                f"qwen-desktop: Qwen Desktop is already running with the data folder {home}"
            )
            raised = line.endswith("Its window is now in front.")
            assert raised or time.monotonic() < deadline, second.stderr
        assert first.poll() is None, "the first app keeps running"
        assert not (home / "show-window.request").exists(), "the first app took the request"
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=60)


def _send_and_wait_for_streaming(qtbot, window, text):
    window.composer.setPlainText(text)
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    view = window.chat_view.view_of(window.streaming_id)
    qtbot.waitUntil(lambda: view.render_count > 1, timeout=30000)


def test_a_chat_deleted_elsewhere_during_an_answer_leaves_the_window_usable(
    qtbot, settings_for, make_window, tiny_model_dir, tmp_path, home
):
    settings_for(
        model_path=str(never_stopping_copy(tiny_model_dir, tmp_path)), temperature=0.0, max_tokens=200
    )
    window = make_window()
    _send_and_wait_for_streaming(qtbot, window, "A long answer, please")
    conversation_id = window.conversation_id
    # Another program on the same database (an old version without the lock, a tool): it deletes the chat
    # while the answer is being written.
    with (
        qtbot.waitSignal(window.answer_finished, timeout=60000),
        ChatStore(home / "chats.sqlite3") as other,
    ):
        assert other.delete_conversation(conversation_id)
    assert window.send_button.isEnabled()
    assert window.banner.isVisible()
    notice = window.banner_label.text()
    assert "no longer exists" in notice and "does not exist" not in notice
    assert window.conversation_id is None
    assert window.sidebar.titles() == []
    # Chatting goes on, in a new chat.
    window.composer.setPlainText("Still there?")
    with qtbot.waitSignal(window.answer_finished, timeout=60000) as blocker:
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert blocker.args[0].reason in ("stop", "length")
    assert len(window.sidebar.titles()) == 1


def test_a_chat_with_a_loop_of_parents_shows_as_damaged(
    qtbot, settings_for, make_window, tiny_model_dir, home
):
    with ChatStore(home / "chats.sqlite3") as store:
        fine = store.create_conversation("fine")
        store.add_message(fine.id, "user", "a readable question")
        looped = store.create_conversation("looped")
        first = store.add_message(looped.id, "user", "one")
        second = store.add_message(looped.id, "assistant", "two")
    conn = sqlite3.connect(home / "chats.sqlite3")
    conn.execute("UPDATE messages SET parent_id = ? WHERE id = ?", (second.id, first.id))
    conn.commit()
    conn.close()
    settings_for(model_path=str(tiny_model_dir))
    window = make_window()
    assert window.sidebar.titles() == ["looped", "fine"]
    items = window.sidebar.chat_list
    qtbot.mouseClick(
        items.viewport(),
        Qt.MouseButton.LeftButton,
        pos=items.visualItemRect(window.sidebar.item_of(fine.id)).center(),
    )
    assert window.conversation_id == fine.id
    assert "a readable question" in window.chat_view.views[0].text
    qtbot.mouseClick(
        items.viewport(),
        Qt.MouseButton.LeftButton,
        pos=items.visualItemRect(window.sidebar.item_of(looped.id)).center(),
    )
    assert window.conversation_id == looped.id
    assert window.banner.isVisible()
    assert f"Conversation {looped.id} is damaged" in window.banner_label.text()
    assert window.chat_view.views == []
