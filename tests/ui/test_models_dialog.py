"""The models page and its download dialog, driven with pytest-qt against the local fake hub (tests/hubserver.py).

Real widgets, real QThread, real registry and builder; the catalogue's real repository names are served by the
fake hub with the tiny GGUF as content. ``QWEN_DESKTOP_HOME`` is a fresh folder per test (the ``home`` fixture).
"""

from __future__ import annotations

import shutil
import socket
from collections import namedtuple
from pathlib import Path

import huggingface_hub
import pytest
from PySide6.QtCore import QObject, Qt, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialog, QFileDialog, QMessageBox

from qwen_desktop.library.catalog import find_entry, load_catalog
from qwen_desktop.library.download import part_path
from qwen_desktop.library.registry import DOWNLOADS, Registry
from qwen_desktop.storage import paths
from qwen_desktop.storage.settings import Settings
from qwen_desktop.ui.download_dialog import BAR_STEPS
from qwen_desktop.ui.models_dialog import ModelsDialog
from qwen_desktop.units import human_bytes
from tests.hubserver import HubServer, serve_catalog
from tests.ui.walk import unnamed

DiskUsage = namedtuple("DiskUsage", "total used free")
NAME = "qwen2.5-0.5b-instruct"
ENTRY = find_entry(NAME)


@pytest.fixture
def hub(tiny_gguf, monkeypatch):
    server = HubServer()
    serve_catalog(server, tiny_gguf)
    with server:
        monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        yield server
    huggingface_hub.close_session()


@pytest.fixture
def open_dialog(qtbot, home):
    def make(model_in_use: Path | None = None, settings: Settings | None = None) -> ModelsDialog:
        dialog = ModelsDialog(settings or Settings(), home / "settings.json", model_in_use=model_in_use)
        qtbot.addWidget(dialog)
        dialog.show()
        return dialog

    return make


def installed_names(dialog: ModelsDialog) -> list[str]:
    table = dialog.installed_table
    return [table.item(r, 1).data(0x0100) for r in range(table.rowCount())]  # Qt.UserRole


def install_copy(tiny_model_dir: Path, name: str):
    return Registry(paths.models_dir()).import_model(tiny_model_dir, name=name)


def test_lists_installed_models_and_the_catalogue_without_touching_the_network(
    open_dialog, hub, tiny_model_dir
):
    model = install_copy(tiny_model_dir, "tiny")
    dialog = open_dialog(model_in_use=model.folder)

    table = dialog.installed_table
    assert table.rowCount() == 1
    assert installed_names(dialog) == ["tiny"]
    assert table.item(0, 0).text() == "★"  # the only model is the default
    assert "(in use)" in table.item(0, 1).text()
    assert table.item(0, 2).text() == model.precision
    assert table.item(0, 5).text() == model.checksum[:12]
    assert dialog.folder_label.text() == str(paths.models_dir())

    catalog = load_catalog()
    available = dialog.available_table
    assert [available.item(r, 0).text() for r in range(available.rowCount())] == [
        e.display_name for e in catalog
    ]
    assert available.item(0, 3).text() == ENTRY.license
    assert dialog.download_button(NAME).text() == "Download"
    assert hub.requests == []  # the catalogue is local data: nothing was asked of the hub

    assert unnamed(dialog) == []  # every control has an accessible name (tests/ui/walk.py)


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "zh_CN"])
def test_download_buttons_have_their_natural_size_and_room(
    open_dialog, qapp, qtbot, tiny_model_dir, theme, language
):
    from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionButton

    from qwen_desktop.ui.app import install_translators
    from qwen_desktop.ui.models_dialog import CELL_PADDING
    from qwen_desktop.ui.theme import apply_theme

    # one button of each kind: Download, Installed (disabled) and the longest, "Resume (… kept)"
    install_copy(tiny_model_dir, "qwen2.5-coder-0.5b-instruct")
    kept = find_entry("qwen2.5-1.5b-instruct")
    part = part_path(paths.models_dir() / DOWNLOADS / kept.name / kept.files[0])
    part.parent.mkdir(parents=True)
    part.write_bytes(b"\0" * 123_456)
    translators = install_translators(qapp, language) if language != "en" else []
    apply_theme(qapp, theme)
    try:
        dialog = open_dialog()
        qtbot.waitExposed(dialog)
        qtbot.wait(50)  # the table sizes its rows and columns
        table = dialog.available_table
        texts = []
        for row in range(table.rowCount()):
            cell = table.cellWidget(row, 4)
            button = dialog.download_button(table.item(row, 0).data(Qt.ItemDataRole.UserRole))
            texts.append(button.text())
            hint = button.sizeHint()
            assert button.width() >= hint.width() and button.height() >= hint.height(), button.text()
            option = QStyleOptionButton()
            button.initStyleOption(option)
            room = button.style().subElementRect(QStyle.SubElement.SE_PushButtonContents, option, button)
            assert room.width() >= button.fontMetrics().horizontalAdvance(button.text()), button.text()
            # padded inside its cell, which the table made big enough for it
            assert table.visualRect(table.model().index(row, 4)).size() == cell.size()
            inside = cell.rect().marginsRemoved(CELL_PADDING)
            assert inside.contains(button.geometry()), (button.text(), button.geometry(), cell.rect())
        resume = "继续（已保留" if language == "zh_CN" else "Resume ("
        installed = "已安装" if language == "zh_CN" else "Installed"
        assert any(t.startswith(resume) for t in texts) and installed in texts, texts
    finally:
        for translator in translators:
            QApplication.removeTranslator(translator)
        apply_theme(qapp, "light")


