"""The sidebar, driven as a user drives it: Ctrl+K and typing, clicks on rows, right-clicks, the "⋯" button,
menu items, message box buttons. The one thing patched is the native file dialog (a path comes back)."""

from __future__ import annotations

import json
import sqlite3
import time

import pytest
from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtGui import QImage, QPainter
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QLineEdit, QMenu, QStyle, QStyleOptionViewItem

from qwen_desktop.storage.chats import HIT_END, HIT_START, ChatStore
from qwen_desktop.storage.export import export_json
from qwen_desktop.ui.sidebar import date_group, file_name_for, snippet_html, trim_snippet
from tests.ui.boxes import answer_box

DAY = 86400.0
# The offscreen platform says these for every real dialog or menu shown; they are not the app's doing.
pytestmark = pytest.mark.qt_log_ignore(
    "This plugin does not support propagateSizeHints",
    "This plugin does not support raise",
    "This plugin does not support grabbing the keyboard",
)


def make_chats(home, chats):
    """Store chats as (title, days since last activity, pinned, [messages]); returns their ids."""
    ids = []
    now = time.time()
    with ChatStore(home / "chats.sqlite3") as store:
        for title, days, pinned, messages in chats:
            conv = store.create_conversation(title)
            for n, text in enumerate(messages):
                store.add_message(conv.id, "user" if n % 2 == 0 else "assistant", text)
            if pinned:
                store.set_pinned(conv.id, True)
            ids.append((conv.id, now - days * DAY))
    conn = sqlite3.connect(home / "chats.sqlite3")
    with conn:
        conn.executemany("UPDATE conversations SET updated_at = ? WHERE id = ?", [(t, i) for i, t in ids])
    conn.close()
    return [i for i, _t in ids]


@pytest.fixture
def window_with_chats(home, settings_for, make_window, tiny_model_dir):
    """A window on the tiny model over stored chats: ``open(chats)`` returns (window, ids)."""

    def open_(chats):
        ids = make_chats(home, chats)
        settings_for(model_path=str(tiny_model_dir))
        return make_window(), ids

    return open_


def right_click(qtbot, window, item):
    """A right-click on a row, through the window (Qt turns it into a context-menu event)."""
    view = item.listWidget()
    pos = view.viewport().mapTo(window, view.visualItemRect(item).center())
    QTest.mouseMove(window.windowHandle(), pos)
    QTest.mouseClick(window.windowHandle(), Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, pos)


def click_row(qtbot, item):
    view = item.listWidget()
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.visualItemRect(item).center())


def choose_in_next_menu(qtbot, text):
    """When the next menu opens, click its item ``text``; returns the items it offered."""
    offered: list[list[str]] = []

    def pick():
        menu = QApplication.activePopupWidget()
        if not isinstance(menu, QMenu) or not menu.isVisible():
            QTimer.singleShot(20, pick)
            return
        offered.append([a.text() for a in menu.actions() if not a.isSeparator()])
        action = next(a for a in menu.actions() if a.text() == text)
        qtbot.mouseClick(menu, Qt.MouseButton.LeftButton, pos=menu.actionGeometry(action).center())

    QTimer.singleShot(0, pick)
    return offered


def from_chats_menu(qtbot, sidebar, text):
    """Click the bottom row's import/export button and its item ``text``; wait until it ran."""
    done: list[bool] = []
    offered = choose_in_next_menu(qtbot, text)
    qtbot.mouseClick(sidebar.chats_button, Qt.MouseButton.LeftButton)  # the menu opens once the click is over
    qtbot.waitUntil(lambda: bool(offered) and QApplication.activePopupWidget() is None)
    QTimer.singleShot(0, lambda: done.append(True))
    qtbot.waitUntil(lambda: bool(done))


# ----------------------------------------------------------------- pure parts


