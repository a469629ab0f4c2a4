"""The Simplified Chinese translation ships and is used."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
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
