"""The first start: a model that came with the app is loaded with no click; the first-run page; progress of an
install; the switch to the new model. Real window, real threads, the tiny model."""

from __future__ import annotations

import shutil
from pathlib import Path

from PySide6.QtCore import Qt

from qwen_desktop.library.bundled import BUNDLED_ENV
from qwen_desktop.library.progress import build_plan, plan_minutes
from qwen_desktop.storage.settings import Settings
from qwen_desktop.ui.download_dialog import BAR_STEPS
from qwen_desktop.ui.models_dialog import ModelsDialog
from tests.conftest import snapshot


def test_a_bundled_model_loads_on_a_fresh_home_and_answers_with_no_click(shipped, home, make_window, qtbot):
    before = snapshot(shipped)
    window = make_window()  # waits for model_ready: nobody clicked anything
    assert window.model_info.folder == shipped / "tiny-bundled"
    assert window.pages.currentWidget() is window.chat_view
    qtbot.waitUntil(window.send_button.isEnabled, timeout=60000)  # after the Auto threads sweep
    window.composer.setPlainText("hello")
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as blocker:
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert blocker.args[0].reason in ("stop", "length") and blocker.args[0].text
    assert snapshot(shipped) == before
    assert not [p for p in (home / "models").iterdir() if p.is_dir()]  # nothing was imported


def type_into_the_window(window, qtbot, text: str) -> None:
    """Type ``text`` and press Enter as a user does after the window comes up: the keys go to whatever
    widget has the keyboard, nothing is clicked first."""
    from PySide6.QtWidgets import QApplication

    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    qtbot.keyClicks(QApplication.focusWidget(), text)
    assert window.composer.toPlainText() == text  # every letter reached the message box
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Return)


def test_a_bundled_model_answers_the_first_question_typed_with_no_click(shipped, home, make_window, qtbot):
    # The keyboard was on New chat: the letters went nowhere and a space pressed it (the real window under
    # Xvfb got "is 2+2?" from "What is 2+2?").
    window = make_window()
    qtbot.waitUntil(window.send_button.isEnabled, timeout=60000)
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as blocker:
        type_into_the_window(window, qtbot, "What is 2+2?")
    assert blocker.args[0].text
    assert window.chat_view.views[0].message.content == "What is 2+2?"


def test_the_models_page_shows_it_as_included_and_cannot_delete_it(shipped, home, qtbot):
    dialog = ModelsDialog(Settings(), home / "settings.json")
    qtbot.addWidget(dialog)
    dialog.show()
    table = dialog.installed_table
    assert table.rowCount() == 1
    assert table.item(0, 4).text() == "Included with the app"
    assert str(shipped) in table.item(0, 4).toolTip()
    assert table.item(0, 0).text() == "★"
    dialog.select("tiny-bundled")
    assert not dialog.delete_button.isEnabled()
    assert "cannot be deleted" in dialog.delete_button.toolTip()
    dialog.delete_selected()  # even called directly it deletes nothing
    assert (shipped / "tiny-bundled" / "manifest.json").is_file()


# ------------------------------------------------------------------- one bar over the whole install


def watch_bar(dialog) -> list[int]:
    """Every value the install dialog's bar takes, in order."""
    values = [dialog.bar.value()]
    dialog.bar.valueChanged.connect(values.append)
    return values


def test_an_import_runs_on_one_forward_bar_and_the_window_switches_to_the_model(
    make_window, home, tiny_gguf, qtbot
):
    window = make_window(wait_ready=False)
    assert window.pages.currentWidget() is window.welcome
    dialog = window.start_install(tiny_gguf)
    assert f"takes about {plan_minutes(build_plan())} min" in dialog.note.text()
    values = watch_bar(dialog)
    phases, times = [], []
    dialog.progress_changed.connect(lambda state: phases.append(state.phase))
    dialog.progress_changed.connect(lambda _state: times.append(dialog.times.text()))
    with qtbot.waitSignal(window.model_ready, timeout=120000) as ready:
        pass
    new = home / "models" / "tiny"
    assert ready.args[0].folder == new
    assert values == sorted(values) and values[-1] == BAR_STEPS  # never backwards, ends full
    seen = list(dict.fromkeys(phases))
    assert seen[0] == "read" and seen[-1] == "load" and "quantize" in seen
    assert all("so far" in t for t in times[:-1])
    # the end says how long it took, not a time left under "Ready" (it said "about 5 s left")
    assert times[-1].startswith("Done in ") and "left" not in times[-1]
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=10000)  # it closes once the model is ready
    assert window.pages.currentWidget() is window.chat_view
    assert window.settings.model_path == str(new)
    assert window.statusBar().currentMessage().startswith("Now using ")


