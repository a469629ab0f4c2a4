"""The header's model picker, driven by clicks: with two models installed, picking the other one loads it in
the background, the status bar says so, the chat stays and the next answer comes from it; picked while an
answer is written, the switch waits for the answer. Real window, real worker, two tiny models."""

from __future__ import annotations

import json
import shutil

import pytest
from PySide6.QtCore import Qt

from qwen_desktop.library.registry import Registry
from tests.ui.test_presets import ask, choose

pytestmark = pytest.mark.qt_log_ignore(
    "This plugin does not support (raise|grabbing the keyboard|propagateSizeHints)"
)


@pytest.fixture
def two_models(home, tiny_model_dir, tmp_path, settings_for):
    """Two installed copies of the tiny model, told apart by their names (and without stop tokens); the
    first one in use."""
    models = []
    for name, shown in (("tiny-a", "Tiny Alpha"), ("tiny-b", "Tiny Beta")):
        source = tmp_path / name
        shutil.copytree(tiny_model_dir, source)
        manifest = json.loads((source / "manifest.json").read_text())
        manifest["display_name"] = shown
        manifest["eos_token_ids"] = []  # answers run to their limit: one is still being written when picked
        (source / "manifest.json").write_text(json.dumps(manifest))
        models.append(Registry(home / "models").import_model(source, name=name))
    settings_for(model_path=str(models[0].folder), max_tokens=5000, context_limit=16384, temperature=0.0)
    return models


def test_picking_the_other_model_loads_it_and_the_chat_stays(two_models, make_window, qtbot):
    alpha, beta = two_models
    window = make_window()
    combo = window.header.model_combo
    assert combo.accessibleName() == "Model"
    items = [combo.itemText(i) for i in range(combo.count())]
    assert len(items) == 2 and items[0].startswith(alpha.display_name) and " KB" in items[0]
    assert combo.currentText().startswith(alpha.display_name)
    window.settings.max_tokens = 8
    ask(qtbot, window, "Hello")
    chat = window.conversation_id
    first = window.store.path(chat)[-1]
    assert first.stats["model"] == alpha.display_name
    with qtbot.waitSignal(window.model_ready, timeout=60000) as ready:
        choose(qtbot, combo, items[1])
        assert window.statusBar().currentMessage() == f"Loading {beta.display_name}… — your chat stays"
    assert ready.args[0].folder == beta.folder
    assert window.statusBar().currentMessage() == f"Now using {beta.display_name}."
    assert window.conversation_id == chat and window.chat_view.view_of(first.id) is not None
    assert window.settings.model_path == str(beta.folder)
    ask(qtbot, window, "And you?")
    path = window.store.path(chat)
    assert [m.stats["model"] for m in path if m.role == "assistant"] == [
        alpha.display_name,
        beta.display_name,
    ]


def test_a_model_picked_during_an_answer_loads_after_it(two_models, make_window, qtbot):
    alpha, beta = two_models
    window = make_window()
    combo = window.header.model_combo
    window.composer.setPlainText("Go on and on")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert window.bridge.busy
    qtbot.keyClick(combo, Qt.Key.Key_Down)  # the next model, by the keyboard: the tiny model is quick
    assert (
        window.statusBar().currentMessage() == f"Switching to {beta.display_name} when this answer is done."
    )
    assert window.model_info.folder == alpha.folder  # not while the answer is written
    with qtbot.waitSignal(window.model_ready, timeout=60000) as ready:
        qtbot.mouseClick(window.send_button, Qt.MouseButton.LeftButton)  # Stop (or it ends by itself)
    assert ready.args[0].folder == beta.folder
    answer = window.store.path(window.conversation_id)[-1]
    assert answer.stats["model"] == alpha.display_name
