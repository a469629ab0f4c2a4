"""A process killed in the middle of an answer: the next start shows everything up to the last second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

from qwen_desktop.storage.chats import ChatStore

APP = textwrap.dedent(
    """
    import sys, time
    from PySide6.QtWidgets import QApplication
    from qwen_desktop.ui.main_window import MainWindow

    app = QApplication([])
    window = MainWindow()
    window.show()

    def ready(_info):
        window.composer.setPlainText("Tell me everything")
        window.send()

    def piece(*_):
        if not getattr(window, "_said", False):
            window._said = True
            print("STREAMING", flush=True)

    def slow_machine(*_):  # on the worker thread: write at ~30 tokens/s, like the real model on a laptop
        time.sleep(0.03)

    from PySide6.QtCore import Qt
    window.bridge.worker.piece.connect(slow_machine, Qt.ConnectionType.DirectConnection)
    window.model_ready.connect(ready)
    window.bridge.piece.connect(piece)
    app.exec()
    """
)


def test_killed_mid_answer_reopens_with_the_partial_answer(
    settings_for, make_window, home, tiny_model_dir, qtbot
):
    # Greedy: the tiny model never picks a stop token, so it writes its whole reply room (256 tokens).
    settings_for(
        model_path=str(tiny_model_dir),
        temperature=0.0,
        max_tokens=256,
        context_limit=512,
        threads=1,
    )
    env = os.environ | {"QWEN_DESKTOP_HOME": str(home), "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.Popen(
        [sys.executable, "-c", APP], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "STREAMING"
        time.sleep(1.6)  # long enough for at least one save of the streaming answer
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
    with ChatStore(home / "chats.sqlite3") as store:
        conv = store.list_conversations()[0]
        path = store.path(conv.id)
    assert [m.role for m in path] == ["user", "assistant"]
    assert path[0].content == "Tell me everything"
    assert path[1].status == "interrupted"
    assert len(path[1].content) > 0
    window = make_window(wait_ready=False)
    view = window.chat_view.last_answer()
    assert view.text == path[1].content
    assert "interrupted" in view.status_label.text()
