"""Inputs that once broke storage (issue 25): deep JSON, a loop of parents, a second app on one folder."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from qwen_desktop.storage.chats import ChatStore, open_chat_store
from qwen_desktop.storage.errors import AlreadyRunningError, DamagedChatError, StorageError
from qwen_desktop.storage.lock import InstanceLock
from qwen_desktop.storage.settings import Settings, load_settings

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "storage"


@pytest.mark.parametrize("name", sorted(p.name for p in CORPUS.glob("settings-*.json")))
def test_settings_corpus_loads_with_defaults_and_a_warning(tmp_path, name):
    content = (CORPUS / name).read_bytes()
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    settings, warning = load_settings(path)
    assert isinstance(settings, Settings)
    assert warning is not None and "\n" not in warning
    (aside,) = tmp_path.glob("settings.json.corrupt-*")
    assert aside.read_bytes() == content, "the old file is kept aside, byte for byte"
    assert load_settings(path)[1] is None, "the repaired file loads cleanly next time"


def test_settings_nested_100k_deep_fall_back_to_defaults(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"threads": ' + "[" * 100_000, encoding="utf-8")
    settings, warning = load_settings(path)
    assert settings == Settings()
    assert warning is not None and "damaged" in warning


def test_an_integer_too_big_for_a_float_resets_only_that_value(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text('{"temperature": 1' + "0" * 400 + ', "top_k": 7}', encoding="utf-8")
    settings, warning = load_settings(path)
    assert settings.top_k == 7
    assert settings.temperature == Settings().temperature
    assert warning is not None and "temperature" in warning


def _chat_with_a_parent_loop(path: Path) -> int:
    with ChatStore(path) as store:
        conv = store.create_conversation("looped")
        first = store.add_message(conv.id, "user", "one")
        second = store.add_message(conv.id, "assistant", "two")
        store.add_message(conv.id, "user", "three")
        fine = store.create_conversation("fine")
        store.add_message(fine.id, "user", "still here")
    # Damage the real file the way a bad sector or a foreign tool could: the first message's parent
    # becomes the second, so the parents go round in a loop. quick_check does not look at this.
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("UPDATE messages SET parent_id = ? WHERE id = ?", (second.id, first.id))
    conn.commit()
    conn.close()
    return conv.id


@pytest.mark.timeout(60)
def test_a_parent_loop_is_reported_as_a_damaged_chat_not_a_hang(tmp_path):
    path = tmp_path / "chats.sqlite3"
    looped = _chat_with_a_parent_loop(path)
    store, warning = open_chat_store(path)
    with store:
        assert warning is None, "quick_check passes: the rest of the database is fine"
        with pytest.raises(DamagedChatError, match=rf"Conversation {looped} is damaged") as info:
            store.path(looped)
        assert isinstance(info.value, StorageError)
        assert "\n" not in str(info.value)
        fine = next(c for c in store.list_conversations() if c.title == "fine")
        assert [m.content for m in store.path(fine.id)] == ["still here"]
        head = store.get_conversation(looped).head_message_id
        assert head is not None
        with pytest.raises(DamagedChatError):  # switch_to's walk down the tree ends too
            store.switch_to(head)
        assert store.delete_conversation(looped), "a damaged chat can still be deleted"


def test_stats_nested_too_deep_read_as_no_stats(tmp_path):
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        conv = store.create_conversation()
        message = store.add_message(conv.id, "assistant", "hi")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET stats_json = ? WHERE id = ?", ("[" * 100_000, message.id))
    conn.commit()
    conn.close()
    with ChatStore(path) as store:
        assert store.get_message(message.id).stats is None
        assert store.path(conv.id)[0].content == "hi"


def test_instance_lock_is_exclusive_and_released(tmp_path):
    first = InstanceLock(tmp_path)
    first.acquire()
    with pytest.raises(AlreadyRunningError, match="already running") as info:
        InstanceLock(tmp_path).acquire()
    assert str(tmp_path) in str(info.value)
    first.release()
    with InstanceLock(tmp_path) as again:
        assert again.held


def test_instance_lock_is_freed_when_the_holder_dies(tmp_path):
    code = textwrap.dedent(
        f"""
        import os, sys
        from qwen_desktop.storage.lock import InstanceLock
        lock = InstanceLock({str(tmp_path)!r})
        lock.acquire()
        print("locked", flush=True)
        sys.stdin.readline()
        os._exit(9)  # no clean-up: the OS must drop the lock
        """
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with pytest.raises(AlreadyRunningError):
            InstanceLock(tmp_path).acquire()
    finally:
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(timeout=30)
        if holder.stdout is not None:
            holder.stdout.close()
    assert (tmp_path / "instance.lock").exists(), "the file stays; only the lock counted"
    with InstanceLock(tmp_path) as lock:
        assert lock.held


def test_a_lone_surrogate_is_kept_as_a_replacement_character_not_a_lost_message(tmp_path):
    # a surrogate half pasted into the composer made add_message raise UnicodeEncodeError: the question
    # was lost and the window showed a traceback; every other character of the text must survive
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        chat = store.create_conversation("t\ud800itle", system_prompt="be \udfff brief")
        question = store.add_message(chat.id, "user", "half \ud83d of a pair", stats={"k\udc00": 1})
        answer = store.add_message(chat.id, "assistant", "")
        store.update_message(answer.id, content="ok \udfff")
        store.rename_conversation(chat.id, "re\ud801named")
        store.set_preset(chat.id, "coder", "code \ud800")
        assert question.content == "half \ufffd of a pair"
    with ChatStore(path) as store:
        (chat,) = store.list_conversations()
        assert chat.title == "re\ufffdnamed" and chat.system_prompt == "code \ufffd"
        assert [m.content for m in store.path(chat.id)] == ["half \ufffd of a pair", "ok \ufffd"]
        assert store.path(chat.id)[0].stats == {"k\ufffd": 1}
        assert store.search("pair")[0].message_id == question.id


def test_a_chat_titled_by_a_first_message_with_a_lone_surrogate(tmp_path):
    with ChatStore(tmp_path / "chats.sqlite3") as store:
        chat = store.create_conversation()
        assert store.auto_title(chat.id, "why \udbff?").title == "why \ufffd?"
