"""Screenshots of the app for the README: light and dark mid-answer, search results, the first-run page,
an import in progress, Chinese, and the model picker open.

Runs the real window under Xvfb (started here when there is no display and ``Xvfb`` exists; install it with
``apt-get install -y xvfb fonts-wqy-microhei``), else on Qt's offscreen platform. Uses the real model when
its GGUF is on disk (built once into ``~/.cache/qwen-desktop-screens/``, about a minute), else a tiny
random model. Also prints the longest gap of a 10 ms timer while the answers stream. The earlier chats are
asked of the same model; their last activity is then moved back (1, 4 and 9 days) and one is pinned, so the
sidebar shows its groups.

    python3 scripts/screenshots.py [--out docs/screenshots] [--offscreen] [--only first-run|model-picker|chat-zh_CN|models|chat]

``--only first-run`` makes only the first-run page (``first-run.png``) and the import in progress
(``import.png``), with the tiny model: no real model is needed and it takes seconds. ``--only model-picker``
makes only ``model-picker.png``; ``--only models`` the Models page (``models.png``, ``models-dark.png``);
``--only chat`` the chats mid-answer (``chat-light.png``, ``chat-dark.png``) and ``search.png``;
``--only chat-zh_CN`` the Chinese window.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REAL_GGUF = Path(
    os.environ.get("QWEN_REAL_MODEL", Path.home() / ".cache/qwen-real-model/qwen2.5-coder-0.5b-instruct.gguf")
)
CACHE = Path.home() / ".cache" / "qwen-desktop-screens"
QUESTION = (
    "Write a short Python function that reverses a singly linked list, then give a small table of its "
    "time and space cost."
)
EARLIER = [
    "What is Rayleigh scattering?",
    "How do I sort a list in Python?",
    "Give me three names for a grey cat",
]
EARLIER_AGE_DAYS = (9, 4, 1)  # moved back after they are asked: Older, Previous 7 days, Yesterday
PINNED = 0  # the EARLIER chat that is pinned
SEARCH = "list"
ZH_QUESTION = "用三句话解释什么是链表。"


def start_xvfb() -> subprocess.Popen[bytes] | None:
    """Start Xvfb on a free display and point Qt at it; None if there is a display already or no Xvfb."""
    if os.environ.get("DISPLAY") or shutil.which("Xvfb") is None:
        return None
    for number in range(99, 110):
        if Path(f"/tmp/.X11-unix/X{number}").exists():
            continue
        proc = subprocess.Popen(
            ["Xvfb", f":{number}", "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(50):
            if Path(f"/tmp/.X11-unix/X{number}").exists():
                break
            time.sleep(0.1)
        env = os.environ | {"DISPLAY": f":{number}", "QT_QPA_PLATFORM": "xcb"}
        probe = [sys.executable, "-c", "from PySide6.QtWidgets import QApplication; QApplication([])"]
        if subprocess.run(probe, env=env, capture_output=True, check=False).returncode == 0:
            os.environ.update(DISPLAY=f":{number}", QT_QPA_PLATFORM="xcb")
            return proc
        # Qt's xcb plugin needs libxcb-cursor0, libxcb-icccm4, libxcb-keysyms1 …: fall back to offscreen.
        print("Qt cannot use Xvfb here (missing xcb libraries?); using offscreen", flush=True)
        proc.terminate()
        proc.wait()
        return None
    return None


def tiny_gguf(folder: Path) -> Path:
    """The tiny random test model as a GGUF file in ``folder`` (what an import reads)."""
    from qwen_desktop.convert.tiny import make_tokenizer, make_weights, tiny_config, write_gguf

    tok = make_tokenizer()
    cfg = tiny_config(len(tok[0]))
    (folder / "Downloads").mkdir(exist_ok=True)
    return Path(write_gguf(folder / "Downloads" / "my-model-q8_0.gguf", cfg, make_weights(cfg, seed=0), tok))


def model_folder() -> tuple[Path, str]:
    """The model to show: the real one (built once) or a tiny random one."""
    from qwen_desktop.convert.builder import build_model

    if REAL_GGUF.is_file():
        folder = CACHE / "qwen2.5-coder-0.5b-int4"
        if not (folder / "manifest.json").is_file():
            print(f"building {REAL_GGUF.name} into {folder} (once)…", flush=True)
            CACHE.mkdir(parents=True, exist_ok=True)
            build_model(REAL_GGUF, folder)
        return folder, "real"
    tmp = Path(tempfile.mkdtemp(prefix="qwen-tiny-"))
    return build_model(tiny_gguf(tmp), tmp / "tiny").folder, "tiny"


def wait(signal: object, timeout: float = 300.0) -> list[object]:
    """Run the event loop until ``signal`` fires; returns its arguments."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    got: list[object] = []

    def fire(*args: object) -> None:
        got.extend(args)
        loop.quit()

    signal.connect(fire)  # type: ignore[attr-defined]
    QTimer.singleShot(int(timeout * 1000), loop.quit)
    loop.exec()
    signal.disconnect(fire)  # type: ignore[attr-defined]
    if not got:
        raise TimeoutError(f"no signal within {timeout} s")
    return got