def test_download_shows_progress_builds_registers_and_offers_use(open_dialog, qtbot, hub, tiny_gguf):
    dialog = open_dialog()
    assert installed_names(dialog) == []
    bar_values: list[int] = []
    events = []

    def record(progress):
        events.append(progress)
        bar_values.append(pending.bar.value())

    pending = dialog.download(NAME)
    pending.task.download_progress.connect(record)
    with qtbot.waitSignal(pending.installed, timeout=30000) as installed:
        pass
    model = installed.args[0]

    size = tiny_gguf.stat().st_size
    assert events and events[-1].done == events[-1].total == size
    # one bar over the download and the build: the download is its first share, then the build fills it
    assert bar_values == sorted(bar_values) and 0 < bar_values[-1] < BAR_STEPS
    assert pending.bar.value() == BAR_STEPS
    assert pending.stage.text() == "Installed" and pending.use_button.isVisible()
    assert installed_names(dialog) == [NAME]
    assert dialog.download_button(NAME).text() == "Installed"
    assert not dialog.download_button(NAME).isEnabled()
    assert any(r.method == "GET" and r.server == "cdn" for r in hub.requests)

    assert unnamed(pending) == []

    pending.use_button.click()
    assert dialog.result() == dialog.DialogCode.Accepted
    assert dialog.result_settings().model_path == str(model.folder)


def test_the_download_shows_its_bytes_speed_and_time_left(open_dialog, qtbot, hub, tiny_gguf):
    import re

    hub.rate = 150_000  # bytes/s: ~3 s for the tiny file
    dialog = open_dialog()
    pending = dialog.download(NAME)
    details, times = [], []
    pending.task.download_progress.connect(lambda _p: details.append(pending.detail.text()))
    pending.task.download_progress.connect(lambda _p: times.append(pending.times.text()))
    with qtbot.waitSignal(pending.installed, timeout=30000):
        pass
    size = re.escape(human_bytes(tiny_gguf.stat().st_size))
    full = re.compile(rf"[\d.]+ (KB|MB) of {size} · (1[2-8]\d) KB/s · about \d+ s left")
    assert any(full.fullmatch(d) for d in details), details
    # the speed line is redrawn once a second, not with every report
    assert len({d.split(" · ", 1)[1] for d in details if " · " in d}) < len(details) / 3
    assert any("left in all" in t for t in times)


def test_cancel_keeps_the_partial_file_and_download_again_resumes(open_dialog, qtbot, hub, tiny_gguf):
    hub.rate = 150_000  # bytes/s: the tiny file takes ~3 s, time enough to cancel mid-way
    dialog = open_dialog()
    pending = dialog.download(NAME)

    def cancel_midway(progress):
        if progress.done >= 60_000:
            pending.close_button.click()  # "Cancel"

    pending.task.download_progress.connect(cancel_midway)
    with qtbot.waitSignal(pending.task.cancelled, timeout=20000):
        pass
    part = part_path(paths.models_dir() / DOWNLOADS / NAME / ENTRY.files[0])
    kept = part.stat().st_size
    assert 60_000 <= kept < tiny_gguf.stat().st_size
    assert pending.stage.text() == "Paused" and pending.retry_button.isVisible()
    assert "continues from there" in pending.note.text()
    assert pending.detail.text().startswith("Paused at ")
    assert installed_names(dialog) == []

    pending.close_button.click()  # now "Close"
    qtbot.waitUntil(lambda: not pending.isVisible())
    button = dialog.download_button(NAME)
    assert button.text().startswith("Resume")

    hub.rate = None
    button.click()
    resumed = dialog.download_dialog
    assert resumed is not None and resumed is not pending
    with qtbot.waitSignal(resumed.installed, timeout=30000):
        pass
    assert hub.file_requests()[-1].range == f"bytes={kept}-"
    assert installed_names(dialog) == [NAME]
    assert not part.exists()