def test_an_install_finished_during_an_answer_switches_right_after_it(
    ready_window, home, tiny_gguf, qtbot, tiny_model_dir
):
    from qwen_desktop.library.registry import Registry

    model = Registry(home / "models").import_model(tiny_gguf, name="newer")  # as the install thread would
    window = ready_window
    window.composer.setPlainText("Tell me a long story")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert window.bridge.busy
    with qtbot.waitSignal(window.answer_finished, timeout=30000):
        window.switch_to_installed(model)  # the install dialog's "installed", mid-answer
        assert window.model_info.folder == tiny_model_dir  # not while the answer is written
        assert "when this answer is done" in window.status_label.text()
    with qtbot.waitSignal(window.model_ready, timeout=60000) as ready:
        pass
    assert ready.args[0].folder == model.folder
    assert window.settings.model_path == str(model.folder)
    assert window.statusBar().currentMessage().startswith("Now using ")


def test_cancel_during_the_import_leaves_no_folder(make_window, home, tiny_gguf, qtbot):
    window = make_window(wait_ready=False)
    dialog = window.start_install(tiny_gguf)
    dialog.task.build_progress.connect(
        lambda *_: (
            dialog.close_button.isEnabled()
            and qtbot.mouseClick(dialog.close_button, Qt.MouseButton.LeftButton)
        )
    )
    with qtbot.waitSignal(dialog.task.cancelled, timeout=60000):
        pass
    assert dialog.stage.text() == "Paused"
    assert "nothing was installed" in dialog.note.text()
    models = home / "models"
    assert [p.name for p in models.iterdir() if p.name != "registry.json"] in ([], [".staging"])
    assert not list((models / ".staging").iterdir()) if (models / ".staging").exists() else True
    assert window.pages.currentWidget() is window.welcome and window.model_info is None


# ------------------------------------------------------------------- the first-run page


JARGON = (
    "gguf",
    "onnx",
    "quantiz",
    "hugging face",
    "safetensors",
    "int4",
    "int8",
    "prefill",
    "graph",
    "token",
)


def page_texts(page) -> list[str]:
    from PySide6.QtWidgets import QAbstractButton, QCommandLinkButton, QLabel

    texts = [w.text() for w in page.findChildren(QLabel) if w.isVisible()]
    texts += [w.text() for w in page.findChildren(QAbstractButton) if w.isVisible()]
    texts += [w.description() for w in page.findChildren(QCommandLinkButton) if w.isVisible()]
    return texts


def test_the_first_run_page_offers_the_choices_in_plain_words(make_window):
    window = make_window(wait_ready=False)
    page = window.welcome
    assert window.pages.currentWidget() is page
    assert "Choose a model" in page.title.text()
    assert not page.bundled_button.isVisible()  # nothing came with the app here
    assert page.download_button.text() == "Download Qwen2.5 0.5B Instruct"
    assert "Downloads 676.0 MB" in page.download_button.description()
    # the time comes from the measured phase costs (library/progress.py), not a fixed phrase
    minutes = plan_minutes(build_plan())
    assert f"takes about {minutes} min to get ready" in page.download_button.description()
    assert page.import_button.isVisible() and page.drop_hint.isVisible()
    words = " ".join(page_texts(page)).lower()
    assert not [j for j in JARGON if j in words], words
    from tests.ui.walk import unnamed

    assert unnamed(page) == []