def save_shot(widget: object, out: Path) -> None:
    """Save what ``widget`` shows as the PNG ``out`` and say so."""
    widget.grab().save(str(out))  # type: ignore[attr-defined]
    print(f"saved {out}", flush=True)


def pause(ms: int) -> None:
    """Let the event loop run for ``ms`` milliseconds."""
    from PySide6.QtCore import QEventLoop, QTimer

    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


class GapMeter:
    """The longest gap between ticks of a 10 ms timer: how long the window was unable to respond."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.ticks: list[float] = []
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def longest_ms(self) -> float:
        return max((b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False)), default=0.0) * 1000

    def share_over(self, ms: float) -> float:
        """The fraction of gaps longer than ``ms``."""
        gaps = [b - a for a, b in zip(self.ticks, self.ticks[1:], strict=False)]
        return sum(g * 1000 > ms for g in gaps) / max(len(gaps), 1)


def shoot(
    home: Path,
    folder: Path,
    theme: str,
    out: Path,
    question: str,
    language: str = "en",
    earlier: list[str] | None = None,
    mid_tokens: int = 170,
    search_out: Path | None = None,
) -> tuple[float, int, float]:
    """Open a window on ``home``, ask ``question`` and grab it mid-answer; with ``search_out``, then search
    for `SEARCH`, open the first result and grab that. Returns timer-gap figures."""
    from PySide6.QtWidgets import QApplication

    from qwen_desktop.storage.settings import Settings, save_settings
    from qwen_desktop.ui.app import install_translators, interface_font, interface_locale
    from qwen_desktop.ui.main_window import MainWindow

    os.environ["QWEN_DESKTOP_HOME"] = str(home)
    save_settings(
        Settings(
            model_path=str(folder),
            theme=theme,
            temperature=0.2,
            seed=7,
            max_tokens=600,
            threads=0,
            auto_threads=os.cpu_count() or 1,
            language=language,
        ),
        home / "settings.json",
    )
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    translators = install_translators(app, language)
    base_font = app.font()
    app.setFont(interface_font(base_font, interface_locale(language)))  # as the app does (ui/app.py)
    window = MainWindow()
    window.resize(1180, 760)
    window.show()
    wait(window.model_ready)
    for text in earlier or []:
        window.new_conversation()
        window.settings.max_tokens = 80
        window.composer.setPlainText(text)
        window.send()
        wait(window.answer_finished)
    if earlier:
        age_chats(home, window, EARLIER_AGE_DAYS[-len(earlier) :])
    window.settings.max_tokens = 600
    window.new_conversation()
    meter = GapMeter()
    tokens = [0]
    results: list[object] = []
    window.bridge.piece.connect(lambda _job, _text, n: tokens.__setitem__(0, n))
    window.answer_finished.connect(results.append)
    window.composer.setPlainText(question)
    meter.timer.start()
    window.send()
    while tokens[0] < mid_tokens and not results:
        pause(50)
    pause(150)  # let the throttled render catch up
    save_shot(window, out)
    window.stop()
    while not results:
        pause(50)
    result = results[0]
    meter.timer.stop()
    if search_out is not None:
        shoot_search(window, search_out)
    window.close()
    for translator in translators:
        QApplication.removeTranslator(translator)
    app.setFont(base_font)
    print(f"  gaps over 50 ms: {100 * meter.share_over(50):.1f}% of {len(meter.ticks)} ticks", flush=True)
    return meter.longest_ms(), tokens[0], result.stats.decode_tps if result.stats else 0.0  # type: ignore[attr-defined]


def shoot_chinese(home: Path, folder: Path, out: Path) -> None:
    """docs/screenshots/chat-zh_CN.png: the window in Simplified Chinese, mid-answer."""
    home.mkdir()
    shoot(home, folder, "light", out / "chat-zh_CN.png", ZH_QUESTION, language="zh_CN", mid_tokens=60)


def age_chats(home: Path, window: object, days: Sequence[float]) -> None:
    """Move the chats' last activity back by ``days`` (oldest chat first) and pin `PINNED`."""
    import sqlite3

    store = window.store  # type: ignore[attr-defined]
    chats = sorted(store.list_conversations(), key=lambda c: c.id)
    conn = sqlite3.connect(home / "chats.sqlite3")
    with conn:
        for conv, back in zip(chats, days, strict=False):
            conn.execute(
                "UPDATE conversations SET updated_at = ? WHERE id = ?",
                (conv.updated_at - back * 86400, conv.id),
            )
    conn.close()
    if len(chats) > PINNED:
        store.set_pinned(chats[PINNED].id, True)
    window.refresh_conversations()  # type: ignore[attr-defined]