def test_offline_says_so_and_offers_import(open_dialog, qtbot, home, monkeypatch, tiny_gguf):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")  # nothing listens there
    dialog = open_dialog()
    pending = dialog.download(NAME)
    with qtbot.waitSignal(pending.task.failed, timeout=20000) as failed:
        pass
    huggingface_hub.close_session()
    assert failed.args[0] == "offline"
    assert pending.error_label.text() == (
        "No connection to 127.0.0.1 — check the network, or use a model file you already have."
    )
    assert pending.import_button.isVisible() and pending.times.text() == ""

    # "Import from disk…" asks for a file and builds it, with build progress, into the installed list.
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(tiny_gguf), ""))
    pending.import_button.click()
    importing = dialog.download_dialog
    assert importing is not pending and importing.source == tiny_gguf
    stages: list[str] = []
    importing.task.build_progress.connect(lambda stage, done, total: stages.append(stage))
    with qtbot.waitSignal(importing.installed, timeout=30000):
        pass
    assert stages and stages[-1] == "done"
    assert importing.bar.value() == importing.bar.maximum() == BAR_STEPS
    assert installed_names(dialog) == ["tiny"]


@pytest.mark.parametrize(
    ("fault", "kind", "headline"),
    [
        ("gated", "auth", "needs a Hugging Face login"),
        ("missing", "not_found", "was not found on the hub"),
        ("corrupt", "checksum", "arrived damaged"),
        ("full", "disk", "Not enough disk space"),
    ],
)
def test_hub_errors_are_told_in_one_clear_line(open_dialog, qtbot, hub, monkeypatch, fault, kind, headline):
    repo = hub.repos[ENTRY.repo]
    if fault == "gated":
        repo.gated = True
    elif fault == "missing":
        repo.files = {}
    elif fault == "corrupt":
        hub.corrupt = True
    else:
        monkeypatch.setattr(shutil, "disk_usage", lambda path: DiskUsage(10**12, 10**12, 1000))
    dialog = open_dialog()
    pending = dialog.download(NAME)
    with qtbot.waitSignal(pending.task.failed, timeout=20000) as failed:
        pass
    assert failed.args[0] == kind
    text = pending.error_label.text()
    assert headline in text and (ENTRY.files[0] in text or kind == "disk")
    assert pending.stage.text() == "Failed"
    assert pending.retry_button.isVisible() == (kind != "disk")
    assert installed_names(dialog) == []
    if kind == "checksum":  # the damaged bytes are deleted, not kept for a resume
        assert not part_path(paths.models_dir() / DOWNLOADS / NAME / ENTRY.files[0]).exists()


def test_set_default_and_delete_with_confirmation(open_dialog, monkeypatch, tiny_model_dir):
    a = install_copy(tiny_model_dir, "a")
    install_copy(tiny_model_dir, "b")
    dialog = open_dialog(model_in_use=a.folder)
    assert dialog.result_settings() == dialog.settings  # nothing changed yet

    dialog.select("b")
    dialog.default_button.click()
    registry = Registry(paths.models_dir())
    assert registry.get_default().name == "b"
    assert dialog.installed_table.item(1, 0).text() == "★"
    assert not dialog.default_button.isEnabled()
    b_folder = registry.get("b").folder
    assert dialog.result_settings().model_path == str(b_folder)  # the window switches to it on close

    asked: list[str] = []

    def answer(button):
        def fake_exec(box):
            asked.append(box.text())
            return button

        return fake_exec

    # The model in use is refused, with the reason.
    dialog.select("a")
    monkeypatch.setattr(QMessageBox, "exec", answer(QMessageBox.StandardButton.Ok))
    dialog.delete_button.click()
    assert "is the model in use" in asked[-1]
    assert installed_names(dialog) == ["a", "b"]

    # "No" keeps the model; "Yes" deletes it and the default falls back to what is left.
    dialog.select("b")
    monkeypatch.setattr(QMessageBox, "exec", answer(QMessageBox.StandardButton.No))
    dialog.delete_button.click()
    assert asked[-1].startswith("Delete ") and str(b_folder) in asked[-1]
    assert installed_names(dialog) == ["a", "b"]
    monkeypatch.setattr(QMessageBox, "exec", answer(QMessageBox.StandardButton.Yes))
    dialog.delete_button.click()
    assert installed_names(dialog) == ["a"]
    assert not b_folder.exists()
    assert registry.get_default().name == "a"
    assert dialog.result_settings() == dialog.settings  # "a" is in use already: no switch