def test_one_click_opens_the_file_picker_and_the_window_ends_on_the_new_model(
    make_window, home, tiny_gguf, qtbot, monkeypatch
):
    from PySide6.QtWidgets import QFileDialog

    asked = []

    def pick(*args, **kwargs):
        asked.append(args)
        return str(tiny_gguf), ""

    monkeypatch.setattr(QFileDialog, "getOpenFileName", pick)
    window = make_window(wait_ready=False)
    qtbot.mouseClick(window.welcome.import_button, Qt.MouseButton.LeftButton)
    assert len(asked) == 1  # the one click opened the picker
    dialog = window.install_dialog
    assert dialog is not None and dialog.isVisible() and dialog.source == tiny_gguf
    values = watch_bar(dialog)
    with qtbot.waitSignal(window.model_ready, timeout=120000) as ready:
        pass
    assert ready.args[0].folder == home / "models" / "tiny"
    assert values == sorted(values) and values[-1] == BAR_STEPS
    assert window.pages.currentWidget() is window.chat_view


def test_enter_on_a_choice_picks_it_as_space_does(make_window, home, tiny_gguf, qtbot, monkeypatch):
    from PySide6.QtWidgets import QApplication, QFileDialog

    asked = []
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: asked.append(a) or ("", ""))
    window = make_window(wait_ready=False)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)  # from the download choice to the import one
    assert QApplication.focusWidget() is window.welcome.import_button
    qtbot.keyClick(window.welcome.import_button, Qt.Key.Key_Return)
    assert len(asked) == 1  # the file picker opened (and was cancelled: nothing else happens)
    assert window.install_dialog is None or not window.install_dialog.isVisible()


def test_after_an_import_from_the_first_run_page_the_first_question_is_typed_with_no_click(
    make_window, home, tiny_gguf, qtbot, monkeypatch
):
    from PySide6.QtWidgets import QApplication, QFileDialog

    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *args, **kwargs: (str(tiny_gguf), ""))
    window = make_window(wait_ready=False)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=5000)
    assert QApplication.focusWidget() is window.welcome.download_button  # the first choice; Space picks it
    qtbot.mouseClick(window.welcome.import_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(window.model_ready, timeout=120000):
        pass
    qtbot.waitUntil(lambda: not window.install_dialog.isVisible(), timeout=10000)
    qtbot.waitUntil(window.send_button.isEnabled, timeout=60000)
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as blocker:
        type_into_the_window(window, qtbot, "hello there")
    assert blocker.args[0].text
    assert window.chat_view.views[0].message.content == "hello there"


def drop(window, target, path: Path) -> None:
    """Drag ``path`` (a file URL, as a file manager sends it) over ``target`` in ``window`` and drop it: the
    events go to the window's QWindow, as the platform sends them, and Qt hands them to the widget there."""
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDragEnterEvent, QDropEvent
    from PySide6.QtWidgets import QApplication

    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    where = QPointF(target.mapTo(window, target.rect().center()))
    args = (Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window.windowHandle(), QDragEnterEvent(where, *args))
    QApplication.sendEvent(window.windowHandle(), QDropEvent(where, *args))


def test_dropping_a_model_file_on_the_window_imports_it(make_window, home, tiny_gguf, qtbot):
    window = make_window(wait_ready=False)
    drop(window, window.welcome, tiny_gguf)
    dialog = window.install_dialog
    assert dialog is not None and dialog.source == tiny_gguf
    values = watch_bar(dialog)
    with qtbot.waitSignal(window.model_ready, timeout=120000) as ready:
        pass
    assert ready.args[0].folder == home / "models" / "tiny"
    assert values == sorted(values) and values[-1] == BAR_STEPS


def test_dropping_a_model_folder_on_the_message_box_imports_it_and_a_text_file_is_attached(
    ready_window, home, tiny_model_dir, qtbot, tmp_path
):
    window = ready_window
    note = tmp_path / "notes.txt"
    note.write_text("not a model")
    drop(window, window.composer, note)
    assert window.install_dialog is None  # not a model: the message box attaches it
    assert [a.name for a in window.composer_box.attachments] == ["notes.txt"]
    assert window.composer.toPlainText() == ""
    window.composer_box.clear()
    folder = tmp_path / "my-model"
    shutil.copytree(tiny_model_dir, folder)
    drop(window, window.composer, folder)
    with qtbot.waitSignal(window.model_ready, timeout=60000) as ready:
        pass
    assert ready.args[0].folder == home / "models" / "my-model"
    assert window.composer.toPlainText() == ""


def test_the_download_choice_downloads_prepares_and_switches(
    make_window, home, tiny_gguf, qtbot, monkeypatch
):
    import huggingface_hub

    from tests.hubserver import HubServer, serve_catalog

    server = HubServer()
    serve_catalog(server, tiny_gguf)
    with server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        window = make_window(wait_ready=False)
        qtbot.mouseClick(window.welcome.download_button, Qt.MouseButton.LeftButton)
        dialog = window.install_dialog
        values = watch_bar(dialog)
        phases = []
        dialog.progress_changed.connect(lambda state: phases.append(state.phase))
        with qtbot.waitSignal(window.model_ready, timeout=120000) as ready:
            pass
    huggingface_hub.close_session()
    assert ready.args[0].folder == home / "models" / "qwen2.5-0.5b-instruct"
    assert values == sorted(values) and values[-1] == BAR_STEPS
    seen = list(dict.fromkeys(phases))
    assert seen[0] == "fetch" and seen[-1] == "load"


def test_no_network_gives_one_sentence_on_the_page_and_keeps_the_other_choices(
    make_window, home, tiny_gguf, qtbot, monkeypatch
):
    import socket
    import time

    import huggingface_hub
    from PySide6.QtWidgets import QFileDialog

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")  # nothing listens there: no connection
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    window = make_window(wait_ready=False)
    page = window.welcome
    started = time.monotonic()
    qtbot.mouseClick(page.download_button, Qt.MouseButton.LeftButton)
    dialog = window.install_dialog
    with qtbot.waitSignal(dialog.failed, timeout=20000):
        pass
    huggingface_hub.close_session()
    assert time.monotonic() - started < 5  # one try: a refused connection is not retried
    qtbot.waitUntil(lambda: not dialog.isVisible(), timeout=5000)
    assert window.pages.currentWidget() is page
    assert page.problem.isVisible()
    assert page.problem.text() == (
        "No connection to 127.0.0.1 — check the network, or use a model file you already have."
    )
    for choice in (page.download_button, page.import_button, page.folder_button, page.more_button):
        assert choice.isVisible() and choice.isEnabled()
    assert not [p for p in (home / "models").iterdir() if p.is_dir() and p.name != ".staging"]

    # the next choice works as before, and the sentence goes
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(tiny_gguf), ""))
    qtbot.mouseClick(page.import_button, Qt.MouseButton.LeftButton)
    assert not page.problem.isVisible()
    with qtbot.waitSignal(window.model_ready, timeout=120000) as ready:
        pass
    assert ready.args[0].folder == home / "models" / "tiny"


