"""The message box, driven by clicks, key presses and real drop events: it grows, Send turns into Stop, and text
files are attached (by the button or a drop), counted on the meter and sent under their name; binary and
oversized files are refused in one line with the draft unchanged. Real window, the tiny model."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from qwen_desktop.ui.attachments import MAX_ATTACHMENT_BYTES
from qwen_desktop.ui.composer import MAX_LINES
from tests.ui.test_first_run import drop


def pick(monkeypatch, path):
    """The native file dialog answers ``path`` (the only thing patched)."""
    asked = []

    def answer(*args, **kwargs):
        asked.append(args)
        return str(path), ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", answer)
    return asked


def test_the_box_grows_with_its_text_then_scrolls(ready_window, qtbot):
    composer = ready_window.composer
    one = composer.height()
    qtbot.keyClicks(composer, "first")
    assert composer.height() == one
    heights = [one]
    for i in range(MAX_LINES + 3):
        qtbot.keyClick(composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        qtbot.keyClicks(composer, f"line {i}")
        heights.append(composer.height())
    assert heights[1] > heights[0] and heights == sorted(heights)
    assert composer.lines_shown() == MAX_LINES
    assert heights[-1] == heights[MAX_LINES - 1]  # stops growing at MAX_LINES lines
    assert composer.verticalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAsNeeded
    composer.clear()
    assert composer.height() == one


def test_send_turns_into_stop_while_answering_and_stops_it(qtbot, settings_for, make_window, tiny_model_dir):
    settings_for(model_path=str(tiny_model_dir), temperature=0.0, max_tokens=5000, context_limit=16384)
    window = make_window()
    button = window.send_button
    assert button.text() == "Send" and button.accessibleName() == "Send message"
    qtbot.keyClicks(window.composer, "Go on and on")
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert window.bridge.busy
    assert button.text() == "Stop" and button.accessibleName() == "Stop the answer" and button.isEnabled()
    qtbot.waitUntil(lambda: window.chat_view.view_of(window.streaming_id).text != "", timeout=30000)
    with qtbot.waitSignal(window.answer_finished, timeout=5000) as blocker:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert blocker.args[0].reason == "cancelled"
    assert button.text() == "Send"
    assert window.store.path(window.conversation_id)[-1].status == "cancelled"


def test_a_file_attached_with_the_button_is_counted_and_sent_under_its_name(
    ready_window, qtbot, monkeypatch, tmp_path
):
    window = ready_window
    source = tmp_path / "reverse.py"
    source.write_text("def reverse(xs):\n    return xs[::-1]\n" * 4)  # the tiny model's context is small
    asked = pick(monkeypatch, source)
    qtbot.keyClicks(window.composer, "What does this do?")
    qtbot.waitUntil(lambda: window.last_plan is not None and window.last_plan.history_tokens > 0)
    before = window.meter.value()
    qtbot.mouseClick(window.composer_box.attach_button, Qt.MouseButton.LeftButton)
    assert len(asked) == 1
    assert not window.composer_box.notice.isVisible(), window.composer_box.notice.text()
    chips = window.composer_box.chip_widgets()
    assert [c.label.text() for c in chips] == ["reverse.py · 147 B"]
    assert window.composer.toPlainText() == "What does this do?"  # the text is not touched
    qtbot.waitUntil(lambda: window.meter.value() > before + 50, timeout=5000)  # the file counts
    with qtbot.waitSignal(window.answer_finished, timeout=30000):
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    sent = window.store.path(window.conversation_id)[-2]
    assert sent.role == "user"
    assert sent.content == (
        "What does this do?\n\nreverse.py\n```python\n" + source.read_text().rstrip("\n") + "\n```"
    )
    assert window.composer_box.attachments == [] and not window.composer_box.chips.isVisible()


def test_a_text_file_dropped_on_the_box_is_attached_and_can_be_taken_off(ready_window, qtbot, tmp_path):
    window = ready_window
    note = tmp_path / "todo.md"
    note.write_text("- milk\n- 面包\n", encoding="utf-8")
    qtbot.keyClicks(window.composer, "Sort this list")
    drop(window, window.composer, note)
    assert window.install_dialog is None
    assert [a.name for a in window.composer_box.attachments] == ["todo.md"]
    assert window.composer_box.message_text() == "Sort this list\n\ntodo.md\n```markdown\n- milk\n- 面包\n```"
    chip = window.composer_box.chip_widgets()[0]
    assert chip.remove_button.accessibleName() == "Remove todo.md"
    qtbot.mouseClick(chip.remove_button, Qt.MouseButton.LeftButton)
    assert window.composer_box.attachments == []
    assert window.composer_box.message_text() == "Sort this list"


def test_binary_and_oversized_files_are_refused_and_the_draft_stays(
    ready_window, qtbot, monkeypatch, tmp_path
):
    window = ready_window
    box = window.composer_box
    good = tmp_path / "a.txt"
    good.write_text("keep me")
    drop(window, window.composer, good)
    qtbot.keyClicks(window.composer, "draft")
    draft = box.message_text()
    image = tmp_path / "photo.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    drop(window, window.composer, image)
    assert box.notice.isVisible()
    assert box.notice.text() == "photo.png is not a text file (it holds binary data), so it was not attached."
    assert box.message_text() == draft and len(box.attachments) == 1
    big = tmp_path / "big.log"
    big.write_bytes(b"x" * (MAX_ATTACHMENT_BYTES + 10))
    pick(monkeypatch, big)
    qtbot.mouseClick(box.attach_button, Qt.MouseButton.LeftButton)
    assert box.notice.text() == "big.log is too large to attach (201 KB; at most 200 KB)."
    assert box.message_text() == draft and len(box.attachments) == 1
    latin1 = tmp_path / "old.csv"
    latin1.write_bytes("name;city\nJosé;Málaga\n".encode("latin-1"))
    drop(window, window.composer, latin1)
    assert box.notice.text() == "old.csv is not UTF-8 text, so it was not attached."
    assert box.message_text() == draft


def test_a_file_longer_than_the_context_is_refused(
    qtbot, settings_for, make_window, tiny_model_dir, tmp_path
):
    settings_for(model_path=str(tiny_model_dir), context_limit=256, max_tokens=64)
    window = make_window()
    long_file = tmp_path / "long.txt"
    long_file.write_text("many different words in a row " * 200)
    drop(window, window.composer, long_file)
    box = window.composer_box
    assert box.attachments == []
    assert box.notice.text().startswith("long.txt is too long for the context (")
    short = tmp_path / "short.txt"
    short.write_text("a few words")
    drop(window, window.composer, short)
    assert [a.name for a in box.attachments] == ["short.txt"] and not box.notice.isVisible()
