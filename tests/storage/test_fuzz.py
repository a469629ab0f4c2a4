"""Fuzzing the readers of files the app wrote but cannot trust: settings.json and the chat database.

Whatever the bytes, the settings load (with defaults where needed) and the chat database either opens and
reads or raises `StorageError` with one line; nothing else escapes and nothing runs forever. The budget is
small so CI stays quick; inputs that once broke something live in tests/corpus/storage/ and
tests/storage/test_hardening.py replays them every run.
"""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import tempfile
from dataclasses import asdict, fields
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from qwen_desktop.storage.chats import ChatStore, open_chat_store
from qwen_desktop.storage.errors import StorageError
from qwen_desktop.storage.export import chats_json
from qwen_desktop.storage.files import read_json
from qwen_desktop.storage.settings import CONTEXT_MAX, CONTEXT_MIN, Settings, load_settings

FUZZ = settings(
    max_examples=150,
    deadline=None,  # the machine is shared; a slow example is not a failure
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

GOOD_SETTINGS = json.dumps(asdict(Settings(threads=1, seed=3, model_path="/m"))).encode()

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
field_names = st.sampled_from([f.name for f in fields(Settings)])
settings_objects = st.dictionaries(field_names | st.text(max_size=8), json_values, max_size=8)


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """`original` with a few bytes changed, cut short, or with a run of bytes repeated."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["flip", "cut", "repeat"]))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[i] ^= draw(st.integers(1, 255))
        elif kind == "cut":
            del data[i:]
        else:
            data[i:i] = data[i : i + draw(st.integers(1, 8))] * draw(st.integers(1, 2000))
    return bytes(data)


def _check_settings_bytes(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "settings.json"
        path.write_bytes(content)
        loaded, warning = load_settings(path)
        assert isinstance(loaded, Settings)
        assert warning is None or (isinstance(warning, str) and "\n" not in warning)
        assert loaded == loaded.clamped(), "every value is in range"
        assert CONTEXT_MIN <= loaded.context_limit <= CONTEXT_MAX
        assert math.isfinite(loaded.temperature) and math.isfinite(loaded.top_p)
        again, second_warning = load_settings(path)
        assert second_warning is None and again == loaded, "a repaired file loads cleanly the next time"


@FUZZ
@given(st.binary(max_size=3000))
def test_settings_from_arbitrary_bytes_load(content):
    _check_settings_bytes(content)


@FUZZ
@given(mutated(GOOD_SETTINGS))
def test_settings_from_mutated_json_load(content):
    _check_settings_bytes(content)


@FUZZ
@given(settings_objects)
def test_settings_with_any_json_values_load(doc):
    _check_settings_bytes(json.dumps(doc).encode())


@FUZZ
@given(st.binary(max_size=2000) | mutated(GOOD_SETTINGS) | st.just(b"[" * 50_000))
def test_read_json_returns_a_value_or_none(content):
    read_json(content)  # never raises


def _small_database(folder: Path) -> bytes:
    path = folder / "chats.sqlite3"
    with ChatStore(path) as store:
        for n in range(3):
            conv = store.create_conversation(f"chat {n}", system_prompt="be brief" if n else None)
            question = store.add_message(conv.id, "user", f"question {n} " * 20)
            store.add_message(conv.id, "assistant", "answer " * 50, stats={"tokens": n})
            store.add_message(conv.id, "assistant", "another", parent_id=question.id, status="failed")
    return path.read_bytes()


@pytest.fixture(scope="module")
def database_bytes(tmp_path_factory):
    return _small_database(tmp_path_factory.mktemp("db"))


def _read_everything(path: Path) -> None:
    try:
        store, warning = open_chat_store(path)
    except StorageError as exc:
        assert "\n" not in str(exc)
        return
    assert warning is None or "\n" not in warning
    with store:
        try:
            for conv in store.list_conversations():
                for message in store.path(conv.id):
                    store.siblings(message.id)
                    store.get_message(message.id)
            for query in ("answer", "qu", "question 1"):
                store.search(query)
            chats_json(store)  # an export of all chats leaves damaged ones out
            store.create_conversation("after the damage")
        except StorageError as exc:
            assert "\n" not in str(exc)


PAGE = 4096
# The damage is drawn as plain numbers that do not depend on the file (positions are fractions of its
# length), so hypothesis draws the same way every time it replays an example.
damages = st.one_of(
    st.tuples(
        st.just("flip"), st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), min_size=1, max_size=16)
    ),
    st.tuples(
        st.just("page"), st.tuples(st.floats(0, 1), st.floats(0, 0.5), st.sampled_from([0x00, 0xFF, 0x0D]))
    ),
    st.tuples(st.just("cut"), st.tuples(st.floats(0, 1), st.sampled_from([0, 1, 100]))),
)


def damaged_pages(original: bytes, damage: tuple) -> bytes:
    """`original` with bytes flipped, a page overwritten from some offset on, or cut near a page boundary."""
    data = bytearray(original)
    pages = max(1, len(data) // PAGE)
    kind, how = damage
    if kind == "flip":
        for where, mask in how:
            data[min(len(data) - 1, int(where * len(data)))] ^= mask
    elif kind == "page":
        where, offset, filler = how
        n = min(pages - 1, int(where * pages))
        start = n * PAGE + int(offset * PAGE)
        data[start : (n + 1) * PAGE] = bytes([filler]) * ((n + 1) * PAGE - start)
    else:
        where, back = how
        del data[(1 + min(pages - 1, int(where * pages))) * PAGE - back :]
    return bytes(data)


@pytest.mark.timeout(600)
@settings(FUZZ, max_examples=80)
@given(damage=damages)
# one flipped byte in the header made SQLite report an error whose text was not UTF-8: UnicodeDecodeError
@example(damage=("flip", [(0.10000027109612719, 162)]))
def test_damaged_database_opens_or_raises_storage_error(database_bytes, damage):
    content = damaged_pages(database_bytes, damage)
    folder = Path(tempfile.mkdtemp())
    try:
        path = folder / "chats.sqlite3"
        path.write_bytes(content)
        _read_everything(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.timeout(600)
@settings(FUZZ, max_examples=40)
@given(
    parents=st.lists(st.integers(-1, 12) | st.none(), min_size=1, max_size=12),
    heads=st.lists(st.integers(-1, 12) | st.none(), max_size=3),
)
def test_any_parent_links_read_or_raise_storage_error(database_bytes, parents, heads):
    """Rows that quick_check accepts but the app never writes: parents and heads pointing anywhere,
    loops included."""
    folder = Path(tempfile.mkdtemp())
    try:
        path = folder / "chats.sqlite3"
        path.write_bytes(database_bytes)
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA foreign_keys = OFF")
        for message_id, parent in enumerate(parents, start=1):
            conn.execute("UPDATE messages SET parent_id = ? WHERE id = ?", (parent, message_id))
        for conversation_id, head in enumerate(heads, start=1):
            conn.execute("UPDATE conversations SET head_message_id = ? WHERE id = ?", (head, conversation_id))
        conn.commit()
        conn.close()
        _read_everything(path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