def test_a_model_that_came_with_the_app_is_offered_first(
    make_window, tiny_model_dir, qtbot, tmp_path, monkeypatch
):
    window = make_window(wait_ready=False)
    shutil.copytree(tiny_model_dir, tmp_path / "shelf" / "tiny-bundled")
    monkeypatch.setenv(BUNDLED_ENV, str(tmp_path / "shelf"))
    window._fill_first_run()  # what the page offers when it is shown
    page = window.welcome
    assert page.bundled_button.isVisible()
    assert "Included with the app" in page.bundled_button.description()
    with qtbot.waitSignal(window.model_ready, timeout=60000) as ready:
        qtbot.mouseClick(page.bundled_button, Qt.MouseButton.LeftButton)
    assert ready.args[0].folder == tmp_path / "shelf" / "tiny-bundled"


def test_enter_during_an_import_does_not_cancel_it(make_window, home, tiny_gguf, qtbot):
    # Enter pressed "Cancel", the dialog's first button, while a download or build ran
    window = make_window(wait_ready=False)
    dialog = window.start_install(tiny_gguf)
    cancelled: list[str] = []
    dialog.task.cancelled.connect(cancelled.append)
    qtbot.waitUntil(lambda: dialog.isVisible() and dialog.running, timeout=10000)
    with qtbot.waitSignal(window.model_ready, timeout=120000):
        qtbot.keyClick(dialog, Qt.Key.Key_Return)
        qtbot.keyClick(dialog.close_button, Qt.Key.Key_Enter)
    assert cancelled == []
    assert (home / "models" / "tiny" / "manifest.json").is_file()
