import sqlite3
import threading

import pytest

from qwen_desktop.storage.chats import (
    DEFAULT_TITLE,
    MIGRATIONS,
    ChatStore,
    open_chat_store,
    title_from_text,
)
from qwen_desktop.storage.errors import CorruptDatabaseError, NotFoundError, StorageError
from tests.storage.old_schema import write_schema_1


def _texts(messages):
    return [m.content for m in messages]


def test_new_database_uses_wal_foreign_keys_and_the_latest_schema(tmp_path):
    path = tmp_path / "chats.sqlite3"
    ChatStore(path).close()
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
    conn.close()
    with ChatStore(path) as store:
        assert store._conn.execute("PRAGMA foreign_keys").fetchone() == (1,)


def test_conversation_crud(store):
    created = store.create_conversation()
    assert created.title == DEFAULT_TITLE
    assert created.head_message_id is None
    assert store.get_conversation(created.id) == created
    assert store.path(created.id) == []

    renamed = store.rename_conversation(created.id, "  Trip planning ")
    assert renamed.title == "Trip planning"
    assert renamed.updated_at == created.updated_at  # renaming does not reorder the list

    with_prompt = store.set_system_prompt(created.id, "Answer in French.")
    assert with_prompt.system_prompt == "Answer in French."

    assert store.delete_conversation(created.id) is True
    assert store.delete_conversation(created.id) is False
    assert store.list_conversations() == []
    with pytest.raises(NotFoundError):
        store.get_conversation(created.id)
    with pytest.raises(NotFoundError):
        store.rename_conversation(created.id, "x")
    with pytest.raises(NotFoundError):
        store.add_message(created.id, "user", "hi")


def test_blank_title_is_rejected(store):
    conversation = store.create_conversation()
    with pytest.raises(ValueError, match="blank"):
        store.rename_conversation(conversation.id, "   ")


def test_list_is_newest_updated_first(store):
    first = store.create_conversation("first")
    second = store.create_conversation("second")
    third = store.create_conversation("third")
    assert [c.title for c in store.list_conversations()] == ["third", "second", "first"]
    store.add_message(first.id, "user", "back to the first chat")
    assert [c.id for c in store.list_conversations()] == [first.id, third.id, second.id]


def test_messages_follow_the_head(store):
    conversation = store.create_conversation()
    system = store.add_message(conversation.id, "system", "Be brief.")
    question = store.add_message(conversation.id, "user", "What is 2+2?")
    answer = store.add_message(conversation.id, "assistant", "4", stats={"tokens": 1, "tokens_per_s": 42.5})
    assert (system.parent_id, question.parent_id, answer.parent_id) == (None, system.id, question.id)
    assert store.get_conversation(conversation.id).head_message_id == answer.id
    assert store.path(conversation.id) == [system, question, answer]
    assert store.get_message(answer.id).stats == {"tokens": 1, "tokens_per_s": 42.5}
    assert store.get_conversation(conversation.id).updated_at >= conversation.updated_at


def test_update_message_while_streaming(store):
    conversation = store.create_conversation()
    store.add_message(conversation.id, "user", "Tell me a story")
    answer = store.add_message(conversation.id, "assistant", "", status="streaming")
    store.update_message(answer.id, content="Once")
    store.update_message(answer.id, content="Once upon a time")
    assert store.get_message(answer.id).status == "streaming"
    store.update_message(answer.id, status="complete", stats={"tokens": 4})
    final = store.get_message(answer.id)
    assert (final.content, final.status, final.stats) == ("Once upon a time", "complete", {"tokens": 4})
    assert final.updated_at >= answer.updated_at
    store.update_message(answer.id)  # nothing to change is fine
    with pytest.raises(NotFoundError):
        store.update_message(999_999, content="x")


