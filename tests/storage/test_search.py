"""Searching every message: English and Chinese, literal queries, the index following edits, pins."""

from __future__ import annotations

import re
import sqlite3

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qwen_desktop.storage.chats import HIT_END, HIT_START, SNIPPET_LENGTH, ChatStore
from qwen_desktop.storage.errors import NotFoundError
from tests.storage.old_schema import write_schema_1

FUZZ = settings(
    max_examples=200,
    deadline=None,  # the machine is shared; a slow example is not a failure
    database=None,
    # any_store is one store for all examples: each example removes what it added
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(params=["fts5", "like"])
def any_store(request, tmp_path):
    """A store that searches with the trigram index, and one that scans with LIKE (as without FTS5)."""
    with ChatStore(tmp_path / "chats.sqlite3", full_text=request.param == "fts5") as chat_store:
        yield chat_store


def chat(store, title, *texts):
    conversation = store.create_conversation(title)
    messages = [
        store.add_message(conversation.id, "user" if i % 2 == 0 else "assistant", text)
        for i, text in enumerate(texts)
    ]
    return conversation, messages


def found(store, query, **kwargs):
    return [hit.message_id for hit in store.search(query, **kwargs)]


def marked(hit):
    """The text between the markers of a hit's snippet."""
    return hit.snippet.split(HIT_START, 1)[1].split(HIT_END, 1)[0]


def test_english_is_found_case_insensitively_with_the_match_marked(any_store):
    trip, (question, answer) = chat(
        any_store, "Trip", "Where should I go in Portugal?", "Lisbon in spring, then the Algarve."
    )
    chat(any_store, "Other", "Something else entirely")
    (hit,) = any_store.search("lisbon")
    assert (hit.conversation_id, hit.title, hit.message_id, hit.role) == (
        trip.id,
        "Trip",
        answer.id,
        "assistant",
    )
    assert hit.updated_at == any_store.get_conversation(trip.id).updated_at
    assert hit.snippet == f"{HIT_START}Lisbon{HIT_END} in spring, then the Algarve."
    assert found(any_store, "PORTUGAL") == [question.id]
    assert found(any_store, "in spring, THEN") == [answer.id]
    assert found(any_store, "Madrid") == []


def test_chinese_is_found_with_three_or_more_characters_and_with_one_or_two(any_store):
    _, (question, answer) = chat(
        any_store, "学习", "请解释一下机器学习是什么", "机器学习是人工智能的一个分支。"
    )
    _, (other,) = chat(any_store, "天气", "今天天气很好")
    assert set(found(any_store, "机器学习")) == {question.id, answer.id}
    assert found(any_store, "人工智能的") == [answer.id]
    assert found(any_store, "天气") == [other.id]
    assert found(any_store, "好") == [other.id]
    (hit,) = any_store.search("智能")
    assert marked(hit) == "智能"
    assert hit.snippet == f"机器学习是人工{HIT_START}智能{HIT_END}的一个分支。"


def test_query_syntax_is_literal_text(any_store):
    _, (tricky,) = chat(any_store, "t", 'say "hi" AND (x*y) OR NEAR(a b) -z col:1 ^top 100% a_b \\n')
    _, (plain,) = chat(any_store, "p", "say hi and x y or near a b z col 1 top 1000 axb")
    for query in [
        '"hi"',
        "AND (x*y)",
        "NEAR(a b)",
        "-z",
        "col:1",
        "^top",
        "100%",
        "a_b",
        "\\n",
        '"',
        "%",
        "_",
    ]:
        assert found(any_store, query) == [tricky.id], query
    assert set(found(any_store, "say")) == {tricky.id, plain.id}
    for query in [
        "*",
        "AND",
        "OR",
        "NOT",
        "NEAR(",
        "(",
        ")",
        '""',
        "'",
        "\x00",
        "a\x00b",
        "\ud800",
        "x\udfffy",
    ]:
        for hit in any_store.search(query):  # never raises; every hit really contains the query
            assert query.casefold() in any_store.get_message(hit.message_id).content.casefold()


def test_blank_queries_and_a_zero_limit_find_nothing(any_store):
    chat(any_store, "t", "   spaced   out   ")
    assert any_store.search("") == []
    assert any_store.search("   \n\t") == []
    assert any_store.search("spaced", limit=0) == []
    assert len(any_store.search("  spaced  ")) == 1, "blanks around the query are ignored"


def test_a_huge_query_finds_nothing_and_a_long_one_finds_its_message(any_store):
    text = " ".join(f"word{i}" for i in range(400))
    _, (message,) = chat(any_store, "long", text)
    assert any_store.search("x" * 1_000_000) == []
    long_query = text[100:1500]  # longer than the part handed to SQLite: the whole query is checked
    assert found(any_store, long_query) == [message.id]
    assert found(any_store, long_query + " not there") == []


def test_one_hit_per_message_and_the_limit(any_store):
    _, messages = chat(any_store, "echo", *[f"echo {i} echo echo" for i in range(30)])
    assert len(found(any_store, "echo")) == 30
    assert len(set(found(any_store, "echo"))) == 30
    assert len(found(any_store, "echo", limit=7)) == 7
    assert {m.id for m in messages} == set(found(any_store, "echo", limit=100))


def test_best_hits_first_then_newest_chat(store):
    _, (weak,) = chat(
        store, "weak", "a long message about many things, among which a single mention of kiwi " * 3
    )
    _, (strong,) = chat(store, "strong", "kiwi kiwi kiwi")
    assert found(store, "kiwi") == [strong.id, weak.id]
    older, (older_message,) = chat(store, "older", "same words")
    _, (newer_message,) = chat(store, "newer", "same words")
    assert found(store, "same words") == [newer_message.id, older_message.id]
    store.add_message(older.id, "assistant", "something unrelated")  # now the most recently updated chat
    assert found(store, "same words") == [older_message.id, newer_message.id]


def test_edits_streaming_and_deletes_keep_the_index_current(any_store):
    conversation, (question,) = chat(any_store, "t", "original wording")
    answer = any_store.add_message(conversation.id, "assistant", "", status="streaming")
    for part in ["Straw", "Strawberries ", "Strawberries are red"]:
        any_store.update_message(answer.id, content=part)
    any_store.update_message(answer.id, status="complete")
    assert found(any_store, "berries are") == [answer.id]
    assert found(any_store, "Straw") == [answer.id]

    any_store.update_message(question.id, content="edited wording")
    assert found(any_store, "original") == []
    assert found(any_store, "edited") == [question.id]

    edit = any_store.add_message(conversation.id, "user", "a new version", parent_id=None)
    assert found(any_store, "new version") == [edit.id], "old branches and new ones are both searched"
    assert found(any_store, "edited") == [question.id]

    assert any_store.delete_conversation(conversation.id)
    assert any_store.search("wording") == []
    assert any_store.search("Straw") == []
    assert any_store.search("new version") == []


def test_deleted_chat_leaves_the_index_but_others_stay(store):
    gone, _ = chat(store, "gone", "shared phrase one")
    kept, (kept_message,) = chat(store, "kept", "shared phrase two")
    store.delete_conversation(gone.id)
    assert found(store, "shared phrase") == [kept_message.id]
    # The index holds exactly the messages that exist (FTS5's own consistency check).
    store._conn.execute("INSERT INTO message_search(message_search, rank) VALUES ('integrity-check', 1)")
    assert {h.conversation_id for h in store.search("phrase")} == {kept.id}


def test_snippet_is_one_bounded_line_around_the_first_match(store):
    before = "lorem ipsum dolor\n\n sit amet " * 200
    text = before + "the NEEDLE here" + "\n consectetur adipiscing " * 200 + "needle again"
    _, (message,) = chat(store, "big", text)
    (hit,) = store.search("needle")
    assert hit.message_id == message.id
    assert "\n" not in hit.snippet
    assert hit.snippet.count(HIT_START) == hit.snippet.count(HIT_END) == 1
    assert marked(hit) == "NEEDLE"
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")
    text_only = hit.snippet.replace(HIT_START, "").replace(HIT_END, "").strip("…")
    assert len(text_only) <= SNIPPET_LENGTH
    assert "the NEEDLE here" in text_only
    assert "  " not in text_only


def test_marker_characters_in_a_message_do_not_confuse_the_snippet(store):
    chat(store, "m", f"fake {HIT_START}marker{HIT_END} and the target word")
    (hit,) = store.search("target")
    assert hit.snippet.count(HIT_START) == hit.snippet.count(HIT_END) == 1
    assert marked(hit) == "target"


def test_case_folding_that_changes_length_marks_the_right_text(any_store):
    chat(any_store, "de", "Die Straße ist lang")
    (hit,) = any_store.search("straße")
    assert marked(hit) == "Straße"
    (hit,) = any_store.search("STRAßE ist")
    assert marked(hit) == "Straße ist"


def test_upgrade_from_schema_1_indexes_the_old_messages(tmp_path):
    path = tmp_path / "chats.sqlite3"
    ids = write_schema_1(
        path,
        {
            "old english": [
                ("user", "How do I bake sourdough bread?", None),
                ("assistant", "Feed the starter.", 0),
            ],
            "old chinese": [("user", "怎么做红烧肉", None), ("assistant", "先把五花肉切块。", 0)],
        },
    )
    with ChatStore(path) as store:
        assert {h.conversation_id for h in store.search("sourdough")} == {ids["old english"]}
        assert {h.conversation_id for h in store.search("五花肉")} == {ids["old chinese"]}
        assert {h.conversation_id for h in store.search("肉")} == {ids["old chinese"]}
        assert [h.role for h in store.search("the starter")] == ["assistant"]


def test_without_the_index_writes_work_and_it_is_rebuilt_when_back(tmp_path):
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        _, (before,) = chat(store, "a", "indexed before")
    with ChatStore(path, full_text=False) as store:
        triggers = store._conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
        assert triggers == [], "a SQLite without FTS5 could not write through the triggers"
        conversation, (during,) = chat(store, "b", "written while the index was off")
        store.update_message(before.id, content="indexed before, edited")
        assert found(store, "while the index") == [during.id]
        assert found(store, "edited") == [before.id]
    with ChatStore(path) as store:
        assert found(store, "while the index") == [during.id]
        assert found(store, "edited") == [before.id]
        store._conn.execute("INSERT INTO message_search(message_search, rank) VALUES ('integrity-check', 1)")
        store.delete_conversation(conversation.id)
        assert found(store, "while the index") == []


def test_a_damaged_index_falls_back_to_scanning(store):
    _, (message,) = chat(store, "t", "still findable")
    store._conn.execute("DELETE FROM message_search_data WHERE id > 10")  # the index's own pages
    assert found(store, "findable") == [message.id]


# Pins


def test_pinned_chats_come_first_then_the_most_recently_updated(store):
    first, _ = chat(store, "first", "1")
    second, _ = chat(store, "second", "2")
    chat(store, "third", "3")
    assert [c.title for c in store.list_conversations()] == ["third", "second", "first"]
    before = store.get_conversation(first.id)
    pinned = store.set_pinned(first.id, True)
    assert pinned.pinned is True
    assert pinned.updated_at == before.updated_at, "pinning does not count as an update"
    store.set_pinned(second.id, True)
    assert [c.title for c in store.list_conversations()] == ["second", "first", "third"]
    store.add_message(first.id, "user", "more")
    assert [c.title for c in store.list_conversations()] == ["first", "second", "third"]
    store.set_pinned(first.id, False)
    assert [(c.title, c.pinned) for c in store.list_conversations()] == [
        ("second", True),
        ("first", False),
        ("third", False),
    ]
    with pytest.raises(NotFoundError):
        store.set_pinned(12345, True)


def test_new_chats_get_distinct_stable_uids(store):
    a = store.create_conversation()
    b = store.create_conversation()
    assert len(a.uid) == 32 and a.uid != b.uid
    assert store.get_conversation(a.id).uid == a.uid


# Fuzz

CORPUS_TEXTS = [
    "Hello world, the quick brown fox jumps over the lazy dog.",
    "HELLO WORLD again, with Straße, ǅungla and İstanbul",
    "机器学习是人工智能的一个分支。今天天气很好。",
    'SQL "quotes" AND (parentheses) OR NEAR(x y) * ^ - : %_ \\',
    "nul\x00inside the text",
    "emoji 😀🎉 and combining e\u0301 accents",
    "   ",
    f"markers {HIT_START} {HIT_END}",
]

syntax = st.sampled_from(
    [
        '"',
        "'",
        "*",
        "(",
        ")",
        ":",
        "^",
        "-",
        "+",
        "%",
        "_",
        "\\",
        "\x00",
        " AND ",
        " OR ",
        " NOT ",
        "NEAR(",
        "\ud800",
        "\udfff",
        "world",
        "机器",
        "ß",
        "İ",
        " ",
    ]
)
any_text = st.text(st.characters(codec=None, categories=None), max_size=40)
queries = (
    any_text
    | st.lists(syntax | any_text, max_size=6).map("".join)
    | st.sampled_from(CORPUS_TEXTS).flatmap(
        lambda text: st.integers(0, len(text)).flatmap(
            lambda i: st.integers(i, len(text)).map(lambda j: text[i:j])
        )
    )
)


@pytest.fixture(scope="module", params=["fts5", "like"])
def corpus_store(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp("search-fuzz")
    with ChatStore(folder / "chats.sqlite3", full_text=request.param == "fts5") as chat_store:
        for n, text in enumerate(CORPUS_TEXTS):
            conversation = chat_store.create_conversation(f"chat {n}")
            chat_store.add_message(conversation.id, "user", text)
            chat_store.add_message(conversation.id, "assistant", text.upper() + " " + text[::-1])
        yield chat_store


@FUZZ
@given(query=queries, limit=st.integers(-1, 60))
@example(query="a\x00b", limit=50)
@example(query='"', limit=50)
@example(query="\ud800abc", limit=50)
def test_any_query_never_raises_and_every_hit_contains_it(corpus_store, query, limit):
    hits = corpus_store.search(query, limit=limit)
    assert len(hits) <= max(limit, 0)
    assert len({h.message_id for h in hits}) == len(hits)
    needle = query.strip().casefold()
    for hit in hits:
        assert needle in corpus_store.get_message(hit.message_id).content.casefold()
        assert hit.snippet.count(HIT_START) == hit.snippet.count(HIT_END) == 1
        assert hit.snippet.index(HIT_START) < hit.snippet.index(HIT_END)
        shown = re.sub(r"\s+", " ", needle).replace(HIT_START, "").replace(HIT_END, "")
        assert shown in marked(hit).casefold() or marked(hit).endswith("…")


stored_text = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=60)


@settings(FUZZ, max_examples=120)
@given(text=stored_text, data=st.data())
def test_any_piece_of_a_message_finds_it(any_store, text, data):
    """The other direction: search misses nothing (text after a NUL is not indexed, so none here)."""
    start = data.draw(st.integers(0, len(text) - 1))
    piece = text[start : data.draw(st.integers(start + 1, len(text)))]
    conversation, (message,) = chat(any_store, "t", text)
    try:
        if piece.strip():
            assert message.id in found(any_store, piece)
    finally:
        any_store.delete_conversation(conversation.id)


def test_fts5_with_trigram_is_there():
    """The figures in docs/app.md assume it; without it search still works, by LIKE scans."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='trigram')")
    conn.close()


def test_among_many_equal_hits_the_newest_chats_come_first(any_store):
    ids = [chat(any_store, f"c{i}", "Translate to English: 你好")[0].id for i in range(120)]
    assert [h.conversation_id for h in any_store.search("translate to", limit=50)] == ids[::-1][:50]
    assert [h.conversation_id for h in any_store.search("你好", limit=50)] == ids[::-1][:50]
