"""System-prompt presets, driven by clicks and key presses: a chat's preset is what the engine is asked with,
it is remembered per chat, new chats start with the last one chosen, and the user's own presets are added,
edited and deleted in their dialog. Real window, real worker, the tiny model."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from qwen_desktop.ui.presets import BUILTIN_PRESETS, PresetsDialog

# The offscreen platform cannot raise a popup or grab the keyboard for it; the list opens all the same.
pytestmark = pytest.mark.qt_log_ignore(
    "This plugin does not support (raise|grabbing the keyboard|propagateSizeHints)"
)

CODER = next(p for p in BUILTIN_PRESETS if p.id == "coder")
TRANSLATOR = next(p for p in BUILTIN_PRESETS if p.id == "translator")


def choose(qtbot, combo, text):
    """Open ``combo``'s list with a click and click the item ``text``."""
    qtbot.mouseClick(combo, Qt.MouseButton.LeftButton)
    view = combo.view()
    qtbot.waitUntil(view.isVisible)
    # a release this soon after the list opened is taken for the end of the opening click: wait it out
    qtbot.wait(QApplication.doubleClickInterval() + 50)
    index = combo.findText(text)
    assert index >= 0, [combo.itemText(i) for i in range(combo.count())]
    rect = view.visualRect(view.model().index(index, 0))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    qtbot.waitUntil(lambda: not view.isVisible())
    assert combo.currentText() == text


def submitted(window):
    """The message lists of the answers the window hands to the worker, as they are queued."""
    jobs = []
    window.bridge.request_answer.connect(lambda job: jobs.append(job.messages))
    return jobs


def ask(qtbot, window, text):
    window.composer.setPlainText(text)
    with qtbot.waitSignal(window.answer_finished, timeout=30000):
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)


def test_the_chosen_preset_is_the_system_prompt_the_engine_gets(ready_window, qtbot, home):
    window = ready_window
    jobs = submitted(window)
    combo = window.header.preset_combo
    assert combo.currentText() == "Assistant"
    assert [combo.itemText(i) for i in range(combo.count())] == [
        "Assistant",
        "Coder",
        "Translator (Chinese ↔ English)",
        "Concise",
    ]
    ask(qtbot, window, "Hello")
    assert jobs[-1][0] == {"role": "system", "content": window.settings.system_prompt}
    choose(qtbot, combo, "Coder")
    ask(qtbot, window, "Write a loop")
    assert jobs[-1][0] == {"role": "system", "content": CODER.prompt}
    conversation = window.store.get_conversation(window.conversation_id)
    assert (conversation.preset, conversation.system_prompt) == ("coder", CODER.prompt)
    assert json.loads((home / "settings.json").read_text())["preset"] == "coder"


def test_each_chat_keeps_its_preset_and_new_chats_take_the_last_one(
    settings_for, make_window, tiny_model_dir, qtbot
):
    settings_for(model_path=str(tiny_model_dir))
    window = make_window()
    jobs = submitted(window)
    combo = window.header.preset_combo
    ask(qtbot, window, "First chat")
    first = window.conversation_id
    choose(qtbot, combo, "Coder")
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)  # a new chat: Coder too
    assert window.conversation_id != first and combo.currentText() == "Coder"
    choose(qtbot, combo, "Translator (Chinese ↔ English)")
    ask(qtbot, window, "你好")
    assert jobs[-1][0]["content"] == TRANSLATOR.prompt
    second = window.conversation_id
    window.open_conversation(first)
    assert combo.currentText() == "Coder"
    ask(qtbot, window, "Back to the first")
    assert jobs[-1][0]["content"] == CODER.prompt
    window.close()
    again = make_window()  # remembered after a restart
    again.open_conversation(second)
    assert again.header.preset_combo.currentText() == "Translator (Chinese ↔ English)"
    again.open_conversation(first)
    assert again.header.preset_combo.currentText() == "Coder"


def in_dialog(qtbot, act):
    """Run ``act(dialog)`` on the presets dialog once it is open (it runs its own event loop). Returns a
    list that gets the dialog when ``act`` is done; a failure in ``act`` closes the dialog and is kept in
    the list for ``done`` to raise."""
    done = []

    def look():
        dialog = QApplication.activeModalWidget()
        if not isinstance(dialog, PresetsDialog):
            QTimer.singleShot(20, look)
            return
        try:
            act(dialog)
        except BaseException as exc:  # raised in a Qt callback: keep it for the test, do not hang in exec
            done.append(exc)
            dialog.reject()
            return
        done.append(dialog)

    QTimer.singleShot(0, look)
    return done