def test_invalid_role_status_and_parent_are_refused(store):
    one = store.create_conversation()
    other = store.create_conversation()
    elsewhere = store.add_message(other.id, "user", "hi")
    with pytest.raises(ValueError, match="role"):
        store.add_message(one.id, "tool", "x")
    with pytest.raises(ValueError, match="status"):
        store.add_message(one.id, "user", "x", status="done")
    with pytest.raises(ValueError, match="not in conversation"):
        store.add_message(one.id, "user", "x", parent_id=elsewhere.id)
    message = store.add_message(one.id, "user", "x")
    with pytest.raises(ValueError, match="status"):
        store.update_message(message.id, status="bogus")
    assert store.path(one.id) == [message]  # failed calls left nothing behind


def test_regenerate_keeps_the_old_answer_reachable(store):
    conversation = store.create_conversation()
    question = store.add_message(conversation.id, "user", "Name a colour")
    first = store.add_message(conversation.id, "assistant", "Red")
    follow_up = store.add_message(conversation.id, "user", "Another?")
    after_red = store.add_message(conversation.id, "assistant", "Blue")

    # Regenerate the first answer: a sibling under the same question, and the head moves to it.
    second = store.add_message(conversation.id, "assistant", "Green", parent_id=question.id)
    assert _texts(store.path(conversation.id)) == ["Name a colour", "Green"]
    assert store.siblings(second.id) == store.siblings(first.id)
    assert [m.id for m in store.siblings(first.id)] == [first.id, second.id]

    # Flip back: the head becomes the newest leaf under the old answer, so its follow-up is back too.
    assert _texts(store.switch_to(first.id)) == ["Name a colour", "Red", "Another?", "Blue"]
    assert store.get_conversation(conversation.id).head_message_id == after_red.id
    assert _texts(store.switch_to(second.id)) == ["Name a colour", "Green"]
    assert store.siblings(follow_up.id) == [follow_up]


def test_edit_of_a_first_question_is_a_new_root_sibling(store):
    conversation = store.create_conversation()
    original = store.add_message(conversation.id, "user", "Helo")
    store.add_message(conversation.id, "assistant", "Hi?")
    edited = store.add_message(conversation.id, "user", "Hello", parent_id=None)
    store.add_message(conversation.id, "assistant", "Hello!")
    assert [m.id for m in store.siblings(original.id)] == [original.id, edited.id]
    assert _texts(store.path(conversation.id)) == ["Hello", "Hello!"]
    assert _texts(store.switch_to(original.id)) == ["Helo", "Hi?"]
    # Roots of another conversation are not siblings.
    other = store.create_conversation()
    store.add_message(other.id, "user", "elsewhere")
    assert len(store.siblings(original.id)) == 2


def test_switch_to_picks_the_newest_leaf_in_the_subtree(store):
    conversation = store.create_conversation()
    question = store.add_message(conversation.id, "user", "q")
    answer = store.add_message(conversation.id, "assistant", "a")
    store.add_message(conversation.id, "user", "q2 (old)")
    store.add_message(conversation.id, "user", "q2 (edited)", parent_id=answer.id)
    store.add_message(conversation.id, "assistant", "a2")
    store.add_message(conversation.id, "assistant", "other answer", parent_id=question.id)
    assert _texts(store.switch_to(answer.id)) == ["q", "a", "q2 (edited)", "a2"]
    assert _texts(store.switch_to(question.id)) == ["q", "other answer"]
    with pytest.raises(NotFoundError):
        store.switch_to(999_999)
    with pytest.raises(NotFoundError):
        store.siblings(999_999)


def test_delete_cascades_to_every_branch(store):
    doomed = store.create_conversation()
    kept = store.create_conversation()
    question = store.add_message(doomed.id, "user", "q")
    store.add_message(doomed.id, "assistant", "a1")
    store.add_message(doomed.id, "assistant", "a2", parent_id=question.id)
    survivor = store.add_message(kept.id, "user", "stays")
    store.delete_conversation(doomed.id)
    count = store._conn.execute("SELECT count(*) FROM messages").fetchone()[0]
    assert count == 1
    with pytest.raises(NotFoundError):
        store.get_message(question.id)
    assert store.path(kept.id) == [survivor]


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("  How do I  boil an egg?  \nThanks", "How do I boil an egg?"),
        ("\n\n  second line first\n", "second line first"),
        (
            "Please explain the difference between processes and threads in detail",
            "Please explain the difference between…",
        ),
        ("x" * 100, "x" * 39 + "…"),
        ("   \n ", ""),
    ],
)
def test_title_from_text(text, title):
    assert title_from_text(text) == title
    assert len(title) <= 40


