"""The main window with real widgets, a real chat database and the tiny model."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from qwen_desktop.engine.generate import common_prefix
from qwen_desktop.storage.chats import ChatStore
from tests.ui.actions import action, click_action, hover


def send(qtbot, window, text, timeout=30000):
    """Type ``text``, press Enter, wait for the answer; returns the AnswerResult."""
    window.composer.setPlainText(text)
    with qtbot.waitSignal(window.answer_finished, timeout=timeout) as blocker:
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    return blocker.args[0]


def test_window_is_up_before_the_model(qtbot, settings_for, make_window, tiny_model_dir):
    settings_for(model_path=str(tiny_model_dir))
    window = make_window(wait_ready=False)
    assert window.isVisible()
    assert window.model_info is None
    assert window.status_label.text() in ("Loading model…", "Starting…", "Reading model folder…")
    assert not window.send_button.isEnabled()
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        pass
    info = window.model_info
    threads = "1 thread" if info.threads == 1 else f"{info.threads} threads"
    assert window.status_label.text() == f"Ready · {info.display_name} · {threads}"
    assert info.display_name.endswith(" · int4") and ".gguf" not in info.display_name
    assert "warmed up in" in window.status_label.toolTip()
    assert window.send_button.isEnabled()


def run_app_process(code: str, home, *python_flags: str) -> subprocess.CompletedProcess:
    """Run ``code`` (which starts the app) in a Python process of its own on the data folder ``home``, Qt
    offscreen; its exit status, stdout and stderr come back."""
    env = os.environ | {"QWEN_DESKTOP_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, *python_flags, "-c", code],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def never_stopping_copy(tiny_model_dir, tmp_path):
    """A copy of the tiny model without stop ids, so an answer always runs to its token limit (the random
    model may write its end-of-turn token at any point, and where depends on which graph read the prompt:
    a question read ahead while typed is read by the decode graph)."""
    import json
    import shutil

    folder = tmp_path / "never-stops"
    shutil.copytree(tiny_model_dir, folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["eos_token_ids"] = []
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


def test_answer_streams_into_the_view_in_order(
    qtbot, settings_for, make_window, tiny_model_dir, tmp_path, paced_model
):
    paced_model(0.003)  # ~1 s for the 300 tokens, whatever the machine: time for several renders
    settings_for(
        model_path=str(never_stopping_copy(tiny_model_dir, tmp_path)), temperature=0.0, max_tokens=300
    )
    window = make_window()
    snapshots = []

    def look(*_):
        view = window.chat_view.view_of(window.streaming_id) if window.streaming_id else None
        if view is not None:
            snapshots.append(view.text)

    window.bridge.piece.connect(look)
    window.composer.setPlainText("Tell me a story")
    # listening from before the key press: a fast machine can finish the answer while the view is watched
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as blocker:
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
        assert window.composer.toPlainText() == ""
        assert window.send_button.isEnabled() and window.send_button.text() == "Stop"
        view = window.chat_view.view_of(window.streaming_id)
        qtbot.waitUntil(lambda: view.render_count > 2, timeout=30000)  # re-rendered while still writing
    result = blocker.args[0]
    assert len(snapshots) > 2
    for before, after in itertools.pairwise(snapshots):
        assert after.startswith(before)
    final = window.chat_view.last_answer()
    assert final.text == result.text
    assert final.body.toPlainText().strip()
    stored = window.store.path(window.conversation_id)
    assert [m.role for m in stored] == ["user", "assistant"]
    assert stored[-1].content == result.text and stored[-1].status == "complete"
    assert stored[-1].stats["generated_tokens"] == 300
    assert "tokens/s" in window.speed_label.text()
    assert window.sidebar.titles() == ["Tell me a story"]


def test_shift_enter_is_a_new_line(ready_window, qtbot):
    window = ready_window
    qtbot.keyClicks(window.composer, "one")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.composer, "two")
    assert window.composer.toPlainText() == "one\ntwo"
    assert not window.bridge.busy


def test_esc_stops_the_answer_and_keeps_the_text(qtbot, settings_for, make_window, tiny_model_dir):
    settings_for(model_path=str(tiny_model_dir), temperature=0.0, max_tokens=5000, context_limit=16384)
    window = make_window()
    window.composer.setPlainText("Go on and on")
    window.send()
    qtbot.waitUntil(lambda: window.chat_view.view_of(window.streaming_id).text != "", timeout=30000)
    with qtbot.waitSignal(window.answer_finished, timeout=2000) as blocker:
        qtbot.keyClick(window, Qt.Key.Key_Escape)
    result = blocker.args[0]
    assert result.reason == "cancelled"
    answer = window.store.path(window.conversation_id)[-1]
    assert answer.status == "cancelled"
    assert answer.content == result.text != ""
    assert "stopped" in window.chat_view.last_answer().status_label.text()


def test_regenerate_keeps_the_old_answer_as_a_version(ready_window, qtbot):
    window = ready_window
    first = send(qtbot, window, "Hello")
    old = window.chat_view.last_answer()
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as blocker:
        click_action(qtbot, window.chat_view, old, "Regenerate")
    second = blocker.args[0]
    path = window.store.path(window.conversation_id)
    siblings = window.store.siblings(path[-1].id)
    assert [s.content for s in siblings] == [first.text, second.text]
    latest = window.chat_view.last_answer()
    assert latest.branch_label.text() == "2 / 2"
    click_action(qtbot, window.chat_view, latest, "Previous version")
    assert window.chat_view.last_answer().text == first.text
    assert window.chat_view.last_answer().branch_label.text() == "1 / 2"


def test_message_actions_show_on_hover_and_with_the_focus(ready_window, qtbot):
    window = ready_window
    result = send(qtbot, window, "Hello")
    mine, answer = window.chat_view.views
    assert not mine.action_bar.isVisible() and not answer.action_bar.isVisible()  # quiet until wanted
    assert [action(answer, n).isEnabled() for n in ("Copy message", "Regenerate")] == [True, True]
    qtbot.wait(200)  # the views fit their text
    height = answer.height()
    hover(qtbot, window.chat_view, answer)
    assert not mine.action_bar.isVisible()
    qtbot.wait(100)
    assert answer.height() == height  # their room was kept: nothing moves when they show
    hover(qtbot, window.chat_view, mine)
    qtbot.waitUntil(lambda: not answer.action_bar.isVisible())
    qtbot.mouseMove(window.composer)
    qtbot.waitUntil(lambda: not mine.action_bar.isVisible())
    # by keyboard: Shift+Tab from the message box (by way of Attach) lands on the answer's last action, shown,
    # and the next one on Copy; Tab from the answer's text reaches Copy too; Space copies
    qtbot.mouseClick(window.composer.viewport(), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(window.composer.hasFocus)
    qtbot.keyClick(window.composer, Qt.Key.Key_Backtab)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)
    assert QApplication.focusWidget() is action(answer, "Regenerate")
    assert answer.action_bar.isVisible() and not mine.action_bar.isVisible()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)
    assert QApplication.focusWidget() is answer.body and answer.action_bar.isVisible()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert QApplication.focusWidget() is action(answer, "Copy message")
    QGuiApplication.clipboard().clear()
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Space)
    assert QGuiApplication.clipboard().text() == result.text
    qtbot.mouseClick(window.composer.viewport(), Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not answer.action_bar.isVisible())


def test_edit_and_resend_makes_a_branch_and_keeps_the_old_one(ready_window, qtbot):
    window = ready_window
    send(qtbot, window, "First question")
    second = send(qtbot, window, "Second question")
    user_views = [v for v in window.chat_view.views if v.message.role == "user"]
    click_action(qtbot, window.chat_view, user_views[0], "Edit and resend")
    assert window.composer.toPlainText() == "First question"
    assert window.edit_label.isVisible()
    assert window.composer.hasFocus()
    window.composer.selectAll()
    qtbot.keyClicks(window.composer, "First question, edited")
    with qtbot.waitSignal(window.answer_finished, timeout=30000):
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    path = window.store.path(window.conversation_id)
    assert [m.content for m in path if m.role == "user"] == ["First question, edited"]
    versions = window.store.siblings(path[0].id)
    assert [v.content for v in versions] == ["First question", "First question, edited"]
    assert window.chat_view.views[0].branch_label.text() == "2 / 2"
    # The old branch, with its second turn, is one click away.
    click_action(qtbot, window.chat_view, window.chat_view.views[0], "Previous version")
    texts = [v.text for v in window.chat_view.views]
    assert texts[0] == "First question" and texts[2] == "Second question" and texts[3] == second.text


def test_settings_change_applies_without_restart(ready_window, qtbot, home):
    from qwen_desktop.ui.settings_dialog import SettingsDialog

    window = ready_window
    engine = window.bridge.engine
    assert engine.model.threads == 1
    dialog = SettingsDialog(window.settings, window.installed_models(), window.bridge, window)
    qtbot.addWidget(dialog)
    dialog.threads.setCurrentIndex(dialog.threads.findData(2))
    dialog.context.setValue(384)  # the tiny model allows 512
    dialog.theme.setCurrentIndex(dialog.theme.findData("dark"))
    with qtbot.waitSignal(window.model_ready, timeout=60000) as blocker:
        window.apply_settings(dialog.result_settings())
    assert blocker.args[0].threads == 2
    assert engine.model.threads == 2
    assert engine.model.session.get_session_options().intra_op_num_threads == 2
    assert engine.context_limit == 384
    assert window.colors.pygments_style == "monokai"
    from qwen_desktop.storage.settings import load_settings

    saved, _ = load_settings(home / "settings.json")
    assert (saved.threads, saved.context_limit, saved.theme) == (2, 384, "dark")
    result = send(qtbot, window, "Still answering?")
    assert result.reason in ("stop", "length")


def test_conversations_survive_a_new_window(settings_for, make_window, tiny_model_dir, qtbot):
    settings_for(model_path=str(tiny_model_dir))
    window = make_window()
    first = send(qtbot, window, "Remember me")
    window.close()
    again = make_window()
    assert again.sidebar.titles() == ["Remember me"]
    texts = [v.text for v in again.chat_view.views]
    assert texts == ["Remember me", first.text]


def test_closing_during_an_answer_saves_the_partial_answer(
    settings_for, make_window, tiny_model_dir, qtbot, home
):
    settings_for(model_path=str(tiny_model_dir), temperature=0.0, max_tokens=5000, context_limit=16384)
    window = make_window()
    window.composer.setPlainText("Keep going")
    window.send()
    message_id = window.streaming_id
    qtbot.waitUntil(lambda: window.chat_view.view_of(message_id).text != "", timeout=30000)
    window.close()
    assert not window.bridge.worker_thread.isRunning()
    with ChatStore(home / "chats.sqlite3") as store:
        message = store.get_message(message_id)
    assert message.status == "cancelled"
    assert message.content


def test_welcome_page_when_there_is_no_model(make_window, home):
    window = make_window(wait_ready=False)
    assert window.pages.currentWidget() is window.welcome
    assert window.welcome.import_button.isVisible()
    assert not window.send_button.isEnabled()
    assert not window.composer.isVisible()


def test_missing_model_shows_a_banner_and_chats_stay_readable(settings_for, make_window, home, qtbot):
    with ChatStore(home / "chats.sqlite3") as store:
        conv = store.create_conversation("Old chat")
        store.add_message(conv.id, "user", "An old question")
        store.add_message(conv.id, "assistant", "An **old** answer")
    settings_for(model_path=str(home / "models" / "deleted-model"))
    window = make_window(wait_ready=False)
    qtbot.waitUntil(window.banner.isVisible, timeout=30000)
    assert "deleted-model" in window.banner_label.text()
    assert window.banner_settings.isVisible()
    assert window.pages.currentWidget() is window.chat_view
    assert [v.body.toPlainText().strip() for v in window.chat_view.views] == [
        "An old question",
        "An old answer",
    ]
    assert not window.send_button.isEnabled()
    window.new_conversation()  # still usable
    assert window.conversation_id is None and window.chat_view.views == []
    assert window.sidebar.titles() == ["Old chat"]


def test_failed_answer_is_marked_and_can_be_retried(ready_window, qtbot):
    window = ready_window
    engine = window.bridge.engine
    window.bridge.host._engine = None  # the model went away between two answers
    result = send(qtbot, window, "Will this fail?")
    assert result.reason == "error"
    answer = window.store.path(window.conversation_id)[-1]
    assert answer.status == "failed"
    view = window.chat_view.last_answer()
    assert "failed" in view.status_label.text()
    assert view.regenerate_button.text() == "Retry"
    assert window.banner.isVisible()
    window.bridge.host._engine = engine
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as blocker:
        click_action(qtbot, window.chat_view, view, "Retry")
    assert blocker.args[0].reason in ("stop", "length")
    path = window.store.path(window.conversation_id)
    assert path[-1].status == "complete"
    assert [m.status for m in window.store.siblings(path[-1].id)] == ["failed", "complete"]


def test_context_meter_counts_and_warns_before_turns_drop(
    settings_for, make_window, tiny_model_dir, home, qtbot
):
    with ChatStore(home / "chats.sqlite3") as store:
        conv = store.create_conversation("Long chat")
        for i in range(12):
            store.add_message(conv.id, "user", f"Question {i}: " + "words " * 20)
            store.add_message(conv.id, "assistant", f"Answer {i}: " + "more words " * 20)
    settings_for(model_path=str(tiny_model_dir), context_limit=256, max_tokens=64)
    window = make_window()
    qtbot.waitUntil(lambda: window.last_plan is not None, timeout=30000)
    plan = window.last_plan
    assert window.meter.maximum() == 256
    # the meter counts the prompt and the room kept for the reply, the numbers that decide what drops: it
    # shows the context nearly full when the warning says the oldest messages drop (it once said 60 / 256)
    assert window.meter.value() == plan.used + plan.reserved == int(window.meter.text().split(" /")[0])
    assert plan.reserved == 64 and window.meter.value() > 256 - 40
    assert "/ 256 tokens" in window.meter.text()
    assert "history" in window.meter.toolTip() and "reply: 64" in window.meter.toolTip()
    assert window.context_warning.isVisible()
    assert "oldest" in window.context_warning.text()


def test_the_meter_is_counted_off_the_gui_thread_and_follows_the_typing(
    settings_for, make_window, tiny_model_dir, home, qtbot
):
    import threading

    with ChatStore(home / "chats.sqlite3") as store:
        conv = store.create_conversation("Long chat")
        for i in range(100):
            store.add_message(conv.id, "user", f"Question {i}: " + "words " * 20)
            store.add_message(conv.id, "assistant", f"Answer {i}: " + "more words " * 20)
    settings_for(model_path=str(tiny_model_dir), context_limit=8192, max_tokens=64)
    window = make_window()
    engine = window.bridge.engine
    counted_on = []
    real_plan = engine.plan

    def recording_plan(messages, max_tokens):
        counted_on.append(threading.current_thread().name)
        return real_plan(messages, max_tokens)

    engine.plan = recording_plan
    qtbot.waitUntil(lambda: window.last_plan is not None, timeout=30000)
    before = window.last_plan.used
    qtbot.keyClicks(window.composer, "And one more question about words")
    qtbot.waitUntil(
        lambda: window.last_plan.messages[-1]["content"] == "And one more question about words", timeout=30000
    )
    # the meter counts the draft: the plan shown is the chat's plus the typed message (which may push older
    # turns out: they leave in steps, so the count can go down as well as up)
    sent = window.prompt_messages(window.store.path(conv.id))
    sent.append({"role": "user", "content": "And one more question about words"})
    assert window.last_plan.used == real_plan(sent, 64).used != before
    assert window.meter.value() == window.last_plan.used + window.last_plan.reserved
    # counted by the plan counter (the host reads the draft ahead too); never on the GUI thread
    assert "plan-counter" in counted_on and threading.main_thread().name not in counted_on


def test_ui_stays_responsive_during_a_256_token_answer(
    settings_for, make_window, tiny_model_dir, qtbot, tmp_path
):
    import time

    folder = never_stopping_copy(tiny_model_dir, tmp_path)  # the answer always runs 256 tokens
    # Sampled, not greedy: greedy on the tiny model drafts with prompt lookup and ends in a blink.
    settings_for(model_path=str(folder), temperature=0.7, seed=1, max_tokens=256, system_prompt="")
    window = make_window()
    ticks = []
    timer = QTimer()
    timer.setInterval(10)
    timer.timeout.connect(lambda: ticks.append(time.perf_counter()))
    window.composer.setPlainText("Write a long story")
    timer.start()
    with qtbot.waitSignal(window.answer_finished, timeout=60000) as blocker:
        window.send()
    timer.stop()
    gaps = [b - a for a, b in itertools.pairwise(ticks)]
    longest = max(gaps) * 1000
    result = blocker.args[0]
    print(
        f"\nUI latency: longest gap of a 10 ms timer during a {result.stats.generated_tokens}-token answer "
        f"({result.stats.decode_tps:.0f} tokens/s): {longest:.1f} ms over {len(ticks)} ticks"
    )
    assert result.stats.generated_tokens == 256
    assert longest < 250


def test_first_model_from_the_models_page_is_used_at_once(make_window, home, tiny_gguf, qtbot, monkeypatch):
    from qwen_desktop.library.registry import Registry
    from qwen_desktop.ui.models_dialog import ModelsDialog

    window = make_window(wait_ready=False)
    assert window.pages.currentWidget() is window.welcome
    Registry(home / "models").import_model(tiny_gguf)  # as the page's Import would, on its own thread
    monkeypatch.setattr(ModelsDialog, "exec", lambda dialog: 0)  # the user closes the page
    with qtbot.waitSignal(window.model_ready, timeout=60000):
        window.welcome.more_button.click()  # "More models…": the models page
    assert window.pages.currentWidget() is window.chat_view
    assert window.composer.isVisible()
    assert window.settings.model_path == str(home / "models" / "tiny")
    # Threads are "Auto" on a first start: all cores, and the window answers at once (the speed of each
    # count is measured later, at idle: tests/ui/test_auto_threads.py).
    assert window.send_button.isEnabled() and not window._sweeping
    assert window.bridge.engine.model.threads == (os.cpu_count() or 1)


@pytest.mark.qt_log_ignore("This plugin does not support (raise|grabbing the keyboard|propagateSizeHints)")
def test_settings_import_is_the_models_page_import(ready_window, qtbot, tiny_gguf, home, monkeypatch):
    """Settings' "Import from disk…" > "GGUF file…" runs the Models page's import: its file dialog, its
    install dialog with build progress, the switch to the new model; back in Settings the model is shown."""
    from PySide6.QtWidgets import QDialogButtonBox, QFileDialog

    from qwen_desktop.ui.models_dialog import ModelsDialog
    from qwen_desktop.ui.settings_dialog import SettingsDialog
    from tests.ui.test_sidebar import choose_in_next_menu

    window = ready_window
    asked: list[object] = []

    def pick_file(parent, title, *args, **kwargs):
        asked.append((type(parent), title))
        return str(tiny_gguf), ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", pick_file)
    seen: dict[str, object] = {}
    stages: list[str] = []

    def in_settings():
        settings = next(
            w for w in QApplication.topLevelWidgets() if isinstance(w, SettingsDialog) and w.isVisible()
        )
        seen["settings"] = settings
        seen["offered"] = choose_in_next_menu(qtbot, "GGUF file…")
        QTimer.singleShot(0, in_models)
        try:
            qtbot.mouseClick(
                settings.import_button, Qt.MouseButton.LeftButton
            )  # the menu opens after the click
            qtbot.waitUntil(lambda: "installed" in seen and window._models_dialog is None, timeout=60000)
            seen["shown"] = settings.model.currentData()
        finally:  # a failure above still closes Settings, so the test ends
            ok = settings.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)
            qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)

    def in_models():
        models = window._models_dialog
        if not isinstance(models, ModelsDialog) or models.download_dialog is None:
            QTimer.singleShot(20, in_models)
            return
        install = models.download_dialog
        seen["install"] = install
        install.task.build_progress.connect(lambda stage, done, total: stages.append(stage))
        try:
            qtbot.waitUntil(
                lambda: not install.isVisible(), timeout=50000
            )  # installed, loaded, closed itself
            seen["installed"] = [m.name for m in models.installed]
        finally:
            qtbot.mouseClick(models.close_button, Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, in_settings)
    qtbot.mouseClick(window.sidebar.settings_button, Qt.MouseButton.LeftButton)
    assert asked == [(ModelsDialog, "Import a GGUF file")]  # the Models page's own file dialog
    assert seen["offered"] == [["GGUF file…", "Hugging Face folder or model folder…"]]
    assert seen["install"].source == tiny_gguf and stages and stages[-1] == "done"
    assert seen["installed"] == ["tiny"]
    folder = home / "models" / "tiny"
    assert seen["shown"] == str(folder)
    assert window.model_info.folder == folder and window.settings.model_path == str(folder)
    assert not any(isinstance(w, SettingsDialog) and w.isVisible() for w in QApplication.topLevelWidgets())


def test_run_app_opens_the_window_offline_and_exits_cleanly(home, tiny_model_dir, settings_for):
    settings_for(model_path=str(tiny_model_dir))
    code = (
        "import socket\n"
        "calls = []\n"
        "real_connect = socket.socket.connect\n"
        "def connect(self, address):\n"
        "    calls.append(address)\n"
        "    return real_connect(self, address)\n"
        "socket.socket.connect = connect\n"
        "socket.socket.connect_ex = lambda self, address: calls.append(address) or 1\n"
        "import atexit\n"
        "atexit.register(lambda: print('network:', calls, flush=True))\n"
        "from PySide6.QtCore import QTimer\n"
        "from PySide6.QtWidgets import QApplication\n"
        "app = QApplication([])\n"
        "def check():\n"
        "    shown = [w.windowTitle() for w in app.topLevelWidgets() if w.isVisible()]\n"
        "    print('shown:', shown, flush=True)\n"
        "    app.closeAllWindows()\n"
        "QTimer.singleShot(3000, check)\n"
        "from qwen_desktop.ui.app import run_app\n"
        "raise SystemExit(run_app())\n"
    )
    r = run_app_process(code, home)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "shown: ['Qwen Desktop']" in r.stdout
    assert "network: []" in r.stdout, "nothing may touch the network at start-up"


def test_closing_the_app_mid_answer_leaves_no_error_and_keeps_the_answer(
    settings_for, tiny_model_dir, home, tmp_path
):
    """The real app in its own process, as a user runs it: type, Enter, close the window while the answer is
    written. Nothing may go wrong on the way out (a slot of a deleted object, a thread left running), which
    only shows on stderr, after the test's own checks in this process would have passed."""
    settings_for(
        model_path=str(never_stopping_copy(tiny_model_dir, tmp_path)),
        temperature=0.0,
        max_tokens=5000,
        context_limit=16384,
    )
    code = (
        "import sys\n"
        "from PySide6.QtCore import Qt, QTimer\n"
        "from PySide6.QtTest import QTest\n"
        "from PySide6.QtWidgets import QApplication\n"
        "from qwen_desktop.ui.main_window import MainWindow\n"
        "app = QApplication([])\n"
        "def start():\n"
        "    window = next(w for w in app.topLevelWidgets() if isinstance(w, MainWindow))\n"
        "    if window.model_info is None:\n"
        "        QTimer.singleShot(50, start)\n"
        "        return\n"
        "    QTest.keyClicks(window.composer, 'Keep going')\n"
        "    QTest.keyClick(window.composer, Qt.Key.Key_Return)\n"
        "    def close_when_written():\n"
        "        view = window.chat_view.view_of(window.streaming_id) if window.streaming_id else None\n"
        "        if view is None or len(view.text) < 20:\n"
        "            QTimer.singleShot(10, close_when_written)\n"
        "            return\n"
        "        print('closing at', len(view.text), 'characters, streaming', window.streaming_id, flush=True)\n"
        "        window.close()  # what the title bar's close button does: closeEvent, then the app quits\n"
        "    close_when_written()\n"
        "QTimer.singleShot(0, start)\n"
        "from qwen_desktop.ui.app import run_app\n"
        "raise SystemExit(run_app())\n"
    )
    r = run_app_process(code, home, "-X", "dev")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "closing at" in r.stdout, r.stdout + r.stderr[-2000:]
    problems = [
        line
        for line in r.stderr.splitlines()
        if line.strip() and "This plugin does not support" not in line  # offscreen Qt's, for any window
    ]
    assert problems == [], r.stderr[-3000:]
    message_id = int(r.stdout.split("streaming")[-1].split()[0])
    with ChatStore(home / "chats.sqlite3") as store:
        answer = store.get_message(message_id)
        chat = store.path(answer.conversation_id)
    assert [m.role for m in chat] == ["user", "assistant"] and chat[0].content == "Keep going"
    assert answer.status == "cancelled" and len(answer.content) >= 20  # the partial answer, kept