def shoot_search(window: object, out: Path) -> None:
    """Type `SEARCH` into the sidebar's search field (Ctrl+K), open the first result, grab the window."""
    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    sidebar = window.sidebar  # type: ignore[attr-defined]
    QTest.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)  # type: ignore[arg-type]
    QTest.keyClicks(sidebar.search, SEARCH)
    pause(400)
    results = sidebar.results_list
    if results.count():
        rect = results.visualItemRect(results.item(0))
        QTest.mouseClick(
            results.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, rect.center()
        )
        QTest.mouseMove(
            results.viewport(), results.visualItemRect(results.item(min(1, results.count() - 1))).center()
        )
    pause(400)
    save_shot(window, out)


def shoot_first_run(home: Path, out: Path) -> None:
    """The first-run page: no model configured or installed."""
    from qwen_desktop.ui.main_window import MainWindow

    os.environ["QWEN_DESKTOP_HOME"] = str(home)
    window = MainWindow()
    window.resize(1180, 760)
    window.show()
    pause(300)
    save_shot(window, out)
    window.close()


def shoot_first_run_pages(tmp: Path, out: Path) -> None:
    """``first-run.png`` (the first-run page) and ``import.png`` (the real GGUF imported from it, or a tiny
    model's where the real one is missing)."""
    home = tmp / "first-run"
    home.mkdir()
    shoot_first_run(home, out / "first-run.png")
    home = tmp / "import"
    home.mkdir()
    # the real file where there is one: a tiny model's import ends before its time left settles
    if REAL_GGUF.is_file():
        (tmp / "Downloads").mkdir(exist_ok=True)
        source = tmp / "Downloads" / REAL_GGUF.name
        source.symlink_to(REAL_GGUF)
    else:
        source = tiny_gguf(tmp)
    shoot_import(home, source, out / "import.png")


def with_dialog(window: object, dialog: object) -> object:
    """The window dimmed, with ``dialog`` drawn over it where it stands, framed (a grab of the window leaves
    its dialogs out, and Xvfb has no window manager to draw their frames; this works offscreen too)."""
    from PySide6.QtCore import QPoint, QRect
    from PySide6.QtGui import QColor, QPainter, QPen

    image = window.grab()  # type: ignore[attr-defined]
    shot = dialog.grab()  # type: ignore[attr-defined]
    offset = dialog.frameGeometry().topLeft() - window.frameGeometry().topLeft()  # type: ignore[attr-defined]
    where = QPoint(max(offset.x(), 0), max(offset.y(), 0))
    painter = QPainter(image)
    painter.fillRect(image.rect(), QColor(0, 0, 0, 70))  # a window-modal dialog: the window waits behind it
    frame = QRect(where, shot.size()).adjusted(-1, -1, 0, 0)
    painter.fillRect(frame.adjusted(3, 3, 4, 4), QColor(0, 0, 0, 60))  # a small shadow
    painter.drawPixmap(where, shot)
    painter.setPen(QPen(QColor(0, 0, 0, 110)))
    painter.drawRect(frame)
    painter.end()
    return image


