"""The Simplified Chinese translation ships and is used."""

from __future__ import annotations

import xml.etree.ElementTree as ET

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
        assert window.conversation_list.item(0).text() == "你好"
        assert [v.who.text() for v in window.chat_view.views] == ["<b>你</b>", "<b>助手</b>"]
    finally:
        for translator in translators:
            QApplication.removeTranslator(translator)