def test_an_unusable_database_still_opens_the_window(settings_for, make_window, home, tiny_model_dir, qtbot):
    import sqlite3

    conn = sqlite3.connect(home / "chats.sqlite3")
    conn.execute("PRAGMA user_version = 999")  # written by a newer version of the app
    conn.commit()
    conn.close()
    settings_for(model_path=str(tiny_model_dir))
    window = make_window()
    assert window.banner.isVisible()
    assert "newer version" in window.banner_label.text()
    result = send(qtbot, window, "Does chatting still work?")
    assert result.reason in ("stop", "length")


def test_the_question_is_read_ahead_while_it_is_typed(qtbot, settings_for, make_window, tiny_model_dir):
    settings_for(model_path=str(tiny_model_dir), temperature=0.0, max_tokens=20)
    window = make_window()
    send(qtbot, window, "Hello there")
    read = []
    window.bridge.read_ahead_done.connect(lambda request, held: read.append((request, held)))
    qtbot.keyClicks(window.composer, "What is the capital of")
    # the meter's throttle reads the draft at once and then at most every 250 ms, ending with the whole
    qtbot.waitUntil(lambda: bool(read) and read[-1][0] == window.bridge._next_read_ahead, timeout=30000)
    engine = window.bridge.engine
    history = window.prompt_messages(window.store.path(window.conversation_id))
    draft = engine.plan([*history, {"role": "user", "content": "What is the capital of"}], 20).prompt
    assert read[-1][1] == len(draft)
    assert engine.model.tokens == draft
    qtbot.keyClicks(window.composer, " France?")
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as blocker:
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    stats = blocker.args[0].stats
    sent = engine.plan([*history, {"role": "user", "content": "What is the capital of France?"}], 20).prompt
    assert stats.prompt_tokens == len(sent)
    assert stats.reused_tokens >= common_prefix(draft, sent) > len(sent) - 20