def shoot_import(home: Path, gguf: Path, out: Path) -> None:
    """An import started from the first-run page, grabbed once the time left is shown and the bar is past a
    third: the window with its install dialog on top."""
    from qwen_desktop.ui.main_window import MainWindow

    os.environ["QWEN_DESKTOP_HOME"] = str(home)
    window = MainWindow()
    window.resize(1180, 760)
    window.show()
    pause(300)
    dialog = window.start_install(gguf)
    pause(200)  # the dialog is placed over the window
    while True:
        state = wait(dialog.progress_changed, timeout=120)[-1]  # it may fire more than once per wait
        if state.remaining is not None and state.fraction >= 0.35:  # type: ignore[attr-defined]
            break
        if state.fraction >= 1.0:  # type: ignore[attr-defined]
            break  # ended before it (a tiny model): the end it is
    pause(50)
    with_dialog(window, dialog).save(str(out))  # type: ignore[attr-defined]
    print(f"saved {out}: {dialog.stage.text()} / {dialog.times.text()}", flush=True)
    wait(window.model_ready, timeout=120)
    window.close()


def shoot_model_picker(home: Path, folder: Path, out: Path) -> None:
    """``model-picker.png``: the header's model list open, over a short chat. The models to pick from are
    ``folder`` and a tiny one, offered as models that came with the app (symbolic links: nothing is copied)."""
    from PySide6.QtGui import QGuiApplication

    from qwen_desktop.library.bundled import BUNDLED_ENV
    from qwen_desktop.storage.settings import Settings, save_settings
    from qwen_desktop.ui.main_window import MainWindow

    shelf = home / "shelf"
    shelf.mkdir(parents=True)
    (shelf / folder.name).symlink_to(folder)
    tiny = tiny_model()
    (shelf / tiny.name).symlink_to(tiny)
    os.environ[BUNDLED_ENV] = str(shelf)
    os.environ["QWEN_DESKTOP_HOME"] = str(home)
    save_settings(
        Settings(model_path=str(shelf / folder.name), theme="light", max_tokens=60, temperature=0.2, seed=7),
        home / "settings.json",
    )
    window = MainWindow()
    window.resize(1180, 760)
    window.show()
    for _ in range(1200):  # polled, not waited on: a signal that came before the wait began is not missed
        if window.model_info is not None or window.load_error is not None:
            break
        pause(100)
    if window.model_info is None:
        raise RuntimeError(f"the model did not load: {window.load_error}")
    window.composer.setPlainText("What is a linked list? One sentence.")
    window.send()
    while window.bridge.busy:
        pause(100)
    window.header.model_combo.showPopup()
    pause(400)
    # the list is a window of its own: grab the screen where the window is
    screen = QGuiApplication.primaryScreen()
    frame = window.frameGeometry()
    screen.grabWindow(0, frame.x(), frame.y(), frame.width(), frame.height()).save(str(out))
    print(f"saved {out}", flush=True)
    window.header.model_combo.hidePopup()
    window.close()
    del os.environ[BUNDLED_ENV]


def shoot_models_page(home: Path, folder: Path, theme: str, out: Path) -> None:
    """The Models page in ``theme``: ``folder`` as a model that came with the app (a symbolic link), a tiny
    model imported from a GGUF file, and the catalogue."""
    from PySide6.QtWidgets import QApplication

    from qwen_desktop.library.bundled import BUNDLED_ENV
    from qwen_desktop.library.registry import Registry
    from qwen_desktop.storage.settings import Settings
    from qwen_desktop.ui.models_dialog import ModelsDialog
    from qwen_desktop.ui.theme import apply_theme

    shelf = home / "shelf"
    shelf.mkdir(parents=True)
    (shelf / folder.name).symlink_to(folder)
    os.environ[BUNDLED_ENV] = str(shelf)
    os.environ["QWEN_DESKTOP_HOME"] = str(home)
    registry = Registry(home / "models")
    registry.import_model(tiny_gguf(home), name="my-model-q8_0")
    registry.set_default(folder.name)  # the model in use, as when it was chosen on the first-run page
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    apply_theme(app, theme)
    dialog = ModelsDialog(Settings(models_dir=str(home / "models")), model_in_use=shelf / folder.name)
    dialog.resize(980, 640)
    dialog.show()
    pause(300)
    save_shot(dialog, out)
    dialog.close()
    del os.environ[BUNDLED_ENV]


