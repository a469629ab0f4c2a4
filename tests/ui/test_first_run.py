"""The first start: a model that came with the app is loaded with no click; the first-run page; progress of an
install; the switch to the new model. Real window, real threads, the tiny model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from qwen_desktop.library.bundled import BUNDLED_ENV
from qwen_desktop.storage.settings import Settings
from qwen_desktop.ui.download_dialog import BAR_STEPS
from qwen_desktop.ui.models_dialog import ModelsDialog


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


@pytest.fixture
def shipped(tmp_path, tiny_model_dir, monkeypatch) -> Path:
    """The tiny model as a model that came with the app (``$QWEN_DESKTOP_BUNDLED_MODELS``)."""
    root = tmp_path / "bundled"
    shutil.copytree(tiny_model_dir, root / "tiny-bundled")
    monkeypatch.setenv(BUNDLED_ENV, str(root))
    return root


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
    assert all("so far" in t for t in times)
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