def test_auto_title_only_replaces_the_default_title(store):
    untitled = store.create_conversation()
    assert store.auto_title(untitled.id, "Recipe for bread\nwith details").title == "Recipe for bread"
    assert store.auto_title(untitled.id, "Something else").title == "Recipe for bread"
    named = store.create_conversation("My title")
    assert store.auto_title(named.id, "Question").title == "My title"
    blank = store.create_conversation()
    assert store.auto_title(blank.id, "   ").title == DEFAULT_TITLE


def test_streaming_messages_become_interrupted_at_open(tmp_path):
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        conversation = store.create_conversation()
        store.add_message(conversation.id, "user", "q")
        answer = store.add_message(conversation.id, "assistant", "partial", status="streaming")
        done = store.add_message(conversation.id, "assistant", "ok", parent_id=answer.parent_id)
    with ChatStore(path) as store:
        assert store.get_message(answer.id).status == "interrupted"
        assert store.get_message(answer.id).content == "partial"
        assert store.get_message(done.id).status == "complete"


def test_two_threads_write_through_one_store(store):
    conversation = store.create_conversation()
    answer = store.add_message(conversation.id, "assistant", "", status="streaming")
    errors = []

    def stream():
        try:
            for i in range(60):
                store.update_message(answer.id, content=str(i))
        except Exception as exc:  # surfaced by the assert below
            errors.append(exc)

    worker = threading.Thread(target=stream)
    worker.start()
    others = [store.create_conversation(f"c{i}") for i in range(30)]
    worker.join()
    assert errors == []
    assert store.get_message(answer.id).content == "59"
    assert len(store.list_conversations()) == len(others) + 1


# Migrations


def _migration_future_add_column(conn):
    conn.execute("ALTER TABLE conversations ADD COLUMN from_the_future INTEGER NOT NULL DEFAULT 0")


def test_migration_from_version_1_keeps_the_data(tmp_path):
    path = tmp_path / "chats.sqlite3"
    ids = write_schema_1(
        path, {"kept": [("user", "q", None), ("assistant", "b", 0), ("assistant", "a", 0)], "empty": []}
    )
    with ChatStore(path) as new:
        assert new._conn.execute("PRAGMA user_version").fetchone() == (len(MIGRATIONS),)
        kept = new.get_conversation(ids["kept"])
        assert kept.title == "kept"
        assert kept.pinned is False
        assert len(kept.uid) == 32
        assert kept.uid != new.get_conversation(ids["empty"]).uid
        question, answer = new.path(kept.id)
        assert (question.content, answer.content, answer.stats) == ("q", "a", {"tokens": 1})
        assert [m.content for m in new.siblings(answer.id)] == ["b", "a"]
        assert new.get_conversation(ids["empty"]).head_message_id is None
        new.add_message(kept.id, "user", "after the upgrade")
        assert [c.title for c in new.list_conversations()] == ["kept", "empty"]


def test_schema_3_remembers_each_chats_preset_and_older_chats_have_none(tmp_path):
    path = tmp_path / "chats.sqlite3"
    ChatStore(path, migrations=MIGRATIONS[:2]).close()  # a database from before presets
    with ChatStore(path, migrations=MIGRATIONS[:2]) as old:
        old_id = old._conn.execute(
            "INSERT INTO conversations (title, created_at, updated_at, uid) VALUES ('old', 1, 1, 'u')"
        ).lastrowid
    with ChatStore(path) as store:
        assert store.get_conversation(old_id).preset is None
        new = store.create_conversation("new", system_prompt="Write code.", preset="coder")
        assert (new.preset, new.system_prompt) == ("coder", "Write code.")
        assert store.get_conversation(new.id) == new
        before = store.get_conversation(old_id)
        changed = store.set_preset(old_id, "concise", "Be brief.")
        assert (changed.preset, changed.system_prompt) == ("concise", "Be brief.")
        assert changed.updated_at == before.updated_at  # choosing a preset does not move the chat up
    with ChatStore(path) as again:
        assert again.get_conversation(old_id).preset == "concise"