def test_date_groups_follow_local_calendar_days():
    noon = time.mktime((2025, 3, 12, 12, 0, 0, 0, 0, -1))
    midnight = time.mktime((2025, 3, 12, 0, 0, 1, 0, 0, -1))
    assert date_group(noon - 3600, noon) == "today"
    assert date_group(midnight - 2, noon) == "yesterday"  # two seconds before today began
    assert date_group(noon + DAY, noon) == "today"  # a clock set back: not lost in "older"
    assert date_group(noon - 2 * DAY, noon) == "week"
    assert date_group(noon - 7 * DAY, noon) == "week"
    assert date_group(noon - 8 * DAY, noon) == "older"


def test_snippets_are_escaped_and_the_hit_marked():
    raw = f"…<b>bold</b> \u202etxt.exe &amp; {HIT_START}<i>sky</i>{HIT_END} more"
    shown = snippet_html(raw, "#0969da")
    assert "<b>" not in shown and "<i>" not in shown
    assert "&lt;b&gt;bold&lt;/b&gt;" in shown and "&amp;amp;" in shown
    assert "\u202e" not in shown and "⟨U+202E⟩" in shown
    assert '<span style="color:#0969da; font-weight:600">&lt;i&gt;sky&lt;/i&gt;</span>' in shown
    long = "word " * 30 + HIT_START + "hit" + HIT_END
    assert trim_snippet(long).startswith("…") and trim_snippet(long).index(HIT_START) <= 30
    assert file_name_for('a/b: "c"\u202e', ".md") == "a b c.md"
    assert file_name_for("...", ".json") == "chat.json"


# ----------------------------------------------------------------- the list


def test_chats_are_grouped_by_last_activity_and_pinned_on_top(window_with_chats):
    window, ids = window_with_chats(
        [
            ("Old one", 40, False, ["q"]),
            ("Last week", 4, False, ["q"]),
            ("Yesterday's", 1, False, ["q"]),
            ("Pinned old", 90, True, ["q"]),
            ("Fresh", 0, False, ["q"]),
        ]
    )
    sidebar = window.sidebar
    assert sidebar.headers() == ["Pinned", "Today", "Yesterday", "Previous 7 days", "Older"]
    assert sidebar.titles() == ["Pinned old", "Fresh", "Yesterday's", "Last week", "Old one"]
    # the arrow keys skip the headers
    view = sidebar.chat_list
    view.setFocus()
    view.setCurrentItem(sidebar.item_of(ids[3]))  # the pinned one
    QTest.keyClick(view, Qt.Key.Key_Down)
    assert window.conversation_id == ids[4]
    QTest.keyClick(view, Qt.Key.Key_Down)  # over the "Yesterday" header
    assert window.conversation_id == ids[2]


def test_long_titles_elide_with_a_tooltip_and_never_scroll_sideways(window_with_chats):
    title = "A very long title that goes on and on about linked lists and their many costs " * 2
    window, ids = window_with_chats([(title.strip(), 0, False, ["q"])])
    view = window.sidebar.chat_list
    item = window.sidebar.item_of(ids[0])
    assert view.horizontalScrollBar().maximum() == 0
    assert view.horizontalScrollBarPolicy() == Qt.ScrollBarPolicy.ScrollBarAlwaysOff
    assert view.visualItemRect(item).width() <= view.viewport().width()
    assert item.toolTip() == title.strip()