def tiny_model() -> Path:
    """A tiny random model, built once into a temporary folder."""
    from qwen_desktop.convert.builder import build_model
    from qwen_desktop.convert.tiny import make_tokenizer, make_weights, tiny_config, write_gguf

    tmp = Path(tempfile.mkdtemp(prefix="qwen-tiny-"))
    tok = make_tokenizer()
    cfg = tiny_config(len(tok[0]))
    gguf = write_gguf(tmp / "tiny.gguf", cfg, make_weights(cfg, seed=0), tok)
    return build_model(gguf, tmp / "tiny-test-model").folder


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "screenshots")
    parser.add_argument("--offscreen", action="store_true", help="use Qt's offscreen platform, not Xvfb")
    parser.add_argument(
        "--only",
        choices=["first-run", "model-picker", "chat-zh_CN", "models", "chat"],
        help="only the first-run page and an import in progress (tiny model), only the model picker, only "
        "the Chinese window mid-answer, only the Models page (light and dark), or only the chat mid-answer "
        "(light and dark, and the search)",
    )
    args = parser.parse_args()
    xvfb = None if args.offscreen else start_xvfb()
    if xvfb is None:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    print(f"Qt platform: {os.environ.get('QT_QPA_PLATFORM')} {os.environ.get('DISPLAY', '')}", flush=True)
    sys.path.insert(0, str(REPO))
    try:
        from PySide6.QtWidgets import QApplication

        if args.only == "first-run":
            app = QApplication([])
            app.setApplicationName("Qwen Desktop")
            args.out.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix="qwen-screens-") as tmp:
                shoot_first_run_pages(Path(tmp), args.out)
            del app
            return 0
        folder, kind = model_folder()
        print(f"model: {folder} ({kind})", flush=True)
        app = QApplication([])
        app.setApplicationName("Qwen Desktop")
        args.out.mkdir(parents=True, exist_ok=True)
        if args.only == "model-picker":
            with tempfile.TemporaryDirectory(prefix="qwen-screens-") as tmp:
                shoot_model_picker(Path(tmp) / "picker", folder, args.out / "model-picker.png")
            del app
            return 0
        if args.only == "chat-zh_CN":
            with tempfile.TemporaryDirectory(prefix="qwen-screens-") as tmp:
                shoot_chinese(Path(tmp) / "zh", folder, args.out)
            del app
            return 0
        if args.only == "models":
            with tempfile.TemporaryDirectory(prefix="qwen-screens-") as tmp:
                for theme in ("light", "dark"):
                    name = "models.png" if theme == "light" else "models-dark.png"
                    shoot_models_page(Path(tmp) / theme, folder, theme, args.out / name)
            del app
            return 0
        with tempfile.TemporaryDirectory(prefix="qwen-screens-") as tmp:
            figures = []
            for theme in ("light", "dark"):
                home = Path(tmp) / theme
                home.mkdir()
                search_out = args.out / "search.png" if theme == "light" else None
                figures.append(
                    shoot(
                        home,
                        folder,
                        theme,
                        args.out / f"chat-{theme}.png",
                        QUESTION,
                        earlier=EARLIER,
                        search_out=search_out,
                    )
                )
            if args.only != "chat":
                shoot_chinese(Path(tmp) / "zh", folder, args.out)
                shoot_first_run_pages(Path(tmp), args.out)
                shoot_model_picker(Path(tmp) / "picker", folder, args.out / "model-picker.png")
                for theme in ("light", "dark"):
                    name = "models.png" if theme == "light" else "models-dark.png"
                    shoot_models_page(Path(tmp) / f"models-{theme}", folder, theme, args.out / name)
        for (gap, tokens, tps), theme in zip(figures, ("light", "dark"), strict=True):
            print(
                f"{theme}: longest gap of a 10 ms timer while {tokens} tokens streamed "
                f"({kind} model, {tps:.1f} tokens/s): {gap:.1f} ms"
            )
        del app
    finally:
        if xvfb is not None:
            xvfb.terminate()
            xvfb.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
