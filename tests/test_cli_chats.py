"""``qwen-desktop chats``, ``export`` and ``import-chats`` on a real data folder, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from qwen_desktop.cli import main
from qwen_desktop.storage.chats import ChatStore
from qwen_desktop.storage.paths import HOME_ENV
from tests.storage.test_export import snapshot


def cli(home, *args):
    return subprocess.run(
        [sys.executable, "-m", "qwen_desktop", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, HOME_ENV: str(home)},
        check=False,
    )


def seed(home):
    home.mkdir(parents=True, exist_ok=True)
    with ChatStore(home / "chats.sqlite3") as store:
        trip = store.create_conversation("Trip to Lisbon")
        store.add_message(trip.id, "user", "Where should I eat in Lisbon?")
        store.add_message(trip.id, "assistant", "Time Out Market.")
        zh = store.create_conversation("学习")
        store.add_message(zh.id, "user", "什么是机器学习？")
        store.set_pinned(zh.id, True)
        return trip.id, zh.id


def test_export_all_and_import_into_another_data_folder(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    seed(first)
    out = tmp_path / "exports" / "all chats.json"
    exported = cli(first, "export", "--all", str(out))
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout == f"Exported 2 chats to {out}\n"
    assert json.loads(out.read_bytes())["format"] == "qwen-desktop-chats"

    imported = cli(second, "import-chats", str(out))
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout == f"Imported 2 chats from {out}\n"
    with ChatStore(first / "chats.sqlite3") as a, ChatStore(second / "chats.sqlite3") as b:
        assert snapshot(a) == snapshot(b)

    again = cli(second, "import-chats", str(out))
    assert again.returncode == 0, again.stderr
    assert (
        again.stdout == f"Imported 0 chats from {out}; 2 chats already here (same chat id) left as they are\n"
    )

    listed = cli(second, "chats")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == 2
    assert lines[0].endswith("* 学习") and lines[1].endswith("  Trip to Lisbon")

    found = cli(second, "chats", "--search", "lisbon")
    assert found.returncode == 0, found.stderr
    assert "Trip to Lisbon" in found.stdout
    assert "Where should I eat in [Lisbon]?" in found.stdout


def test_one_chat_to_markdown_and_to_json(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    trip, _ = seed(home)
    monkeypatch.setenv(HOME_ENV, str(home))
    assert main(["export", "--chat", str(trip), str(tmp_path / "trip.md")]) == 0
    assert capsys.readouterr().out == f"Exported chat {trip} to {tmp_path / 'trip.md'}\n"
    text = (tmp_path / "trip.md").read_text(encoding="utf-8")
    assert text.startswith("# Trip to Lisbon\n") and "Time Out Market." in text

    assert main(["export", "--chat", str(trip), "--format", "json", str(tmp_path / "trip.txt")]) == 0
    assert capsys.readouterr().out == f"Exported 1 chat to {tmp_path / 'trip.txt'}\n"
    (chat,) = json.loads((tmp_path / "trip.txt").read_bytes())["conversations"]
    assert chat["title"] == "Trip to Lisbon"


def test_mistakes_are_one_line_and_change_nothing(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    seed(home)
    monkeypatch.setenv(HOME_ENV, str(home))
    with ChatStore(home / "chats.sqlite3") as store:
        before = snapshot(store)

    assert main(["export", str(tmp_path / "all.md")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("qwen-desktop: error: a Markdown export holds one chat") and err.count("\n") == 1

    assert main(["export", "--chat", "999", str(tmp_path / "x.json")]) == 1
    assert capsys.readouterr().err == "qwen-desktop: error: Conversation 999 does not exist.\n"
    assert not (tmp_path / "x.json").exists()

    bad = tmp_path / "cut.json"
    assert main(["export", str(tmp_path / "good.json")]) == 0
    bad.write_bytes((tmp_path / "good.json").read_bytes()[:200])
    capsys.readouterr()
    assert main(["import-chats", str(bad)]) == 1
    assert (
        capsys.readouterr().err
        == f"qwen-desktop: error: {bad} cannot be imported: it is cut short (the JSON ends early).\n"
    )

    assert main(["import-chats", str(tmp_path / "missing.json")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("qwen-desktop: error: Cannot read ") and "No such file" in err

    with pytest.raises(SystemExit) as usage:
        main(["export", "--chat", "1", "--all", str(tmp_path / "y.json")])
    assert usage.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err

    with ChatStore(home / "chats.sqlite3") as store:
        assert snapshot(store) == before


def test_export_leaves_an_answer_being_written_alone(tmp_path, monkeypatch, capsys):
    """The app may be open and writing an answer: the command must not mark it interrupted."""
    home = tmp_path / "home"
    home.mkdir()
    with ChatStore(home / "chats.sqlite3") as store:
        conversation = store.create_conversation("live")
        store.add_message(conversation.id, "user", "q")
        answer = store.add_message(conversation.id, "assistant", "half", status="streaming")
        monkeypatch.setenv(HOME_ENV, str(home))
        assert main(["export", str(tmp_path / "all.json")]) == 0
        assert main(["chats"]) == 0
        assert store.get_message(answer.id).status == "streaming"
    capsys.readouterr()