def test_a_new_chat_is_stored_with_its_first_message(ready_window, qtbot):
    window = ready_window
    qtbot.mouseClick(window.sidebar.new_button, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(window.sidebar.new_button, Qt.MouseButton.LeftButton)
    assert window.store.list_conversations() == [] and window.sidebar.titles() == []
    assert window.sidebar.no_chats.isVisible() and "No chats yet" in window.sidebar.no_chats.text()
    window.composer.setPlainText("First words")
    with qtbot.waitSignal(window.answer_finished, timeout=60000):
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert window.sidebar.titles() == ["First words"]
    assert window.sidebar.chat_list.isVisible()
    qtbot.keyClick(window, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert window.conversation_id is None and window.chat_view.views == []
    assert len(window.store.list_conversations()) == 1


# ----------------------------------------------------------------- search


def test_ctrl_k_finds_a_word_from_an_old_chat_and_opens_it_at_the_hit(window_with_chats, qtbot):
    filler = "A paragraph about something else entirely, long enough to take some room. " * 12
    old_chat = [
        filler,
        filler,
        "Why is the sky blue?",
        "Rayleigh scattering: short waves scatter more.",
        filler,
        filler,
    ]
    window, ids = window_with_chats(
        [("Colours of the sky", 45, False, old_chat), ("Cats", 0, False, ["Names for a grey cat?", "Ash."])]
    )
    old = ids[0]
    assert window.conversation_id == ids[1]
    window.activateWindow()
    qtbot.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    sidebar = window.sidebar
    qtbot.waitUntil(sidebar.search.hasFocus)
    qtbot.keyClicks(sidebar.search, "rayleigh")
    qtbot.waitUntil(lambda: sidebar.results_list.isVisible() and sidebar.results_list.count() == 1)
    result = sidebar.item_of(old, results=True)
    assert "Rayleigh</span>" in result.data(Qt.ItemDataRole.UserRole + 4)
    click_row(qtbot, result)
    assert window.conversation_id == old
    hit = window.store.path(old)[3]
    view = window.chat_view.view_of(hit.id)
    bar = window.chat_view.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() > 0)
    qtbot.wait(100)
    top, height = bar.value(), window.chat_view.viewport().height()
    y = view.mapTo(
        window.chat_view.widget(), QPoint(0, 0)
    ).y()  # in the scrolled page (the column sits in it)
    assert top <= y < top + height, "the hit message is on screen"
    assert view.body.textCursor().selectedText().lower() == "rayleigh"
    # Esc clears the field and the chat list is back
    qtbot.keyClick(sidebar.search, Qt.Key.Key_Escape)
    assert sidebar.search.text() == ""
    assert sidebar.chat_list.isVisible() and not sidebar.results_list.isVisible()


def test_search_with_no_match_says_so_and_enter_opens_the_first_hit(window_with_chats, qtbot):
    window, ids = window_with_chats(
        [("One", 2, False, ["alpha beta", "gamma"]), ("Two", 0, False, ["delta", "epsilon"])]
    )
    sidebar = window.sidebar
    sidebar.search.setFocus()
    qtbot.keyClicks(sidebar.search, "zzz-nothing")
    qtbot.waitUntil(sidebar.no_results.isVisible)
    assert "zzz-nothing" in sidebar.no_results.text()
    sidebar.search.clear()
    qtbot.keyClicks(sidebar.search, "beta")
    qtbot.keyClick(sidebar.search, Qt.Key.Key_Return)
    assert window.conversation_id == ids[0]
    # Down walks into the results, Esc there leaves the search as well
    qtbot.keyClick(sidebar.search, Qt.Key.Key_Down)
    assert sidebar.results_list.hasFocus() and sidebar.results_list.currentRow() == 0
    qtbot.keyClick(sidebar.results_list, Qt.Key.Key_Escape)
    assert sidebar.search.text() == "" and sidebar.chat_list.isVisible()


def test_a_long_title_in_the_search_results_elides_with_a_tooltip_also_selected(
    window_with_chats, qtbot, tmp_path
):
    title = "Sourdough starter notes from the long weekend and every feeding schedule we tried since spring"
    window, ids = window_with_chats(
        [
            (
                title,
                3,
                False,
                ["How often do I feed the sourdough?", "Twice a day.", "sourdough again", "Yes."],
            ),
            ("Other", 0, False, ["sourdough once", "ok"]),
        ]
    )
    sidebar = window.sidebar
    sidebar.search.setFocus()
    qtbot.keyClicks(sidebar.search, "sourdough")
    qtbot.waitUntil(lambda: sidebar.results_list.isVisible() and sidebar.results_list.count() == 2)
    view = sidebar.results_list
    result = sidebar.item_of(ids[0], results=True)
    assert result.toolTip() == title
    click_row(qtbot, result)  # opens the chat; the result is the selected one
    result = sidebar.item_of(ids[0], results=True)  # the results are listed again, the chat's selected
    assert result.toolTip() == title
    assert window.conversation_id == ids[0] and result.isSelected()
    qtbot.wait(50)
    picture = tmp_path / "search-long-title.png"  # looked at by eye once: the title ends in "…"
    assert sidebar.grab().save(str(picture))
    # the row draws within the list, its title short of the "⋯" button and "N matches", ending in "…"
    rect = view.visualItemRect(result)
    assert view.horizontalScrollBar().maximum() == 0 and rect.right() < view.viewport().width()
    painted = []
    delegate = view.itemDelegate()

    class Recorder(QPainter):
        def drawText(self, *args):  # Qt's name: what the row draws, and where
            painted.append(args)
            super().drawText(*args)

    image = QImage(rect.size(), QImage.Format.Format_ARGB32)
    recorder = Recorder(image)
    option = QStyleOptionViewItem()
    view.initViewItemOption(option)
    option.rect = rect.translated(-rect.left(), -rect.top())
    option.state |= QStyle.StateFlag.State_Selected
    delegate.paint(recorder, option, view.indexFromItem(result))
    recorder.end()
    texts = [a[-1] for a in painted if isinstance(a[-1], str)]
    drawn_title = next(t for t in texts if t.startswith("Sour"))
    boxes = {a[-1]: a[0] for a in painted if isinstance(a[-1], str)}
    button = view.more_button
    room = rect.width() - 4 - 10 - (button.width() + 4 if button.isVisible() else 0)  # the row's text room
    assert drawn_title.endswith("…") and drawn_title.startswith("Sourdough starter"), drawn_title
    assert boxes["2 matches"].right() >= room - 2  # "N matches" at the row's right, short of the "⋯"
    assert boxes["2 matches"].right() <= room + 1 and boxes[drawn_title].right() <= room + 1
    # under the pointer the "⋯" shows on the row, the title and "N matches" short of it
    QTest.mouseMove(view.viewport(), rect.center())
    qtbot.waitUntil(view.more_button.isVisible)
    assert sidebar.grab().save(str(tmp_path / "search-long-title-hovered.png"))


def test_search_finds_a_chat_by_its_title_when_no_message_has_the_words(window_with_chats, qtbot):
    # a chat renamed "Holiday plans" was not found by "holiday": only messages were searched
    window, ids = window_with_chats(
        [("Holiday plans", 2, False, ["where to go in May", "Lisbon"]), ("Other", 0, False, ["holiday pay"])]
    )
    sidebar = window.sidebar
    sidebar.search.setFocus()
    qtbot.keyClicks(sidebar.search, "HOLIDAY plans")
    qtbot.waitUntil(sidebar.results_list.isVisible)
    rows = [sidebar.results_list.item(i).text() for i in range(sidebar.results_list.count())]
    assert rows == ["Holiday plans"]  # "Other" has "holiday" but not "plans"
    qtbot.keyClick(sidebar.search, Qt.Key.Key_Return)
    assert window.conversation_id == ids[0]
    sidebar.search.clear()
    qtbot.keyClicks(sidebar.search, "holiday")
    qtbot.waitUntil(lambda: sidebar.results_list.count() == 2)
    found = {sidebar.results_list.item(i).text() for i in range(sidebar.results_list.count())}
    assert found == {"Holiday plans", "Other"}  # by title and by a message


# ----------------------------------------------------------------- a chat's actions


def test_pin_from_the_context_menu_moves_the_chat_to_pinned(window_with_chats, qtbot):
    window, ids = window_with_chats([("Older chat", 3, False, ["q"]), ("Newer chat", 0, False, ["q"])])
    sidebar = window.sidebar
    assert sidebar.headers() == ["Today", "Previous 7 days"]
    offered = choose_in_next_menu(qtbot, "Pin")
    right_click(qtbot, window, sidebar.item_of(ids[0]))
    assert offered == [["Rename", "Pin", "Export…", "Delete…"]]
    assert sidebar.headers() == ["Pinned", "Today"]
    assert sidebar.titles() == ["Older chat", "Newer chat"]
    assert window.store.get_conversation(ids[0]).pinned
    # the "⋯" button on the row under the mouse has the same menu: Unpin puts it back
    view = sidebar.chat_list
    item = sidebar.item_of(ids[0])
    QTest.mouseMove(view.viewport(), view.visualItemRect(item).center())
    qtbot.waitUntil(view.more_button.isVisible)
    offered = choose_in_next_menu(qtbot, "Unpin")
    qtbot.mouseClick(view.more_button, Qt.MouseButton.LeftButton)
    assert offered == [["Rename", "Unpin", "Export…", "Delete…"]]
    assert sidebar.headers() == ["Today", "Previous 7 days"]


def test_delete_from_the_menu_asks_first_and_cancel_keeps_the_chat(window_with_chats, qtbot):
    window, ids = window_with_chats([("Keep me", 1, False, ["q"]), ("Doomed", 0, False, ["q"])])
    sidebar = window.sidebar
    assert window.conversation_id == ids[1]
    # Defect 1 of issue 22: Delete deleted at once. Now it asks; Cancel, Enter (the default) and Esc keep it.
    for how in ("Cancel", "enter", "esc"):
        choose_in_next_menu(qtbot, "Delete…")
        seen = answer_box(qtbot, how)
        right_click(qtbot, window, sidebar.item_of(ids[1]))
        assert seen and "“Doomed”" in seen[0] and "cannot be undone" in seen[0]
        assert sidebar.titles() == ["Doomed", "Keep me"]
        assert len(window.store.list_conversations()) == 2
    # the Delete key asks too
    sidebar.chat_list.setFocus()
    sidebar.chat_list.setCurrentItem(sidebar.item_of(ids[1]))
    seen = answer_box(qtbot, "esc")
    qtbot.keyClick(sidebar.chat_list, Qt.Key.Key_Delete)
    assert seen and sidebar.titles() == ["Doomed", "Keep me"]
    choose_in_next_menu(qtbot, "Delete…")
    seen = answer_box(qtbot, "Delete")
    right_click(qtbot, window, sidebar.item_of(ids[1]))
    assert seen
    assert [c.title for c in window.store.list_conversations()] == ["Keep me"]
    assert sidebar.titles() == ["Keep me"]
    assert window.conversation_id == ids[0]  # the window moved on to the chat that is left


def test_rename_in_place_from_the_menu(window_with_chats, qtbot):
    window, ids = window_with_chats([("Untitled thoughts", 0, False, ["q"])])
    sidebar = window.sidebar
    choose_in_next_menu(qtbot, "Rename")
    right_click(qtbot, window, sidebar.item_of(ids[0]))
    editor = QApplication.focusWidget()
    assert isinstance(editor, QLineEdit) and editor.accessibleName() == "Chat title"
    assert editor.text() == "Untitled thoughts"
    qtbot.keyClicks(editor, "Plans for spring")  # the old title is selected: typing replaces it
    qtbot.keyClick(editor, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: sidebar.titles() == ["Plans for spring"])
    assert window.store.get_conversation(ids[0]).title == "Plans for spring"
    # F2 edits too, and Esc leaves the title as it was
    sidebar.chat_list.setFocus()
    sidebar.chat_list.setCurrentItem(sidebar.item_of(ids[0]))
    qtbot.keyClick(sidebar.chat_list, Qt.Key.Key_F2)
    editor = QApplication.focusWidget()
    assert isinstance(editor, QLineEdit)
    qtbot.keyClicks(editor, "Nope")
    qtbot.keyClick(editor, Qt.Key.Key_Escape)
    qtbot.wait(50)
    assert window.store.get_conversation(ids[0]).title == "Plans for spring"


def test_export_from_the_menu_writes_markdown_or_json(window_with_chats, qtbot, monkeypatch, tmp_path):
    window, ids = window_with_chats(
        [("Sky talk", 0, False, ["Why is the sky blue?", "Rayleigh scattering."])]
    )
    sidebar = window.sidebar
    target = {"path": tmp_path / "sky.md", "filter": "Markdown (*.md)"}
    asked = []

    def save_dialog(parent, caption, start, filters):
        asked.append((caption, start, filters))
        return str(target["path"]), target["filter"]

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_dialog)
    choose_in_next_menu(qtbot, "Export…")
    right_click(qtbot, window, sidebar.item_of(ids[0]))
    assert asked[0][1].endswith("Sky talk.md")
    text = (tmp_path / "sky.md").read_text(encoding="utf-8")
    assert "Sky talk" in text and "Rayleigh scattering." in text
    assert "sky.md" in window.statusBar().currentMessage()
    target.update(path=tmp_path / "sky", filter="JSON, every version (*.json)")
    choose_in_next_menu(qtbot, "Export…")
    right_click(qtbot, window, sidebar.item_of(ids[0]))
    data = json.loads((tmp_path / "sky.json").read_text(encoding="utf-8"))
    assert [c["title"] for c in data["conversations"]] == ["Sky talk"]


