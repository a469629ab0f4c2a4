"""Links in an answer open nothing by themselves (issue 25 defect 14, the link part): a click on an http(s)
or mailto link asks first, showing the real target, and only then hands it to the OS; a mailto link loses
its query (``?attach=/etc/passwd``); other schemes are not links at all. The tests click the real view."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor

from qwen_desktop.storage.chats import ChatStore
from tests.ui.boxes import answer_box

ANSWER = (
    "Log in at [https://bank.example](https://evil.example/login) or write to "
    "[support](mailto:help@evil.example?attach=/etc/passwd&body=hi).\n\n"
    "Also [run me](javascript:alert(1)) and [a file](file:///etc/passwd).\n"
)
pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


@pytest.fixture
def answer_view(home, settings_for, make_window, tiny_model_dir, qtbot, monkeypatch):
    """A window showing one stored answer with hostile links; what reaches the OS is recorded."""
    with ChatStore(home / "chats.sqlite3") as store:
        conv = store.create_conversation("Links")
        store.add_message(conv.id, "user", "Where do I log in?")
        store.add_message(conv.id, "assistant", ANSWER)
    settings_for(model_path=str(tiny_model_dir))
    window = make_window()
    window.open_conversation(conv.id)

    def shown() -> bool:  # the view of the answer is rebuilt when the chat opens: look it up each time
        return window.chat_view.last_answer().body.isVisible()

    qtbot.waitUntil(shown, timeout=10000)
    opened: list[str] = []
    monkeypatch.setattr(
        "qwen_desktop.ui.chat_view.QDesktopServices.openUrl", lambda url: opened.append(url.toString())
    )
    return window.chat_view.last_answer().body, opened


def click_text(qtbot, body, text: str) -> None:
    """Click the middle of ``text`` where the message view shows it."""
    found = body.document().find(text)
    assert not found.isNull(), text
    middle = QTextCursor(body.document())
    middle.setPosition((found.selectionStart() + found.selectionEnd()) // 2)
    qtbot.mouseClick(body.viewport(), Qt.MouseButton.LeftButton, pos=body.cursorRect(middle).center())


def test_a_link_click_asks_first_and_shows_the_real_target(answer_view, qtbot):
    body, opened = answer_view
    for how in ("esc", "enter", "Cancel"):  # Enter is Cancel too: only a deliberate Open opens
        seen = answer_box(qtbot, how)
        click_text(qtbot, body, "https://bank.example")
        assert len(seen) == 1 and "https://evil.example/login" in seen[0]
        assert opened == []
    seen = answer_box(qtbot, "Open")
    click_text(qtbot, body, "https://bank.example")
    assert seen and opened == ["https://evil.example/login"]


def test_mailto_loses_its_query_and_other_schemes_are_not_links(answer_view, qtbot):
    body, opened = answer_view
    seen = answer_box(qtbot, "Open")
    click_text(qtbot, body, "support")
    assert seen and "attach" not in seen[0]
    assert opened == ["mailto:help@evil.example"]
    for text in ("run me", "a file"):
        seen = answer_box(qtbot, "esc", tries=10)
        click_text(qtbot, body, text)
        qtbot.wait(300)
        assert seen == [] and opened == ["mailto:help@evil.example"], text


def test_hovering_a_link_shows_its_target(answer_view, qtbot):
    body, _ = answer_view
    found = body.document().find("https://bank.example")
    middle = QTextCursor(body.document())
    middle.setPosition((found.selectionStart() + found.selectionEnd()) // 2)
    qtbot.mouseMove(body.viewport(), body.cursorRect(middle).center())
    qtbot.waitUntil(lambda: body.toolTip() == "https://evil.example/login", timeout=5000)