def test_failed_migration_rolls_back_and_says_so(tmp_path):
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        conversation = store.create_conversation("kept")

    def broken(conn):
        conn.execute("ALTER TABLE conversations ADD COLUMN half_done INTEGER")
        conn.execute("SELECT no_such_column FROM conversations")

    with pytest.raises(StorageError, match=f"to schema {len(MIGRATIONS) + 1}") as caught:
        ChatStore(path, migrations=(*MIGRATIONS, broken))
    assert "\n" not in str(caught.value)
    with ChatStore(path) as store:
        assert store.list_conversations() == [conversation]
        columns = [row[1] for row in store._conn.execute("PRAGMA table_info(conversations)")]
        assert "half_done" not in columns


def test_database_from_a_newer_version_is_refused_not_replaced(tmp_path):
    path = tmp_path / "chats.sqlite3"
    ChatStore(path, migrations=(*MIGRATIONS, _migration_future_add_column)).close()
    with pytest.raises(StorageError, match="newer version") as caught:
        open_chat_store(path)
    assert not isinstance(caught.value, CorruptDatabaseError)
    assert [p.name for p in tmp_path.iterdir()] == ["chats.sqlite3"]


# Damaged files


def test_a_file_that_is_not_sqlite_raises_a_one_line_error(tmp_path):
    path = tmp_path / "chats.sqlite3"
    path.write_bytes(b"these are not the chats you are looking for\n" * 100)
    with pytest.raises(CorruptDatabaseError) as caught:
        ChatStore(path)
    assert "\n" not in str(caught.value)
    assert str(path) in str(caught.value)


def test_open_chat_store_moves_a_bad_file_aside_and_starts_fresh(tmp_path):
    path = tmp_path / "chats.sqlite3"
    junk = b"\x00garbage" * 1000
    path.write_bytes(junk)
    store, warning = open_chat_store(path)
    with store:
        assert store.list_conversations() == []
        store.create_conversation()
    assert warning is not None
    assert "\n" not in warning
    (aside,) = tmp_path.glob("chats.sqlite3.corrupt-*")
    assert aside.name in warning
    assert aside.read_bytes() == junk


def test_open_chat_store_on_a_good_database_gives_no_warning(qwen_home):
    store, warning = open_chat_store()
    with store:
        assert warning is None
        assert store.file == qwen_home / "chats.sqlite3"


def test_damaged_pages_are_caught_at_open(tmp_path):
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        conversation = store.create_conversation()
        for i in range(12):
            store.add_message(conversation.id, "user", f"message {i} " * 300)
    assert not (tmp_path / "chats.sqlite3-wal").exists()  # checkpointed into the main file at close
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    # Keep the header page, scribble over the b-tree pages behind it.
    for offset in range(page, len(data), 7):
        data[offset] = (offset * 31) & 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptDatabaseError) as caught:
        ChatStore(path)
    assert "\n" not in str(caught.value)
    store, warning = open_chat_store(path)
    store.close()
    assert warning is not None
    assert len(list(tmp_path.glob("chats.sqlite3.corrupt-*"))) == 1


def test_missing_folder_is_a_storage_error(tmp_path):
    with pytest.raises(StorageError, match="unable to open"):
        ChatStore(tmp_path / "no" / "such" / "chats.sqlite3")


def test_closed_store_raises_storage_error(tmp_path):
    store = ChatStore(tmp_path / "chats.sqlite3")
    store.close()
    store.close()
    with pytest.raises(StorageError):
        store.list_conversations()
