"""The first start: a model that came with the app is loaded with no click; the first-run page; progress of an
install; the switch to the new model. Real window, real threads, the tiny model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from qwen_desktop.library.bundled import BUNDLED_ENV
from qwen_desktop.storage.settings import Settings
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