def finished(done):
    """The dialog's actions ran; re-raise what failed in them."""
    assert done, "the presets dialog did not open"
    if isinstance(done[0], BaseException):
        raise done[0]


def ok(qtbot, dialog):
    box = dialog.findChild(QDialogButtonBox)
    qtbot.mouseClick(box.button(QDialogButtonBox.StandardButton.Ok), Qt.MouseButton.LeftButton)


def test_your_own_preset_is_added_edited_and_deleted(ready_window, qtbot, home):
    window = ready_window
    jobs = submitted(window)

    def add(dialog):
        qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
        assert dialog.focusWidget() is dialog.name_edit and dialog.name_edit.selectedText() == "My preset"
        qtbot.keyClicks(dialog.name_edit, "Pirate")
        qtbot.mouseClick(dialog.prompt_edit, Qt.MouseButton.LeftButton)
        qtbot.keyClicks(dialog.prompt_edit, "Talk like a pirate.")
        ok(qtbot, dialog)

    done = in_dialog(qtbot, add)
    qtbot.mouseClick(window.header.edit_presets_button, Qt.MouseButton.LeftButton)
    finished(done)
    (mine,) = window.settings.presets
    assert (mine.name, mine.prompt) == ("Pirate", "Talk like a pirate.")
    saved = json.loads((home / "settings.json").read_text())["presets"]
    assert saved == [{"id": mine.id, "name": "Pirate", "prompt": "Talk like a pirate."}]
    combo = window.header.preset_combo
    choose(qtbot, combo, "Pirate")
    ask(qtbot, window, "Hello")
    assert jobs[-1][0]["content"] == "Talk like a pirate."

    def edit(dialog):
        assert dialog.list.currentItem().text() == "Pirate"
        dialog.prompt_edit.selectAll()
        qtbot.keyClicks(dialog.prompt_edit, "Talk like a polite pirate.")
        ok(qtbot, dialog)

    done = in_dialog(qtbot, edit)
    qtbot.mouseClick(window.header.edit_presets_button, Qt.MouseButton.LeftButton)
    finished(done)
    ask(qtbot, window, "Again")
    assert jobs[-1][0]["content"] == "Talk like a polite pirate."  # the chat follows its preset

    def delete(dialog):
        qtbot.mouseClick(dialog.delete_button, Qt.MouseButton.LeftButton)
        assert dialog.list.count() == 0 and not dialog.name_edit.isEnabled()
        ok(qtbot, dialog)

    done = in_dialog(qtbot, delete)
    qtbot.mouseClick(window.header.edit_presets_button, Qt.MouseButton.LeftButton)
    finished(done)
    assert window.settings.presets == ()
    assert combo.currentText() == "This chat's own prompt"  # the chat keeps the text it was using
    ask(qtbot, window, "Still a pirate?")
    assert jobs[-1][0]["content"] == "Talk like a polite pirate."
    window.activateWindow()  # shortcuts go to the active window; the dialog was it a moment ago
    qtbot.waitUntil(window.isActiveWindow)
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert combo.currentText() == "Assistant"  # the last choice is gone: new chats get the default


def test_cancel_keeps_the_presets_as_they_were(ready_window, qtbot):
    window = ready_window

    def add_then_cancel(dialog):
        qtbot.mouseClick(dialog.add_button, Qt.MouseButton.LeftButton)
        qtbot.keyClick(dialog, Qt.Key.Key_Escape)

    done = in_dialog(qtbot, add_then_cancel)
    qtbot.mouseClick(window.header.edit_presets_button, Qt.MouseButton.LeftButton)
    finished(done)
    assert window.settings.presets == ()


def test_a_settings_file_with_a_bad_preset_still_opens_with_the_good_ones(
    settings_for, make_window, tiny_model_dir, home
):
    settings_for(model_path=str(tiny_model_dir))
    data = json.loads((home / "settings.json").read_text())
    data["presets"] = [
        {"id": "custom-a", "name": "Haiku", "prompt": "Answer in a haiku."},
        {"id": "custom-b", "name": ["not", "text"], "prompt": "x"},
    ]
    data["preset"] = "custom-a"
    (home / "settings.json").write_text(json.dumps(data))
    window = make_window()
    assert window.banner.isVisible() and "presets" in window.banner_label.text()
    assert [p.name for p in window.settings.presets] == ["Haiku"]
    assert window.header.preset_combo.currentText() == "Haiku"
    assert window.system_prompt() == "Answer in a haiku."
