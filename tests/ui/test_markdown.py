"""Untrusted model output renders as inert text; Markdown, code and tables render as such."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication, QTextImageFormat

from qwen_desktop.storage.chats import ChatStore
from qwen_desktop.ui.markdown_render import render_markdown
from qwen_desktop.worker import emit
from tests.ui.test_links import answer_box

MALICIOUS = """Look here <script>alert('x')</script> and <b onclick="steal()">bold</b>.

<img src="http://tracker.example/pixel.png">

![chart](https://tracker.example/chart.png)

[click me](javascript:alert(1)) and [a file](file:///etc/passwd) and [docs](https://qwen.ai/docs)

<iframe src="http://evil.example"></iframe>
"""


def test_render_keeps_html_as_text_and_drops_unsafe_links():
    html = render_markdown(MALICIOUS).html
    assert "<script" not in html and "&lt;script&gt;" in html
    assert "<img" not in html and "<iframe" not in html
    assert 'href="javascript' not in html and 'href="file' not in html
    assert 'href="https://qwen.ai/docs"' in html
    assert "[image: chart]" in html


def test_code_blocks_are_highlighted_with_inline_styles_and_copyable():
    text = "Here:\n\n```python\ndef f(x):\n    return x < 2\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    rendered = render_markdown(text)
    assert rendered.code_blocks == ["def f(x):\n    return x < 2\n"]
    assert 'href="copy:0"' in rendered.html
    assert "style=" in rendered.html and "class=" not in rendered.html
    assert '<table border="1"' in rendered.html


def test_an_unfinished_fence_shows_as_code_while_streaming():
    rendered = render_markdown("Start:\n```js\nlet a = 1", streaming=True)
    assert rendered.code_blocks == ["let a = 1\n"]


@pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")
def test_malicious_answer_in_the_window_is_inert(make_window, home, qtbot, monkeypatch):
    with ChatStore(home / "chats.sqlite3") as store:
        conv = store.create_conversation("Suspicious")
        store.add_message(conv.id, "user", "Show me something")
        store.add_message(conv.id, "assistant", MALICIOUS + "\n```sh\nrm -rf /tmp/x\n```\n")
    window = make_window(wait_ready=False)
    view = window.chat_view.last_answer()
    body = view.body
    shown = body.toPlainText()
    assert "<script>alert('x')</script>" in shown
    assert '<img src="http://tracker.example/pixel.png">' in shown
    doc_html = body.document().toHtml()
    assert "javascript" not in doc_html.replace("javascript:alert(1)", "")  # never a link target
    assert 'href="javascript' not in doc_html and "<img" not in doc_html
    images = []
    block = body.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            if it.fragment().charFormat().isImageFormat():
                images.append(QTextImageFormat(it.fragment().charFormat()).name())
            it += 1
        block = block.next()
    assert images == []
    assert body.resource_requests == []
    # Even when asked directly, the view fetches nothing.
    assert body.loadResource(2, QUrl("http://tracker.example/pixel.png")) is None
    opened = []
    monkeypatch.setattr("qwen_desktop.ui.chat_view.QDesktopServices.openUrl", opened.append)
    emit(body.anchorClicked, QUrl("javascript:alert(1)"))
    emit(body.anchorClicked, QUrl("file:///etc/passwd"))
    assert opened == []
    # An https link opens only after the user says so (tests/ui/test_links.py clicks it).
    seen = answer_box(qtbot, "Open")
    emit(body.anchorClicked, QUrl("https://qwen.ai/docs"))
    assert seen and [u.toString() for u in opened] == ["https://qwen.ai/docs"]
    emit(body.anchorClicked, QUrl("copy:0"))
    assert QGuiApplication.clipboard().text() == "rm -rf /tmp/x\n"


def test_a_stored_answer_that_once_bricked_the_app_opens_normally(make_window, home, qtbot):
    """Issue 25 defect 1: ``"- " * 800 + "a"`` raised RecursionError at every start. Now the window opens,
    shows it as plain text with a note, and the chat list and the other answers are normal."""
    with ChatStore(home / "chats.sqlite3") as store:
        conv = store.create_conversation("\u202etxt.exe")
        store.add_message(conv.id, "user", "Nest")
        store.add_message(conv.id, "assistant", "- " * 800 + "a")
    window = make_window(wait_ready=False)
    shown = window.chat_view.last_answer().body.toPlainText()
    assert "Shown as plain text" in shown and shown.rstrip().endswith("- - - a")
    # Issue 22 defect 3: a title cannot reverse itself in the chat list either.
    assert window.sidebar.titles() == ["⟨U+202E⟩txt.exe"]