def test_export_all_and_import_from_the_bottom_menu(window_with_chats, qtbot, monkeypatch, tmp_path):
    window, _ids = window_with_chats([("Mine", 0, False, ["q", "a"]), ("Also mine", 1, False, ["q"])])
    sidebar = window.sidebar
    everything = tmp_path / "all.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a: (str(everything), "Chat export (*.json)"))
    from_chats_menu(qtbot, sidebar, "Export all chats…")
    data = json.loads(everything.read_text(encoding="utf-8"))
    assert sorted(c["title"] for c in data["conversations"]) == ["Also mine", "Mine"]
    assert window.statusBar().currentMessage() == f"Exported 2 chats to {everything}"

    # a malformed file: the reason is shown and nothing changes
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "qwen-desktop-chats", "version": 1, "conversations": [{"title": 3}]}')
    opened = {"path": bad}
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a: (str(opened["path"]), ""))
    before = window.store.list_conversations()
    seen = answer_box(qtbot, "OK")
    from_chats_menu(qtbot, sidebar, "Import chats…")
    assert seen and "cannot be imported" in seen[0] and "bad.json" in seen[0]
    assert window.store.list_conversations() == before

    # an export from another computer adds its chats; the same file again adds nothing
    with ChatStore(tmp_path / "other.sqlite3") as other:
        conv = other.create_conversation("From the laptop")
        other.add_message(conv.id, "user", "hello from elsewhere")
        export_json(other, tmp_path / "laptop.json")
    opened["path"] = tmp_path / "laptop.json"
    from_chats_menu(qtbot, sidebar, "Import chats…")
    assert "From the laptop" in sidebar.titles()
    assert window.statusBar().currentMessage() == "Imported 1 chat"
    from_chats_menu(qtbot, sidebar, "Import chats…")
    assert len(window.store.list_conversations()) == 3
    assert window.statusBar().currentMessage() == "Imported 0 chats (1 was here already)"
    # one chat alone, exported from the menu: "1 chat"
    window.store.delete_conversation(window.store.list_conversations()[0].id)
    window.store.delete_conversation(window.store.list_conversations()[0].id)
    one = tmp_path / "one.json"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *a: (str(one), "Chat export (*.json)"))
    from_chats_menu(qtbot, sidebar, "Export all chats…")
    assert window.statusBar().currentMessage() == f"Exported 1 chat to {one}"
    # and two from another computer, imported: "2 chats"
    with ChatStore(tmp_path / "other2.sqlite3") as other:
        for title in ("Laptop one", "Laptop two"):
            other.add_message(other.create_conversation(title).id, "user", "hi")
        export_json(other, tmp_path / "two.json")
    opened["path"] = tmp_path / "two.json"
    from_chats_menu(qtbot, sidebar, "Import chats…")
    assert window.statusBar().currentMessage() == "Imported 2 chats"


def test_models_and_settings_are_named_icon_buttons(window_with_chats):
    window, _ids = window_with_chats([])
    sidebar = window.sidebar
    for button, name in ((sidebar.models_button, "Models"), (sidebar.settings_button, "Settings")):
        assert button.accessibleName() == name and button.toolTip()
        assert not button.icon().isNull() and button.text() in ("", name)
        assert button.width() < 60
