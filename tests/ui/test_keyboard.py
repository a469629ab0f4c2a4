"""Keyboard-only and screen-reader use, as a user does it: key presses and clicks on the real window and dialogs.

Every interactive widget of the main window (with the first-run page it holds), the Models page and the
settings dialog has an accessible name; the shortcuts work by key press; Tab walks the window in a sensible
order (tests/ui/walk.py lists what counts as interactive).
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QWidget

from tests.ui.actions import click_action
from tests.ui.boxes import on_dialog
from tests.ui.test_window import never_stopping_copy, send
from tests.ui.walk import interactive_widgets, unnamed

CTRL = Qt.KeyboardModifier.ControlModifier
# the settings dialog asks offscreen Qt for a size hint it cannot pass on
SIZE_HINTS = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def back_to(qtbot, window) -> None:
    """Wait for the window to be active again after a dialog closed (the focus comes back a moment later)."""
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow)


def edit_first_message(qtbot, window, text: str) -> None:
    """Edit the first message of the chat with clicks and keys: Edit, replace the text, Enter."""
    first = next(v for v in window.chat_view.views if v.message.role == "user")
    click_action(qtbot, window.chat_view, first, "Edit and resend")
    window.composer.selectAll()
    qtbot.keyClicks(window.composer, text)
    with qtbot.waitSignal(window.answer_finished, timeout=30000):
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)


@SIZE_HINTS
def test_every_interactive_widget_has_an_accessible_name(ready_window, qtbot):
    from qwen_desktop.ui.models_dialog import ModelsDialog
    from qwen_desktop.ui.settings_dialog import SettingsDialog

    window = ready_window
    send(qtbot, window, "Hello")
    edit_first_message(qtbot, window, "Hello again")  # versions: the ‹ › arrows and the "edited" mark
    assert window.chat_view.views[0].edited_label is not None
    found: dict[str, list[str]] = {}

    def walk(name: str, top: QWidget) -> None:
        assert interactive_widgets(top), name
        found[name] = unnamed(top)

    walk("main window", window)
    walk("first-run page", window.welcome)  # a page of the window, filled when there is no model

    def look_and_close(name: str):
        def act(dialog) -> None:
            walk(name, dialog)
            qtbot.keyClick(dialog, Qt.Key.Key_Escape)

        return act

    models = on_dialog(qtbot, ModelsDialog, look_and_close("Models page"))
    click(qtbot, window.sidebar.models_button)
    qtbot.waitUntil(lambda: bool(models))
    settings = on_dialog(qtbot, SettingsDialog, look_and_close("settings"))
    back_to(qtbot, window)
    qtbot.keyClick(window, Qt.Key.Key_Comma, CTRL)
    qtbot.waitUntil(lambda: bool(settings))
    assert set(found) == {"main window", "first-run page", "Models page", "settings"}
    assert not any(found.values()), found


@SIZE_HINTS
def test_shortcuts_work_by_key_press(settings_for, make_window, tiny_model_dir, tmp_path, qtbot):
    from qwen_desktop.ui.settings_dialog import SettingsDialog

    folder = never_stopping_copy(tiny_model_dir, tmp_path)
    settings_for(model_path=str(folder), temperature=0.0, max_tokens=5000, context_limit=16384)
    window = make_window()
    window.activateWindow()
    qtbot.keyClicks(window.composer, "Go on and on")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.chat_view.view_of(window.streaming_id).text != "", timeout=30000)
    with qtbot.waitSignal(window.answer_finished, timeout=5000) as stopped:
        qtbot.keyClick(window, Qt.Key.Key_Escape)  # Esc: stop the answer
    assert stopped.args[0].reason == "cancelled"
    answer = window.store.path(window.conversation_id)[-1].content

    QGuiApplication.clipboard().clear()
    qtbot.keyClick(window, Qt.Key.Key_C, CTRL | Qt.KeyboardModifier.ShiftModifier)  # copy the last answer
    assert QGuiApplication.clipboard().text() == answer != ""

    qtbot.keyClick(window, Qt.Key.Key_N, CTRL)  # a new chat
    assert window.conversation_id is None and window.chat_view.views == []
    assert window.composer.hasFocus()

    search = window.sidebar.search
    qtbot.keyClick(window, Qt.Key.Key_K, CTRL)  # focus the search
    qtbot.waitUntil(search.hasFocus)
    qtbot.keyClicks(search, "Go on")
    qtbot.waitUntil(lambda: window.sidebar.results_list.count() == 1, timeout=5000)
    qtbot.keyClick(search, Qt.Key.Key_Escape)  # Esc in the search: clear it, back to the chats
    assert search.text() == "" and window.sidebar.titles() == ["Go on and on"]

    shown = on_dialog(qtbot, SettingsDialog, lambda dialog: qtbot.keyClick(dialog, Qt.Key.Key_Escape))
    qtbot.keyClick(window, Qt.Key.Key_Comma, CTRL)  # settings
    qtbot.waitUntil(lambda: bool(shown))

    back_to(qtbot, window)
    window.sidebar.chat_list.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_L, CTRL)  # back to the message box
    qtbot.waitUntil(window.composer.hasFocus)


def test_tab_from_the_message_box_reaches_send_then_the_sidebar(ready_window, qtbot):
    window = ready_window
    send(qtbot, window, "Hello")
    back_to(qtbot, window)
    click(qtbot, window.composer.viewport())
    qtbot.waitUntil(window.composer.hasFocus)
    qtbot.keyClicks(window.composer, "a draft")  # Send is enabled with a draft
    order = []
    for _ in range(40):
        widget = QApplication.focusWidget()
        order.append(widget)
        qtbot.keyClick(widget, Qt.Key.Key_Tab)
        if QApplication.focusWidget() is window.composer:
            break
    names = [w.accessibleName() for w in order]
    sidebar = window.sidebar
    assert order[:5] == [
        window.composer,
        window.send_button,
        sidebar.new_button,
        sidebar.search,
        sidebar.chat_list,
    ]
    assert window.composer.toPlainText() == "a draft"  # Tab moved on, it typed nothing
    # the header, then the conversation and its messages, then back to the message box by way of Attach
    header = order.index(window.header.model_combo)
    conversation = order.index(window.chat_view)
    messages = [
        i for i, w in enumerate(order) if any(w in v.findChildren(QWidget) for v in window.chat_view.views)
    ]
    assert sidebar.settings_button in order[5:header]
    assert (
        messages
        and conversation < min(messages)
        and max(messages) < order.index(window.composer_box.attach_button)
    )
    assert order[-1] is window.composer_box.attach_button, names
    qtbot.keyClick(window.composer, Qt.Key.Key_Backtab)
    assert QApplication.focusWidget() is window.composer_box.attach_button


def test_shift_tab_walks_back_the_exact_reverse_of_tab(ready_window, qtbot):
    window = ready_window
    send(qtbot, window, "Hello")
    edit_first_message(qtbot, window, "Hello again")  # your message gets ‹ 2 / 2 ›
    send(qtbot, window, "And then?")
    back_to(qtbot, window)
    qtbot.waitUntil(lambda: all(v.isVisible() for v in window.chat_view.views))  # the layout shows them
    click(qtbot, window.composer.viewport())
    qtbot.waitUntil(window.composer.hasFocus)
    qtbot.keyClicks(window.composer, "a draft")  # Send is enabled with a draft
    forward = [window.composer]
    for _ in range(60):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        forward.append(QApplication.focusWidget())
        if forward[-1] is window.composer:
            break
    assert forward[-1] is window.composer and len(forward) > 10
    actions = [w for v in window.chat_view.views for w in v.action_bar.findChildren(QWidget) if w in forward]
    names = {w.accessibleName() for w in actions}
    assert {"Copy message", "Edit and resend", "Regenerate", "Previous version"} <= names, names
    backward = [window.composer]
    for _ in range(len(forward) - 1):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Backtab)
        backward.append(QApplication.focusWidget())
    described = [f"{type(w).__name__} {w.accessibleName()!r}" for w in backward]
    assert backward == forward[::-1], described


def test_tab_after_switching_chats_walks_the_chat_on_show(
    settings_for, make_window, tiny_model_dir, home, qtbot
):
    from tests.ui.test_sidebar import click_row, make_chats

    ids = make_chats(
        home,
        [
            ("Left behind", 1, False, ["First chat's question", "First chat's answer"]),
            ("Now shown", 0, False, ["Second chat's question", "Second chat's answer", "More?", "More."]),
        ],
    )
    settings_for(model_path=str(tiny_model_dir))
    window = make_window()
    sidebar = window.sidebar
    click_row(qtbot, sidebar.item_of(ids[0]))
    qtbot.waitUntil(lambda: window.conversation_id == ids[0])
    qtbot.waitUntil(lambda: all(v.isVisible() for v in window.chat_view.views))
    left = list(window.chat_view.views)
    qtbot.mouseMove(window.composer)  # the pointer away from the messages: their actions stay quiet
    click_row(qtbot, sidebar.item_of(ids[1]))  # the real click on the other chat's row
    assert window.conversation_id == ids[1]
    shown = list(window.chat_view.views)
    assert [v.text for v in shown] == ["Second chat's question", "Second chat's answer", "More?", "More."]
    # at once, before the event loop runs: the chat left is hidden, and Tab from the message box never lands
    # on it (deleted only from the event loop, it was still in Tab's way)
    assert not any(v.isVisible() for v in left)
    click(qtbot, window.composer.viewport())
    assert window.composer.hasFocus()
    for _ in range(60):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        widget = QApplication.focusWidget()
        assert not any(widget is v or v.isAncestorOf(widget) for v in left), widget.accessibleName()
        if widget is window.composer:
            break
    # the new chat's views show from the event loop, placed, their actions still quiet
    qtbot.waitUntil(lambda: all(v.isVisible() for v in shown))
    assert not any(v.action_bar.isVisible() for v in shown)
    # Tab from the message box walks the new chat's messages, their text and actions, and only visible widgets
    click(qtbot, window.composer.viewport())
    assert window.composer.hasFocus()
    order = []
    for _ in range(60):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        widget = QApplication.focusWidget()
        order.append(widget)
        assert widget.isVisible(), (
            f"Tab landed on a hidden {type(widget).__name__} {widget.accessibleName()!r}"
        )
        if widget is window.composer:
            break
    assert order[-1] is window.composer
    reached = [v for v in shown if any(w is v.body for w in order)]
    assert reached == shown
    actions = {w.accessibleName() for v in shown for w in v.action_bar.findChildren(QWidget) if w in order}
    assert {"Copy message", "Edit and resend", "Regenerate"} <= actions, actions
