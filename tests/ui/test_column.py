"""The conversation as a reading column: at most 46 em wide and centred, your messages as bubbles on the right
in another colour than the answers, and each answer's figures in a quiet footer with the details in its
tooltip. Real window, the tiny model."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QFontInfo

from qwen_desktop.ui.chat_view import COLUMN_EM


def ask(qtbot, window, text):
    window.composer.setPlainText(text)
    with qtbot.waitSignal(window.answer_finished, timeout=30000) as blocker:
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    return blocker.args[0]


def test_a_centred_column_with_your_turns_on_the_right_and_figures_under_answers(ready_window, qtbot):
    window = ready_window
    window.resize(1500, 800)
    result = ask(qtbot, window, "Hi")
    view = window.chat_view
    qtbot.waitUntil(lambda: len(view.views) == 2 and view.views[1].footer is not None)
    column = view.column
    em = QFontInfo(view.font()).pixelSize()
    assert column.width() == COLUMN_EM * em < view.viewport().width() - 100
    left = column.mapTo(view.viewport(), QPoint(0, 0)).x()
    right_gap = view.viewport().width() - left - column.width()
    assert abs(left - right_gap) <= 2  # centred
    mine, answer = view.views
    qtbot.waitUntil(lambda: answer.width() == column.width())  # once the layout has run
    assert mine.x() + mine.width() == column.width() and mine.width() < column.width() * 0.8
    assert answer.x() == 0 and answer.width() == column.width()
    bubble = mine.bubble.grab().toImage().pixelColor(mine.bubble.width() // 2, mine.bubble.height() - 4)
    page = answer.grab().toImage().pixelColor(answer.width() - 4, answer.height() // 2)
    assert bubble != page  # your turn is tinted, the answer sits on the page
    stats = window.store.get_message(answer.message.id).stats  # what was saved (rounded) is what shows
    assert answer.footer.text() == f"{stats['ttft']:.2f} s to first word · {stats['decode_tps']:.1f} tokens/s"
    tip = answer.footer.toolTip()
    assert window.model_info.display_name in tip
    assert f"Answer: {result.stats.generated_tokens} tokens" in tip
    assert "Prompt: " in tip
    window.resize(800, 700)  # narrower than the column: it follows the window
    qtbot.waitUntil(lambda: column.width() <= view.viewport().width() - 32)
    assert mine.width() <= column.width() * 0.8 + 1