def test_the_settings_model_counts_as_in_use_while_it_loads(open_dialog, monkeypatch, tiny_model_dir):
    a = install_copy(tiny_model_dir, "a")
    install_copy(tiny_model_dir, "b")
    Registry(paths.models_dir()).set_default("b")
    dialog = open_dialog(settings=Settings(model_path=str(a.folder)))  # no folder from the window yet
    assert dialog.result_settings() == dialog.settings  # no switch to the registry's default "b"
    dialog.select("a")
    monkeypatch.setattr(QMessageBox, "exec", lambda box: QMessageBox.StandardButton.Ok)
    dialog.delete_button.click()
    assert installed_names(dialog) == ["a", "b"]


def test_change_folder_saves_the_setting_and_lists_the_new_folder(
    open_dialog, home, tmp_path, tiny_model_dir
):
    install_copy(tiny_model_dir, "old")
    dialog = open_dialog()
    assert installed_names(dialog) == ["old"]
    other = tmp_path / "elsewhere"
    dialog.change_folder(other)
    assert dialog.folder_label.text() == str(other)
    assert installed_names(dialog) == []
    assert '"models_dir": "' + str(other) in (home / "settings.json").read_text()
    assert dialog.result_settings().models_dir == str(other)


def test_closing_the_page_mid_download_cancels_joins_and_keeps_the_part(open_dialog, qtbot, hub):
    hub.rate = 100_000
    dialog = open_dialog()
    pending = dialog.download(NAME)
    with qtbot.waitSignal(
        pending.task.download_progress, timeout=20000, check_params_cb=lambda p: p.done > 0
    ):
        pass
    dialog.close()
    assert not pending.task.install_thread.isRunning() and not pending.isVisible()
    assert part_path(paths.models_dir() / DOWNLOADS / NAME / ENTRY.files[0]).stat().st_size > 0
    assert Registry(paths.models_dir()).list_models() == []


def test_a_broken_model_folder_is_listed_and_deleted_from_the_dialog(
    qtbot, open_dialog, monkeypatch, tiny_model_dir
):
    from PySide6.QtCore import Qt

    install_copy(tiny_model_dir, "good")
    broken = paths.models_dir() / "broken"
    broken.mkdir()
    (broken / "manifest.json").write_text('{"format": "qwen-desktop-model", "format_version": "abc"}')
    dialog = open_dialog()  # opens despite the bad manifest
    assert installed_names(dialog) == ["broken", "good"]
    table = dialog.installed_table
    assert "broken" in table.item(0, 1).text() and "format_version" in table.item(0, 4).text()

    rect = table.visualItemRect(table.item(0, 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert dialog.selected_model().name == "broken"
    assert not dialog.default_button.isEnabled() and dialog.delete_button.isEnabled()

    asked: list[str] = []

    def answer_yes(box):  # the confirmation box, answered as a user would
        asked.append(box.text())
        return QMessageBox.StandardButton.Yes

    monkeypatch.setattr(QMessageBox, "exec", answer_yes)
    qtbot.mouseClick(dialog.delete_button, Qt.MouseButton.LeftButton)
    assert asked and str(broken) in asked[-1]
    assert installed_names(dialog) == ["good"]
    assert not broken.exists()


class OpenedUrls(QObject):
    """Catches the URLs the app asks the desktop to open (``QDesktopServices.setUrlHandler``): nothing is
    opened for real."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url.toLocalFile())


@pytest.fixture
def opened_urls():
    catcher = OpenedUrls()
    QDesktopServices.setUrlHandler("file", catcher, "open")
    yield catcher
    QDesktopServices.unsetUrlHandler("file")


def test_enter_closes_the_page_and_never_opens_the_folder(open_dialog, qtbot, tiny_model_dir, opened_urls):
    model = install_copy(tiny_model_dir, "tiny")
    dialog = open_dialog(model_in_use=model.folder)
    assert dialog.close_button.isDefault() and not dialog.open_folder_button.isDefault()
    # Enter with the focus on the button itself, then in the table: the page closes, no folder opens
    for target in (dialog.open_folder_button, dialog.installed_table):
        dialog.show()
        target.setFocus()
        qtbot.waitUntil(target.hasFocus)
        qtbot.keyClick(target, Qt.Key.Key_Return)
        assert not dialog.isVisible()
        assert dialog.result() == QDialog.DialogCode.Rejected
    assert opened_urls.urls == []
    dialog.show()
    qtbot.mouseClick(dialog.open_folder_button, Qt.MouseButton.LeftButton)  # a click still opens it
    assert opened_urls.urls == [str(paths.models_dir())]