def test_status_bar_says_writing_with_the_speed_then_ready(
    qtbot, settings_for, make_window, tiny_model_dir, tmp_path, paced_model
):
    import re
    import time

    paced_model(0.003)  # the context's ~500 tokens take ~1.5 s on any machine, not 70 ms on a quiet one
    folder = never_stopping_copy(tiny_model_dir, tmp_path)
    settings_for(model_path=str(folder), temperature=0.0, max_tokens=5000, context_limit=16384)
    window = make_window()
    # the answer takes ~1.5 s: the speed is shown every 40 ms here, not every half second
    window.STATUS_INTERVAL = 0.04
    ready = window.status_label.text()
    assert ready == f"Ready · {window.model_info.display_name} · 1 thread"
    shown: list[str] = []
    pieces = []
    window.bridge.piece.connect(lambda _job, _text, tokens: pieces.append(tokens))
    watch = QTimer(window)

    def look() -> None:
        if shown[-1:] != [window.status_label.text()]:
            shown.append(window.status_label.text())

    watch.timeout.connect(look)
    watch.start(5)
    qtbot.keyClicks(window.composer, "Go on and on")
    started = time.perf_counter()
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len([t for t in shown if "tokens/s" in t]) >= 2, timeout=30000)
    with qtbot.waitSignal(window.answer_finished, timeout=5000) as stopped:
        qtbot.keyClick(window, Qt.Key.Key_Escape)  # Stop
    assert stopped.args[0].reason == "cancelled"
    seconds = time.perf_counter() - started
    watch.stop()
    writing = [t for t in shown if t.startswith("Writing…")]
    assert writing[0] == "Writing…"  # before the speed is known
    assert all(re.fullmatch(r"Writing… \d+ tokens/s", t) for t in writing[1:]), writing
    # throttled: the speed changes at most once an interval, though the pieces come once a frame
    assert len(writing) - 1 <= seconds / window.STATUS_INTERVAL < len(pieces)
    assert window.status_label.text() == ready  # after Stop

    window.settings.max_tokens = 20  # an answer that ends by itself
    qtbot.keyClicks(window.composer, "Short one")
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as done:
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert done.args[0].reason == "length"
    assert window.status_label.text() == ready  # after the end of an answer


def test_an_edited_message_is_marked_edited_and_stays_so(settings_for, make_window, tiny_model_dir, qtbot):
    settings_for(model_path=str(tiny_model_dir))
    window = make_window()
    send(qtbot, window, "First question")
    view = window.chat_view.views[0]
    assert view.edited_label is None  # as sent
    click_action(qtbot, window.chat_view, view, "Edit and resend")
    window.composer.selectAll()
    qtbot.keyClicks(window.composer, "First question, edited")
    with qtbot.waitSignal(window.answer_finished, timeout=30000):
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    edited = window.chat_view.views[0]
    assert edited.text == "First question, edited"
    assert edited.edited_label is not None and edited.edited_label.text() == "edited"
    assert edited.edited_label.isVisibleTo(window)
    assert "earlier version" in edited.edited_label.toolTip()
    # the first version is the one first sent: no mark; the mark comes from the stored versions
    click_action(qtbot, window.chat_view, edited, "Previous version")
    first = window.chat_view.views[0]
    assert first.text == "First question" and first.edited_label is None
    click_action(qtbot, window.chat_view, first, "Next version")
    window.close()
    again = make_window()
    assert again.chat_view.views[0].edited_label is not None  # after a restart too
