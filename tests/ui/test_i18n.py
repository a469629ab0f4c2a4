"""The Simplified Chinese translation ships and is used."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from qwen_desktop.ui.app import I18N_DIR, install_translators


def test_every_string_is_translated():
    tree = ET.parse(I18N_DIR / "qwen_desktop_zh_CN.ts")
    messages = list(tree.getroot().iter("message"))
    assert len(messages) > 100
    unfinished = [
        m.find("source").text for m in messages if m.find("translation").get("type") == "unfinished"
    ]
    assert unfinished == []
    assert (I18N_DIR / "qwen_desktop_zh_CN.qm").is_file()


def test_every_string_in_the_code_is_in_the_catalogue_and_translated(tmp_path):
    # lupdate reads the UI code as the catalogue's maintainer would: a string added to the code but not to
    # the catalogue would show in English in a Chinese window (24 did, until this test)
    import shutil
    import subprocess

    lupdate = shutil.which("pyside6-lupdate")
    if lupdate is None:
        pytest.skip("pyside6-lupdate is not installed")
    fresh = tmp_path / "fresh.ts"
    sources = sorted(str(p) for p in (I18N_DIR.parent / "ui").glob("*.py"))
    subprocess.run([lupdate, *sources, "-ts", str(fresh)], check=True, capture_output=True)
    in_code = {m.find("source").text for m in ET.parse(fresh).getroot().iter("message")}
    shipped = {
        m.find("source").text: m.find("translation")
        for m in ET.parse(I18N_DIR / "qwen_desktop_zh_CN.ts").getroot().iter("message")
    }
    missing = sorted(s for s in in_code if s not in shipped)
    untranslated = sorted(
        s for s in in_code if s in shipped and (shipped[s].get("type") == "unfinished" or not shipped[s].text)
    )
    assert missing == [] and untranslated == [], (
        "run pyside6-lupdate (docs/app.md, Language and translations) and translate: "
        + repr(missing + untranslated)
    )


def test_window_speaks_chinese(qapp, make_window, settings_for, tiny_model_dir, qtbot):
    settings_for(model_path=str(tiny_model_dir), language="zh_CN")
    translators = install_translators(qapp, "zh_CN")
    try:
        assert translators, "the zh_CN catalogue did not load"
        window = make_window()
        assert window.windowTitle() == "Qwen 桌面版"
        assert window.send_button.text() == "发送"
        assert window.status_label.text().startswith("就绪")
        window.composer.setPlainText("你好")
        with qtbot.waitSignal(window.answer_finished, timeout=30000):
            window.send()
        assert window.sidebar.titles() == ["你好"]
        assert [v.who.text() for v in window.chat_view.views] == ["<b>你</b>", "<b>助手</b>"]
    finally:
        for translator in translators:
            QApplication.removeTranslator(translator)


def test_the_load_steps_show_in_chinese(qapp, make_window, settings_for, tiny_model_dir, qtbot):
    # the worker reports each step of the load as a LoadPhase code; the window words it in its language
    from qwen_desktop.engine.load_phase import LoadPhase

    settings_for(model_path=str(tiny_model_dir), language="zh_CN")
    translators = install_translators(qapp, "zh_CN")
    try:
        window = make_window(wait_ready=False)
        shown = []  # connected after the window's own slot: each step's status text, once it is set
        window.bridge.loading.connect(lambda phase: shown.append((phase, window.status_label.text())))
        qtbot.waitSignal(window.model_ready, timeout=60000).wait()
        assert shown == [
            (LoadPhase.READ_FOLDER, "正在读取模型文件夹…"),
            (LoadPhase.OPEN_GRAPHS, "正在加载模型…"),
            (LoadPhase.WARM_UP, "正在预热…"),
        ]
        assert window.status_label.text().startswith("就绪")
        # a step this window does not know (a newer engine's, a stray string) reads as loading the model
        assert window.load_phase_text("compile_graphs") == window.load_phase_text(None) == "正在加载模型…"
    finally:
        for translator in translators:
            QApplication.removeTranslator(translator)


# ----------------------------------------------------------------- every visible text under zh_CN

# Words a Chinese window may show in Latin letters: names (of the app, the models, formats, licences, other
# apps), units and keys. Any other word in ASCII letters is an English string that bypassed the translation.
LATIN_OK = {
    *(
        "Qwen",
        "Instruct",
        "Coder",
        "Tiny",
        "tiny",
        "ONNX",
        "onnx",
        "community",
        "GGUF",
        "Hugging",
        "Face",
        "OpenAI",
    ),
    *(
        "LM",
        "Studio",
        "Ollama",
        "Apache",
        "MIT",
        "English",
        "MB",
        "GB",
        "KB",
        "kB",
        "tok",
        "CPU",
        "API",
        "URL",
    ),
    *("SHA", "Ctrl", "Shift", "Enter", "Esc", "Top"),
}
_WORD = re.compile(r"[A-Za-z]{2,}")
_MARKUP = re.compile(r"<[^>]*>|&\w+;")
_NOT_WORDS = re.compile(r"[/\\@\d]|\w\.\w")  # a path, a URL, an address, a number, a file or model name


def english_words(text: str) -> list[str]:
    """The words of ``text`` that are English, not names (``LATIN_OK``), paths, file names or numbers."""
    tokens = [t for t in _MARKUP.sub(" ", text).split() if not _NOT_WORDS.search(t)]
    return [w for t in tokens for w in _WORD.findall(t) if w not in LATIN_OK]


def shown_texts(root) -> list[tuple[str, str]]:
    """(where, text) of every text ``root`` shows now: labels, buttons, tooltips, accessible names,
    placeholders, editors' text, combo, list and table items with their tooltips, header labels, menu
    entries and the window title, of the visible widgets."""
    from PySide6.QtCore import QAbstractListModel, Qt
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractItemView,
        QAbstractSpinBox,
        QComboBox,
        QCommandLinkButton,
        QGroupBox,
        QHeaderView,
        QLabel,
        QLineEdit,
        QMenu,
        QPlainTextEdit,
        QPushButton,
        QTextEdit,
        QToolButton,
        QWidget,
    )

    texts: list[tuple[str, object]] = [("title", root.windowTitle())]
    for w in [root, *root.findChildren(QWidget)]:
        if not w.isVisible():
            continue
        where = f"{type(w).__name__}({w.objectName() or w.accessibleName()})"
        texts += [(where + ".toolTip", w.toolTip()), (where + ".accessibleName", w.accessibleName())]
        if isinstance(w, QLabel | QAbstractButton):
            texts.append((where, w.text()))
        if isinstance(w, QGroupBox):
            texts.append((where, w.title()))
        if isinstance(w, QCommandLinkButton):
            texts.append((where + ".description", w.description()))
        if isinstance(w, QPushButton | QToolButton) and w.menu() is not None:
            texts += [(where + ".menu", a.text()) for a in w.menu().actions()]
        if isinstance(w, QLineEdit | QPlainTextEdit | QTextEdit):
            texts.append((where + ".placeholder", w.placeholderText()))
        if isinstance(w, QPlainTextEdit) and not w.isReadOnly():
            texts.append((where + ".text", w.toPlainText()))  # the settings' system prompt
        if isinstance(w, QAbstractSpinBox):
            texts.append((where + ".text", w.text()))
        if isinstance(w, QMenu):
            texts += [(where, a.text()) for a in w.actions()]
        if isinstance(w, QComboBox):
            for i in range(w.count()):
                texts += [
                    (f"{where}[{i}]", w.itemText(i)),
                    (f"{where}[{i}].tip", w.itemData(i, Qt.ToolTipRole)),
                ]
        if isinstance(w, QAbstractItemView) and not isinstance(w, QHeaderView) and w.model() is not None:
            model = w.model()
            columns = 1 if isinstance(model, QAbstractListModel) else model.columnCount()
            for r in range(model.rowCount()):
                for c in range(columns):
                    for role in (Qt.DisplayRole, Qt.ToolTipRole):
                        texts.append((f"{where}[{r},{c}]", model.data(model.index(r, c), role)))
            for c in range(columns):
                texts.append((f"{where}.header[{c}]", model.headerData(c, Qt.Horizontal, Qt.DisplayRole)))
    return [(where, text) for where, text in texts if isinstance(text, str) and text]


def english_in(root) -> list[tuple[str, str]]:
    """The texts ``root`` shows that hold English words."""
    return sorted({(where, text) for where, text in shown_texts(root) if english_words(text)})


def listed(found: list[tuple[str, str]]) -> str:
    return "English in the Chinese window:\n" + "\n".join(f"{where}: {text!r}" for where, text in found)


@pytest.fixture
def chinese(qapp):
    """The zh_CN catalogue installed for one test."""
    translators = install_translators(qapp, "zh_CN")
    assert translators, "the zh_CN catalogue did not load"
    yield
    for translator in translators:
        QApplication.removeTranslator(translator)


def test_the_word_filter_keeps_names_and_finds_english():
    assert english_words("Qwen2.5 0.5B Instruct · int4 · 925.8 MB · 12.3 tok/s") == []
    assert english_words("从 /tmp/x/tiny.gguf 导入 · qwen2.5-coder-0.5b-instruct · <b>你</b>") == []
    assert english_words("imported from /tmp/x") == ["imported", "from"]
    assert english_words("就绪 · Tiny · int4 · 1 个线程") == []


def run_dialog(qtbot, button, kind, look):
    """Click ``button``, call ``look(dialog)`` on the ``kind`` dialog it opens, then close it with OK (or
    Close): the dialogs run modal, as in the app."""
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QDialogButtonBox

    seen = []

    def inside():
        dialog = next(w for w in QApplication.topLevelWidgets() if isinstance(w, kind) and w.isVisible())
        seen.append(look(dialog))
        box = dialog.findChild(QDialogButtonBox)
        ok = box.button(QDialogButtonBox.StandardButton.Ok) or box.button(
            QDialogButtonBox.StandardButton.Close
        )
        qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)

    QTimer.singleShot(0, inside)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    return seen[0]


@pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")
def test_the_chat_window_models_page_and_settings_show_no_english(
    chinese, make_window, settings_for, tiny_model_dir, qtbot
):
    from qwen_desktop.library.registry import Registry
    from qwen_desktop.storage import paths
    from qwen_desktop.storage.settings import Settings
    from qwen_desktop.ui.models_dialog import ModelsDialog
    from qwen_desktop.ui.settings_dialog import SettingsDialog

    imported = Registry(paths.models_dir()).import_model(tiny_model_dir, name="tiny")  # "imported from …"
    settings_for(model_path=str(imported.folder), language="zh_CN")
    window = make_window()
    window.composer.setPlainText("你好")
    with qtbot.waitSignal(window.answer_finished, timeout=30000):
        window.send()
    found = english_in(window)
    found += run_dialog(qtbot, window.sidebar.settings_button, SettingsDialog, english_in)
    found += run_dialog(qtbot, window.sidebar.models_button, ModelsDialog, english_in)
    assert found == [], listed(found)
    # the prompt that came with the app showed in Chinese; OK kept it, in the English the model is asked with
    assert window.settings.system_prompt == Settings().system_prompt
    assert window.prompt_messages([])[0] == {"role": "system", "content": Settings().system_prompt}


def test_the_first_run_page_and_an_import_show_no_english(
    chinese, make_window, settings_for, tiny_gguf, qtbot, monkeypatch
):
    from PySide6.QtWidgets import QFileDialog

    settings_for(language="zh_CN")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *_args, **_kwargs: (str(tiny_gguf), ""))
    window = make_window(wait_ready=False)
    assert window.pages.currentWidget() is window.welcome
    found = english_in(window)
    qtbot.mouseClick(window.welcome.import_button, Qt.MouseButton.LeftButton)
    dialog = window.install_dialog
    phases: list[str] = []

    def look(state) -> None:  # each phase of the install dialog once
        if state.phase not in phases:
            phases.append(state.phase)
            found.extend(english_in(dialog))

    dialog.progress_changed.connect(look)
    with qtbot.waitSignal(window.model_ready, timeout=120000):
        pass
    assert "quantize" in phases and "load" in phases
    found += english_in(window)
    assert found == [], listed(found)


def test_every_catalogue_description_is_translated_and_every_name_is_a_name(chinese):
    from qwen_desktop.library.catalog import load_catalog
    from qwen_desktop.ui.catalog_texts import DESCRIPTIONS, description

    catalog = load_catalog()
    missing = [e.description for e in catalog if e.description not in DESCRIPTIONS]
    assert missing == [], "add them to qwen_desktop/ui/catalog_texts.py, run lupdate and translate"
    assert all(description(e) != e.description and not english_words(description(e)) for e in catalog)
    assert [e.display_name for e in catalog if english_words(e.display_name)] == []


def test_the_prompts_that_come_with_the_app_show_translated_and_go_back_to_english(chinese):
    from qwen_desktop.storage.settings import Settings
    from qwen_desktop.ui.presets import BUILTIN_PRESETS, DEFAULT_PROMPT, sent_prompt, shown_prompt

    assert Settings().system_prompt == DEFAULT_PROMPT
    for prompt in [DEFAULT_PROMPT, *(p.prompt for p in BUILTIN_PRESETS if p.prompt)]:
        assert english_words(shown_prompt(prompt)) == []
        assert sent_prompt(shown_prompt(prompt)) == prompt
    assert (
        shown_prompt("Answer like a pirate.")
        == sent_prompt("Answer like a pirate.")
        == "Answer like a pirate."
    )
    assert sent_prompt("你是一位诗人。") == "你是一位诗人。"


def test_chinese_text_is_a_point_larger_in_simplified_chinese_faces(qapp):
    from PySide6.QtCore import QLocale
    from PySide6.QtGui import QFont, QFontDatabase, QFontInfo, QFontMetrics, QTextLayout

    from qwen_desktop.ui.app import CJK_FAMILIES, interface_font

    base = QFont("Sans Serif", 9)
    assert interface_font(base, QLocale("en")) == base
    chinese_font = interface_font(base, QLocale("zh_CN"))
    assert chinese_font.pointSizeF() == 10
    assert chinese_font.families() == [*CJK_FAMILIES, QFontInfo(base).family()]
    height = QFontMetrics(chinese_font).tightBoundingRect("模型").height()
    assert height > QFontMetrics(base).tightBoundingRect("模型").height()
    installed = [f for f in CJK_FAMILIES if f in QFontDatabase.families()]
    if installed:  # one face, the first installed, draws a mixed line
        layout = QTextLayout("Qwen 模型 2.5", chinese_font)
        layout.beginLayout()
        layout.createLine()
        layout.endLayout()
        assert {run.rawFont().familyName() for run in layout.glyphRuns()} == {installed[0]}
