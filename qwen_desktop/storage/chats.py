"""The chat history: conversations stored as trees of messages in one SQLite file.

A conversation is a tree so that nothing is silently lost: regenerating an answer or editing a question adds
a sibling of the old message (same parent) and moves the conversation's head to it; the old branch stays
reachable through `ChatStore.siblings` and `ChatStore.switch_to`. The conversation shown is the path from
the root to the head.

The schema is versioned with `PRAGMA user_version` and upgraded at open by `MIGRATIONS`, applied in order,
each in its own transaction. To change the schema, append one function to `MIGRATIONS`; never edit one that
has shipped.

Every message is also in a full-text index (`ChatStore.search`): an SQLite FTS5 table with the trigram
tokenizer over `messages.content`, kept current by triggers, so any text of three or more characters is
found, Chinese included. Shorter queries, and SQLite builds without FTS5, scan the messages with LIKE.
"""

from __future__ import annotations

import contextlib
import enum
import json
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, cast

from qwen_desktop.storage.errors import (
    CorruptDatabaseError,
    DamagedChatError,
    NotFoundError,
    StorageError,
    os_storage_error,
    sqlite_storage_error,
)
from qwen_desktop.storage.files import move_aside, read_json
from qwen_desktop.storage.paths import database_path

Role = Literal["system", "user", "assistant"]
Status = Literal["complete", "streaming", "failed", "cancelled", "interrupted"]
ROLES: Final[tuple[Role, ...]] = ("system", "user", "assistant")
# "interrupted": the process died while the answer was streaming (set at the next open), as opposed to
# "cancelled", which the user asked for.
STATUSES: Final[tuple[Status, ...]] = ("complete", "streaming", "failed", "cancelled", "interrupted")
DEFAULT_TITLE: Final = "New chat"
TITLE_LENGTH: Final = 40

HIT_START: Final = "\ue000"
"""Put before the matched text in `SearchHit.snippet` (a private-use character: replace it with markup)."""
HIT_END: Final = "\ue001"
"""Put after the matched text in `SearchHit.snippet`."""
SNIPPET_LENGTH: Final = 120
"""The most characters of message text a snippet shows, markers and "…" not counted."""

Migration = Callable[[sqlite3.Connection], None]


class _Head(enum.Enum):
    HEAD = "head"


HEAD: Final = _Head.HEAD
"""Default `parent_id` of `ChatStore.add_message`: the conversation's current head."""


@dataclass(frozen=True)
class Conversation:
    """One conversation. Times are Unix seconds.

    Attributes:
        id: Database id.
        title: Shown in the sidebar.
        created_at: When it was created.
        updated_at: When a message was last added (renaming does not count).
        head_message_id: Last message of the branch on show, or None while it is empty.
        system_prompt: This conversation's system prompt, or None to use the one from the settings.
        pinned: Shown above the others in `ChatStore.list_conversations`.
        uid: A random id that stays the same when the chat is exported and imported elsewhere.
        preset: The system-prompt preset chosen for it (the app's id of a built-in or the user's own
            preset), or None for a chat from before presets. ``system_prompt`` then holds the preset's text
            as last used, for a preset that is gone and for exports.
    """

    id: int
    title: str
    created_at: float
    updated_at: float
    head_message_id: int | None
    system_prompt: str | None
    pinned: bool = False
    uid: str = ""
    preset: str | None = None


@dataclass(frozen=True)
class Message:
    """One message of a conversation tree. Times are Unix seconds.

    Attributes:
        id: Database id; ids grow with creation order.
        conversation_id: The conversation it belongs to.
        parent_id: The message it answers or follows, or None for a first message.
        role: "system", "user" or "assistant".
        content: The text (partial while `status` is "streaming").
        status: "complete", "streaming", "failed", "cancelled" or "interrupted".
        stats: Generation figures (tokens, tokens/s, ...) as saved by the app, or None.
        created_at: When it was added.
        updated_at: When its content, status or stats last changed.
    """

    id: int
    conversation_id: int
    parent_id: int | None
    role: Role
    content: str
    status: Status
    stats: dict[str, Any] | None
    created_at: float
    updated_at: float


@dataclass(frozen=True)
class SearchHit:
    """One message that contains the searched text.

    Attributes:
        conversation_id: The conversation it is in.
        title: That conversation's title.
        message_id: The message; it may be on a branch that is not on show (`ChatStore.switch_to` shows it).
        role: "system", "user" or "assistant".
        snippet: One line of the message around the first match, the match between `HIT_START` and
            `HIT_END`, "…" where it was cut; at most `SNIPPET_LENGTH` characters of text. Raw message text:
            escape it before showing it as HTML.
        updated_at: The conversation's `updated_at`.
    """

    conversation_id: int
    title: str
    message_id: int
    role: Role
    snippet: str
    updated_at: float


@dataclass(frozen=True)
class ChatDump:
    """A conversation with every message of its tree, as `ChatStore.dump` reads it and
    `ChatStore.import_chats` writes it.

    Attributes:
        conversation: The conversation.
        messages: All its messages, every version, each parent before its children (oldest first).
    """

    conversation: Conversation
    messages: tuple[Message, ...]


@dataclass(frozen=True)
class ImportResult:
    """What `ChatStore.import_chats` did.

    Attributes:
        imported: The new conversations' ids, in the order given.
        skipped: The ids of the conversations already in the database with the same `uid`, left as they are.
    """

    imported: tuple[int, ...]
    skipped: tuple[int, ...]


def _migration_1_initial_schema(conn: sqlite3.Connection) -> None:
    statements = [
        """CREATE TABLE conversations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            title TEXT NOT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            head_message_id INTEGER NULL REFERENCES messages(id) ON DELETE SET NULL,
            system_prompt TEXT NULL
        )""",
        # AUTOINCREMENT: ids never come back after a delete, so a stale id held by the UI cannot silently
        # point at a newer row, and message ids keep creation order.
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            parent_id INTEGER NULL REFERENCES messages(id) ON DELETE CASCADE,
            role TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
            content TEXT NOT NULL,
            status TEXT NOT NULL
                CHECK (status IN ('complete', 'streaming', 'failed', 'cancelled', 'interrupted')),
            stats_json TEXT NULL,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        )""",
        "CREATE INDEX messages_by_conversation ON messages(conversation_id, id)",
        "CREATE INDEX messages_by_parent ON messages(parent_id)",
        "CREATE INDEX messages_by_status ON messages(status)",
        "CREATE INDEX conversations_by_update ON conversations(updated_at DESC, id DESC)",
    ]
    for sql in statements:
        conn.execute(sql)


# The full-text index of schema 2. An external-content FTS5 table: it keeps only the trigram index, the
# text stays in `messages` (snippets and the final check read it from there). The delete and update
# triggers hand FTS5 the old text, which must be exactly what was indexed; the triggers are the only
# writers, so it is. Foreign-key cascades (deleting a conversation) fire the delete trigger too.
_SEARCH_TABLE_SQL = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS message_search"
    " USING fts5(content, content='messages', content_rowid='id', tokenize='trigram')"
)
_SEARCH_TRIGGERS: Final[dict[str, str]] = {
    "message_search_insert": """CREATE TRIGGER message_search_insert AFTER INSERT ON messages BEGIN
            INSERT INTO message_search(rowid, content) VALUES (new.id, new.content);
        END""",
    "message_search_delete": """CREATE TRIGGER message_search_delete AFTER DELETE ON messages BEGIN
            INSERT INTO message_search(message_search, rowid, content) VALUES ('delete', old.id, old.content);
        END""",
    "message_search_update": """CREATE TRIGGER message_search_update AFTER UPDATE OF content ON messages
        WHEN new.content IS NOT old.content BEGIN
            INSERT INTO message_search(message_search, rowid, content) VALUES ('delete', old.id, old.content);
            INSERT INTO message_search(rowid, content) VALUES (new.id, new.content);
        END""",
}
_SEARCH_SCHEMA = 2  # the first schema with the index (an older one is only opened by upgrade tests)


def _has_fts5_trigram(conn: sqlite3.Connection) -> bool:
    """Whether this SQLite has FTS5 with the trigram tokenizer (3.34+); a build without it gets LIKE scans."""
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.fts5_probe USING fts5(x, tokenize='trigram')")
    except sqlite3.OperationalError:  # "no such module: fts5", "no such tokenizer: trigram"
        return False
    conn.execute("DROP TABLE temp.fts5_probe")
    return True


def _create_search_index(conn: sqlite3.Connection) -> None:
    """(Re)create the schema-2 search index and its triggers and fill it from every message."""
    conn.execute(_SEARCH_TABLE_SQL)
    for name, sql in _SEARCH_TRIGGERS.items():
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        conn.execute(sql)
    conn.execute("INSERT INTO message_search(message_search) VALUES ('rebuild')")


def _migration_2_search_pins_and_uids(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")
    # A stable id for export and import (a chat imported twice is recognised); new rows get a uuid4.
    conn.execute("ALTER TABLE conversations ADD COLUMN uid TEXT NULL")
    conn.execute("UPDATE conversations SET uid = lower(hex(randomblob(16)))")
    conn.execute("CREATE UNIQUE INDEX conversations_by_uid ON conversations(uid)")
    if _has_fts5_trigram(conn):
        _create_search_index(conn)  # backfills every message already stored


# Each function gets the connection inside an open transaction and must not commit. user_version is set
# to the function's 1-based position in the same transaction. PRAGMA foreign_keys cannot change inside a
# transaction: a migration that rebuilds a table should use `PRAGMA defer_foreign_keys = ON`; the
# foreign keys are checked before the commit.
def _migration_3_presets(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE conversations ADD COLUMN preset TEXT NULL")


MIGRATIONS: Final[tuple[Migration, ...]] = (
    _migration_1_initial_schema,
    _migration_2_search_pins_and_uids,
    _migration_3_presets,
)

_CONVERSATION_COLUMNS = (
    "id, title, created_at, updated_at, head_message_id, system_prompt, pinned, uid, preset"
)
_MESSAGE_FIELDS = (
    "id",
    "conversation_id",
    "parent_id",
    "role",
    "content",
    "status",
    "stats_json",
    "created_at",
    "updated_at",
)
_MESSAGE_COLUMNS = ", ".join(_MESSAGE_FIELDS)
_M_MESSAGE_COLUMNS = ", ".join(
    f"m.{name}" for name in _MESSAGE_FIELDS
)  # for queries that alias messages AS m


def _conversation(row: Sequence[Any]) -> Conversation:
    return Conversation(
        id=row[0],
        title=row[1],
        created_at=row[2],
        updated_at=row[3],
        head_message_id=row[4],
        system_prompt=row[5],
        pinned=bool(row[6]),
        uid=row[7] or "",
        preset=row[8],
    )


def _message(row: Sequence[Any]) -> Message:
    loaded = read_json(row[6]) if isinstance(row[6], (str, bytes)) else None
    stats: dict[str, Any] | None = loaded if isinstance(loaded, dict) else None
    return Message(
        id=row[0],
        conversation_id=row[1],
        parent_id=row[2],
        role=cast(Role, row[3]),
        content=row[4],
        status=cast(Status, row[5]),
        stats=stats,
        created_at=row[7],
        updated_at=row[8],
    )


def _stats_json(stats: Mapping[str, Any] | None) -> str | None:
    return None if stats is None else storable(json.dumps(dict(stats), ensure_ascii=False))


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """``text`` as SQLite can keep it: each lone surrogate (which no UTF-8 can hold) becomes U+FFFD.

    A surrogate half reaches us from a paste into a Qt text box or a damaged file; it would make the
    write fail with `UnicodeEncodeError`, and with it the whole message. Every other character is kept.
    """
    return _LONE_SURROGATE.sub("\ufffd", text)


def _storable_or_none(text: str | None) -> str | None:
    return None if text is None else storable(text)


def title_from_text(text: str, length: int = TITLE_LENGTH) -> str:
    """A conversation title from a user's first message: its first non-blank line, at most `length` chars.

    Long lines are cut at a word boundary when there is one in the second half, and end with "…".
    Returns "" for blank text.
    """
    line = next((" ".join(ln.split()) for ln in text.splitlines() if ln.strip()), "")
    if len(line) <= length:
        return line
    cut = line[: length - 1]
    space = cut.rfind(" ")
    if space >= length // 2:
        cut = cut[:space]
    return cut.rstrip(" ,.;:-") + "…"


_PREFILTER_CHARS = 256  # the most query characters handed to SQLite; the final check uses the whole query
_MATCH_SHOWN = 80  # the most characters of the match itself a snippet shows
_LIKE_ESCAPE = str.maketrans({"\\": "\\\\", "%": "\\%", "_": "\\_"})
_BLANKS = re.compile(r"\s+")
_HIT_COLUMNS = "m.id, m.conversation_id, m.role, m.content, c.title, c.updated_at"
# Best hits first (bm25 over the trigram index: more occurrences in a shorter message rank higher), then
# the most recently updated chat, then the newest message. FTS5 ranks every match, but only the best
# `LIMIT` candidates (newest message first among equal ranks) are joined and sorted again: joining every
# match made a common word several times slower.
_FTS_SEARCH = f"""SELECT {_HIT_COLUMNS}
    FROM (SELECT rowid, rank FROM message_search WHERE message_search MATCH ?
          ORDER BY rank, rowid DESC LIMIT ?) AS s
    JOIN messages AS m ON m.id = s.rowid
    JOIN conversations AS c ON c.id = m.conversation_id
    ORDER BY s.rank, c.updated_at DESC, c.id DESC, m.id DESC"""
# This order is that of the conversations_by_update and messages_by_conversation indexes, so SQLite walks
# the chats newest first and stops at the limit instead of sorting every match.
_LIKE_SEARCH = f"""SELECT {_HIT_COLUMNS}
    FROM conversations AS c JOIN messages AS m ON m.conversation_id = c.id
    WHERE m.content LIKE ? ESCAPE '\\'
    ORDER BY c.updated_at DESC, c.id DESC, m.id DESC"""


def _locate(content: str, folded_query: str) -> tuple[int, int] | None:
    """Where the case-folded query first occurs in `content`, as (start, end) offsets into `content`."""
    folded = content.casefold()
    start = folded.find(folded_query)
    if start < 0:
        return None
    if len(folded) == len(content):  # every character folded to one character: offsets agree
        return start, start + len(folded_query)
    # Some characters fold to several ("ß" -> "ss"): map offsets in the folded text back to characters.
    owners: list[int] = []
    for index, char in enumerate(content):
        owners.extend([index] * len(char.casefold()))
    return owners[start], owners[start + len(folded_query) - 1] + 1


def _one_line(text: str) -> str:
    return _BLANKS.sub(" ", text).replace(HIT_START, "").replace(HIT_END, "")


def _snippet(content: str, start: int, end: int) -> str:
    """One line around content[start:end], the match marked, at most `SNIPPET_LENGTH` characters of text."""
    match = _one_line(content[start:end])
    if len(match) > _MATCH_SHOWN:
        match = match[: _MATCH_SHOWN - 1] + "…"
    room = max(0, SNIPPET_LENGTH - len(match))
    # Windows of raw text wide enough for `room` characters once runs of blanks are one space.
    window_start = max(0, start - 4 * room)
    before = _one_line(content[window_start:start])
    window_end = min(len(content), end + 4 * room)
    after = _one_line(content[end:window_end])
    keep_before = min(len(before), max(room // 3, room - len(after)))
    keep_after = min(len(after), room - keep_before)
    shown_before = before[len(before) - keep_before :]
    cut_before = window_start > 0 or keep_before < len(before)
    if cut_before:
        space = shown_before.find(" ", 0, 12)  # start at a word when one starts nearby
        shown_before = shown_before[space + 1 :] if space >= 0 else shown_before
    shown_after = after[:keep_after]
    cut_after = window_end < len(content) or keep_after < len(after)
    if cut_after:
        space = shown_after.rfind(" ", max(0, len(shown_after) - 12))
        shown_after = shown_after[:space] if space >= 0 else shown_after
    return (
        ("…" if cut_before else "")
        + shown_before.lstrip()
        + HIT_START
        + match
        + HIT_END
        + shown_after.rstrip()
        + ("…" if cut_after else "")
    )


class ChatStore:
    """Conversations and their message trees in one SQLite file.

    Thread-safe: the store owns a single connection, opened with `check_same_thread=False`, and every call
    holds the store's lock, because the UI thread and the generation worker both write. Each write is one
    short transaction, committed before the call returns (WAL journal, `synchronous=FULL`), so a process
    killed while an answer streams loses only what arrived since the last `update_message`.

    Opening upgrades the schema (see `MIGRATIONS`) and marks messages left "streaming" by a process that
    died as "interrupted", keeping their text. So open one store per database file per app instance: a
    second store opened alongside would mark the first one's streaming answer as interrupted.

    Errors are `StorageError`s with a one-line message: `CorruptDatabaseError` when the file is not SQLite
    or is damaged, `NotFoundError` for an unknown id; a full disk says so. Invalid arguments (an unknown
    role, a parent from another conversation) raise `ValueError`.

    Use it as a context manager, or call `close()`.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        migrations: Sequence[Migration] = MIGRATIONS,
        full_text: bool = True,
        mark_interrupted: bool = True,
    ) -> None:
        """Open (creating if needed) and upgrade the database at `path`.

        Args:
            path: The database file; its folder must exist.
            migrations: The schema migrations; tests pass extra ones to exercise an upgrade.
            full_text: False searches with LIKE scans even when SQLite has FTS5, as a build without FTS5
                does (tests use it). The index is then left stale and rebuilt at the next open with it.
            mark_interrupted: False leaves answers marked "streaming" as they are: for a command-line tool
                that reads or adds chats while the app may be writing an answer.

        Raises:
            CorruptDatabaseError: The file is not an SQLite database or is damaged.
            StorageError: It cannot be opened or upgraded, or was written by a newer version of the app.
        """
        self.file = Path(path)
        self._lock = threading.RLock()
        try:
            self._conn = sqlite3.connect(
                self.file, timeout=5.0, isolation_level=None, check_same_thread=False
            )
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise sqlite_storage_error(exc, self.file) from exc
        self._full_text = False
        try:
            self._open(migrations, full_text=full_text, mark_interrupted=mark_interrupted)
        except BaseException:
            self._conn.close()
            raise

    def _open(self, migrations: Sequence[Migration], *, full_text: bool, mark_interrupted: bool) -> None:
        try:
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute("PRAGMA journal_mode = WAL")
            # FULL fsyncs each commit: commits come about once a second, and a power cut then keeps them too.
            self._conn.execute("PRAGMA synchronous = FULL")
            problems = [row[0] for row in self._conn.execute("PRAGMA quick_check(1)")]
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise sqlite_storage_error(exc, self.file) from exc
        if problems != ["ok"]:
            raise CorruptDatabaseError(f"{self.file} is damaged ({' '.join(str(problems[0]).split())}).")
        self._migrate(migrations)
        self._full_text = self._sync_search_index(full_text)
        if mark_interrupted:
            with self._transaction() as conn:
                conn.execute(
                    "UPDATE messages SET status = 'interrupted', updated_at = ? WHERE status = 'streaming'",
                    (time.time(),),
                )

    def _sync_search_index(self, wanted: bool) -> bool:
        """Make the search index match what this SQLite can do; returns whether searches may use it.

        With FTS5, a missing index or trigger (the database was last opened without FTS5, or it was
        upgraded by one) is recreated and refilled. Without it, the triggers go: each write through them
        would fail with "no such module", so the index is left stale until FTS5 is back.
        """
        if self._query("PRAGMA user_version")[0][0] < _SEARCH_SCHEMA:
            return False
        with self._lock:
            try:
                usable = wanted and _has_fts5_trigram(self._conn)
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                raise sqlite_storage_error(exc, self.file) from exc
        names = list(_SEARCH_TRIGGERS)
        triggers = {
            row[0]
            for row in self._query(
                f"SELECT name FROM sqlite_master WHERE type = 'trigger' AND name IN ({', '.join('?' * len(names))})",
                names,
            )
        }
        has_table = bool(self._query("SELECT 1 FROM sqlite_master WHERE name = 'message_search'"))
        if usable and (not has_table or triggers != set(names)):
            with self._transaction() as conn:
                _create_search_index(conn)
        elif not usable and triggers:
            with self._transaction() as conn:
                for name in sorted(triggers):
                    conn.execute(f"DROP TRIGGER IF EXISTS {name}")
        return usable

    def _migrate(self, migrations: Sequence[Migration]) -> None:
        version = self._query("PRAGMA user_version")[0][0]
        if version > len(migrations):
            raise StorageError(
                f"{self.file} was written by a newer version of Qwen Desktop "
                f"(schema {version}, this version knows {len(migrations)}); please update the app."
            )
        for number, migration in enumerate(migrations[version:], start=version + 1):
            try:
                with self._transaction() as conn:
                    migration(conn)
                    if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                        raise StorageError("it would break links between messages")
                    conn.execute(f"PRAGMA user_version = {int(number)}")
            except CorruptDatabaseError:
                raise
            except Exception as exc:
                raise StorageError(
                    f"Cannot upgrade the chat database {self.file} to schema {number}: {' '.join(str(exc).split())}"
                ) from exc

    def close(self) -> None:
        """Close the connection; the store cannot be used afterwards. Calling it twice is harmless."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> ChatStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction under the lock; rolled back if the body raises."""
        with self._lock:
            try:
                # IMMEDIATE takes the write lock now, so a second app instance waits instead of failing
                # halfway through.
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                    self._conn.execute("COMMIT")
                except BaseException:
                    if self._conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            self._conn.execute("ROLLBACK")
                    raise
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                raise sqlite_storage_error(exc, self.file) from exc

    def _query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> list[Any]:
        with self._lock:
            try:
                rows: list[Any] = self._conn.execute(sql, params).fetchall()
                return rows
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                raise sqlite_storage_error(exc, self.file) from exc

    # Conversations

    def create_conversation(
        self, title: str = DEFAULT_TITLE, system_prompt: str | None = None, preset: str | None = None
    ) -> Conversation:
        """Add an empty conversation.

        Args:
            title: Its title; `auto_title` replaces the default one with the first question.
            system_prompt: Its own system prompt, or None to use the settings' one.
            preset: The system-prompt preset chosen for it (see `Conversation.preset`).
        """
        title, system_prompt = storable(title), _storable_or_none(system_prompt)
        now = time.time()
        uid = uuid.uuid4().hex
        with self._transaction() as conn:
            cur = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt, uid, preset)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (title, now, now, system_prompt, uid, preset),
            )
            new_id = cast(int, cur.lastrowid)
        return Conversation(
            new_id, title, now, now, None, system_prompt, pinned=False, uid=uid, preset=preset
        )

    def list_conversations(self) -> list[Conversation]:
        """All conversations: the pinned ones first, then the most recently updated first."""
        rows = self._query(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations ORDER BY pinned DESC, updated_at DESC, id DESC"
        )
        return [_conversation(row) for row in rows]

    def get_conversation(self, conversation_id: int) -> Conversation:
        """The conversation with this id.

        Raises:
            NotFoundError: There is none.
        """
        rows = self._query(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations WHERE id = ?", (conversation_id,)
        )
        if not rows:
            raise NotFoundError(f"Conversation {conversation_id} does not exist.")
        return _conversation(rows[0])

    def rename_conversation(self, conversation_id: int, title: str) -> Conversation:
        """Set a conversation's title (surrounding blanks removed); it keeps its place in the list.

        Raises:
            ValueError: The title is blank.
            NotFoundError: There is no such conversation.
        """
        title = storable(title).strip()
        if not title:
            raise ValueError("a conversation title cannot be blank")
        self._update_conversation(conversation_id, "title = ?", (title,))
        return self.get_conversation(conversation_id)

    def set_system_prompt(self, conversation_id: int, system_prompt: str | None) -> Conversation:
        """Give a conversation its own system prompt, or None to fall back to the settings' one.

        Raises:
            NotFoundError: There is no such conversation.
        """
        self._update_conversation(conversation_id, "system_prompt = ?", (_storable_or_none(system_prompt),))
        return self.get_conversation(conversation_id)

    def set_preset(self, conversation_id: int, preset: str | None, system_prompt: str | None) -> Conversation:
        """Choose a conversation's system-prompt preset and keep its text (see `Conversation.preset`); its
        `updated_at` stays as it is.

        Raises:
            NotFoundError: There is no such conversation.
        """
        self._update_conversation(
            conversation_id, "preset = ?, system_prompt = ?", (preset, _storable_or_none(system_prompt))
        )
        return self.get_conversation(conversation_id)

    def set_pinned(self, conversation_id: int, pinned: bool) -> Conversation:
        """Pin a conversation to the top of the list, or unpin it; its `updated_at` stays as it is.

        Raises:
            NotFoundError: There is no such conversation.
        """
        self._update_conversation(conversation_id, "pinned = ?", (1 if pinned else 0,))
        return self.get_conversation(conversation_id)

    def _update_conversation(self, conversation_id: int, assignments: str, params: Sequence[Any]) -> None:
        with self._transaction() as conn:
            cur = conn.execute(
                f"UPDATE conversations SET {assignments} WHERE id = ?", (*params, conversation_id)
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"Conversation {conversation_id} does not exist.")

    def delete_conversation(self, conversation_id: int) -> bool:
        """Delete a conversation and all its messages.

        Returns:
            True if it existed.
        """
        with self._transaction() as conn:
            return conn.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,)).rowcount > 0

    def auto_title(self, conversation_id: int, first_user_text: str) -> Conversation:
        """Title a conversation after its first question, only while it still has the default title.

        Uses `title_from_text` (first line, about 40 characters); blank text changes nothing.

        Raises:
            NotFoundError: There is no such conversation.
        """
        title = title_from_text(storable(first_user_text))
        if title:
            with self._transaction() as conn:
                conn.execute(
                    "UPDATE conversations SET title = ? WHERE id = ? AND title = ?",
                    (title, conversation_id, DEFAULT_TITLE),
                )
        return self.get_conversation(conversation_id)

    # Messages

    def add_message(
        self,
        conversation_id: int,
        role: Role,
        content: str,
        parent_id: int | _Head | None = HEAD,
        status: Status = "complete",
        stats: Mapping[str, Any] | None = None,
    ) -> Message:
        """Add a message and make it the conversation's head.

        To regenerate an answer or edit a question, pass the old message's `parent_id`: the new message
        becomes its sibling and the old branch stays in the tree.

        Args:
            conversation_id: The conversation.
            role: "system", "user" or "assistant".
            content: The text ("" for an answer about to stream).
            parent_id: The message it follows: the current head by default, None for a new root.
            status: "streaming" for an answer still being generated, else usually "complete".
            stats: Generation figures to keep with it (JSON-serialisable).

        Raises:
            NotFoundError: There is no such conversation.
            ValueError: Unknown role or status, or the parent is not in this conversation.
        """
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        _check_status(status)
        content = storable(content)
        stats_json = _stats_json(stats)
        now = time.time()
        with self._transaction() as conn:
            row = conn.execute(
                "SELECT head_message_id FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
            if row is None:
                raise NotFoundError(f"Conversation {conversation_id} does not exist.")
            parent = row[0] if isinstance(parent_id, _Head) else parent_id
            if parent is not None:
                owner = conn.execute(
                    "SELECT conversation_id FROM messages WHERE id = ?", (parent,)
                ).fetchone()
                if owner is None or owner[0] != conversation_id:
                    raise ValueError(f"message {parent} is not in conversation {conversation_id}")
            cur = conn.execute(
                "INSERT INTO messages (conversation_id, parent_id, role, content, status, stats_json,"
                " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (conversation_id, parent, role, content, status, stats_json, now, now),
            )
            new_id = cast(int, cur.lastrowid)
            conn.execute(
                "UPDATE conversations SET head_message_id = ?, updated_at = ? WHERE id = ?",
                (new_id, now, conversation_id),
            )
        return Message(
            new_id,
            conversation_id,
            parent,
            role,
            content,
            status,
            None if stats is None else dict(stats),
            now,
            now,
        )

    def update_message(
        self,
        message_id: int,
        content: str | None = None,
        status: Status | None = None,
        stats: Mapping[str, Any] | None = None,
    ) -> None:
        """Change a message's content, status and/or stats; arguments left None are kept.

        This is one short transaction: the app calls it about once a second while an answer streams.

        Raises:
            NotFoundError: There is no such message.
            ValueError: Unknown status.
        """
        assignments: list[str] = []
        params: list[Any] = []
        if content is not None:
            assignments.append("content = ?")
            params.append(storable(content))
        if status is not None:
            _check_status(status)
            assignments.append("status = ?")
            params.append(status)
        if stats is not None:
            assignments.append("stats_json = ?")
            params.append(_stats_json(stats))
        if not assignments:
            return
        with self._transaction() as conn:
            cur = conn.execute(
                f"UPDATE messages SET {', '.join(assignments)}, updated_at = ? WHERE id = ?",
                (*params, time.time(), message_id),
            )
            if cur.rowcount == 0:
                raise NotFoundError(f"Message {message_id} does not exist.")

    def get_message(self, message_id: int) -> Message:
        """The message with this id.

        Raises:
            NotFoundError: There is none.
        """
        rows = self._query(f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE id = ?", (message_id,))
        if not rows:
            raise NotFoundError(f"Message {message_id} does not exist.")
        return _message(rows[0])

    def path(self, conversation_id: int) -> list[Message]:
        """The branch on show: messages from the root to the head ([] for an empty conversation).

        The walk up from the head is bounded by the conversation's message count, so a damaged database in
        which parents form a loop cannot make it run forever.

        Raises:
            NotFoundError: There is no such conversation.
            DamagedChatError: Its messages' parents form a loop (the database was damaged).
        """
        with self._lock:
            self.get_conversation(conversation_id)
            count = self._query(
                "SELECT count(*) FROM messages WHERE conversation_id = ?", (conversation_id,)
            )[0][0]
            rows = self._query(
                f"""WITH RECURSIVE chain(id, depth) AS (
                        SELECT head_message_id, 0 FROM conversations WHERE id = :conversation
                        UNION ALL
                        SELECT m.parent_id, chain.depth + 1 FROM messages AS m JOIN chain ON m.id = chain.id
                        WHERE m.parent_id IS NOT NULL AND chain.depth <= :count
                    )
                    SELECT {_M_MESSAGE_COLUMNS}
                    FROM chain JOIN messages AS m ON m.id = chain.id
                    ORDER BY chain.depth DESC""",
                {"conversation": conversation_id, "count": count},
            )
        if len(rows) > count:
            raise DamagedChatError(
                f"Conversation {conversation_id} is damaged: its messages refer to each other in a loop, "
                "so it cannot be shown (the other chats are fine)."
            )
        return [_message(row) for row in rows]

    def messages(self, conversation_id: int) -> list[Message]:
        """Every message of a conversation, all versions, oldest first.

        Raises:
            NotFoundError: There is no such conversation.
        """
        with self._lock:
            self.get_conversation(conversation_id)
            rows = self._query(
                f"SELECT {_MESSAGE_COLUMNS} FROM messages WHERE conversation_id = ? ORDER BY id",
                (conversation_id,),
            )
        return [_message(row) for row in rows]

    def siblings(self, message_id: int) -> list[Message]:
        """The messages with the same parent (in the same conversation), itself included, oldest first.

        The UI shows "2/3" arrows from this and calls `switch_to` with the chosen one.

        Raises:
            NotFoundError: There is no such message.
        """
        rows = self._query(
            f"""SELECT {_MESSAGE_COLUMNS} FROM messages
                WHERE conversation_id = (SELECT conversation_id FROM messages WHERE id = :id)
                  AND parent_id IS (SELECT parent_id FROM messages WHERE id = :id)
                ORDER BY id""",
            {"id": message_id},
        )
        if not rows:
            raise NotFoundError(f"Message {message_id} does not exist.")
        return [_message(row) for row in rows]

    def switch_to(self, message_id: int) -> list[Message]:
        """Show the branch through a message: the head becomes the newest message in its subtree.

        The newest message under it is always a leaf (a reply is newer than what it replies to), so the
        branch shown is the one last added to below this message.

        Returns:
            The new `path` of the conversation.

        Raises:
            NotFoundError: There is no such message.
        """
        with self._transaction() as conn:
            row = conn.execute(
                """WITH RECURSIVE subtree(id) AS (
                        SELECT id FROM messages WHERE id = ?
                        UNION  -- not UNION ALL: a loop of parents in a damaged file ends the walk
                        SELECT m.id FROM messages AS m JOIN subtree ON m.parent_id = subtree.id
                    )
                    SELECT max(subtree.id), (SELECT conversation_id FROM messages WHERE id = ?) FROM subtree""",
                (message_id, message_id),
            ).fetchone()
            leaf, conversation_id = row
            if leaf is None:
                raise NotFoundError(f"Message {message_id} does not exist.")
            conn.execute("UPDATE conversations SET head_message_id = ? WHERE id = ?", (leaf, conversation_id))
        return self.path(conversation_id)

    # Export and import

    @contextlib.contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction under the lock: the queries inside it see one state of the file, while
        another connection (the app, when this is a command-line tool) can go on writing."""
        with self._lock:
            try:
                self._conn.execute("BEGIN DEFERRED")
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                raise sqlite_storage_error(exc, self.file) from exc
            try:
                yield
            finally:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.execute("COMMIT")  # nothing was written: this only ends the snapshot

    def dump(self, conversation_ids: Sequence[int] | None = None) -> list[ChatDump]:
        """Whole conversations with all their messages, read from one consistent snapshot.

        Args:
            conversation_ids: Which ones, in this order; None for all, in `list_conversations` order.

        Raises:
            NotFoundError: An id does not exist.
        """
        with self._snapshot():
            conversations = (
                self.list_conversations()
                if conversation_ids is None
                else [self.get_conversation(i) for i in conversation_ids]
            )
            return [ChatDump(c, tuple(self.messages(c.id))) for c in conversations]

    def import_chats(self, chats: Sequence[ChatDump]) -> ImportResult:
        """Add whole conversations in one transaction: all of them, or nothing if one is invalid.

        Each keeps its title, times, pin, system prompt and `uid`, and every message its role, text,
        status, stats and times; they get new ids. In a `ChatDump` given here, the conversation's `id` is
        ignored and message ids only link the messages of that chat: a message's `parent_id` must be an
        earlier message of the same dump (or None), `head_message_id` one of its messages (or None).

        A conversation whose `uid` is already in the database is skipped (it was exported from here, or
        imported before); one with an empty `uid` gets a new one.

        Raises:
            ValueError: A parent or head is not an earlier message of its chat, two messages share an id,
                a role or status is unknown, or text is not valid Unicode (nothing was imported).
            StorageError: The database cannot be written (nothing was imported).
        """
        imported: list[int] = []
        skipped: list[int] = []
        with self._transaction() as conn:
            for dump in chats:
                found = self._import_one(conn, dump)
                (imported if found[1] else skipped).append(found[0])
        return ImportResult(tuple(imported), tuple(skipped))

    def _import_one(self, conn: sqlite3.Connection, dump: ChatDump) -> tuple[int, bool]:
        """Insert one dump; returns (its new id, True), or (the existing chat's id, False) if already here."""
        c = dump.conversation
        uid = c.uid or uuid.uuid4().hex
        row = conn.execute("SELECT id FROM conversations WHERE uid = ?", (uid,)).fetchone()
        if row is not None:
            return int(row[0]), False
        try:
            cur = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt, pinned, uid, preset)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (c.title, c.created_at, c.updated_at, c.system_prompt, 1 if c.pinned else 0, uid, c.preset),
            )
            conversation_id = cast(int, cur.lastrowid)
            new_ids: dict[int, int] = {}
            for m in dump.messages:
                if m.role not in ROLES:
                    raise ValueError(f"role must be one of {', '.join(ROLES)}, not {m.role!r}")
                _check_status(m.status)
                if m.id in new_ids:
                    raise ValueError(f"two messages of chat {c.title!r} have the id {m.id}")
                if m.parent_id is not None and m.parent_id not in new_ids:
                    raise ValueError(f"message {m.id}'s parent is not an earlier message of chat {c.title!r}")
                cur = conn.execute(
                    "INSERT INTO messages (conversation_id, parent_id, role, content, status, stats_json,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        conversation_id,
                        None if m.parent_id is None else new_ids[m.parent_id],
                        m.role,
                        m.content,
                        m.status,
                        _stats_json(m.stats),
                        m.created_at,
                        m.updated_at,
                    ),
                )
                new_ids[m.id] = cast(int, cur.lastrowid)
            head = c.head_message_id
            if head is not None and head not in new_ids:
                raise ValueError(f"the head of chat {c.title!r} is not one of its messages")
            conn.execute(
                "UPDATE conversations SET head_message_id = ? WHERE id = ?",
                (None if head is None else new_ids[head], conversation_id),
            )
        except UnicodeEncodeError:  # a lone surrogate: SQLite stores UTF-8
            raise ValueError(f"chat {c.title!r} has text that is not valid Unicode") from None
        return conversation_id, True

    # Search

    def search(self, query: str, limit: int = 50) -> list[SearchHit]:
        """The messages that contain `query`, one hit per message, best first.

        The query is literal text (no operators; quotes, `*`, `NEAR`, NUL are just characters), matched
        case-insensitively anywhere in a message, in every conversation and on every branch. Blanks around
        it are ignored. Three or more characters are looked up in the trigram index; one or two characters
        (and every query on an SQLite without FTS5) scan the messages with LIKE, which folds only ASCII
        letters. Every hit is checked in Python: its text really contains the case-folded query.

        Hits are ordered by relevance (FTS5's bm25: more occurrences in a shorter message first), equal ones
        by their conversation's `updated_at` (newest first), then the newest message; LIKE scans by the
        latter two only.

        Args:
            query: What the user typed; any string (a blank one finds nothing, nor does one with a lone
                surrogate, which no stored text can contain).
            limit: The most hits returned.

        Raises:
            StorageError: The database cannot be read (never because of the query).
        """
        needle = query.strip() if isinstance(query, str) else ""
        if not needle or limit <= 0:
            return []
        try:
            needle.encode("utf-8")
        except UnicodeEncodeError:
            return []
        folded = needle.casefold()
        # SQLite reads text up to a NUL in LIKE patterns and FTS5 expressions: hand it the longest piece
        # without one (capped), and let the final check hold the hits to the whole query.
        term = max(needle.split("\x00"), key=len)[:_PREFILTER_CHARS]
        with self._lock:
            if self._full_text and len(term) >= 3:
                try:
                    return self._indexed_hits('"' + term.replace('"', '""') + '"', folded, limit)
                except (sqlite3.Error, UnicodeDecodeError):
                    pass  # a damaged index: the scan below reads the messages themselves
            try:
                like = "%" + term.translate(_LIKE_ESCAPE) + "%"
                cursor = self._conn.execute(_LIKE_SEARCH, (like,))
                try:
                    return _checked_hits(cursor, folded, limit)  # stops reading at the limit
                finally:
                    cursor.close()
            except (sqlite3.Error, UnicodeDecodeError) as exc:
                raise sqlite_storage_error(exc, self.file) from exc

    def _indexed_hits(self, match: str, folded_query: str, limit: int) -> list[SearchHit]:
        candidates = limit + 16
        while True:
            rows = self._conn.execute(_FTS_SEARCH, (match, candidates)).fetchall()
            hits = _checked_hits(rows, folded_query, limit)
            if len(hits) >= limit or len(rows) < candidates:
                return hits
            candidates *= 4  # the check turned some down (a NUL in the query, case folding): look further


def _checked_hits(rows: Iterable[Sequence[Any]], folded_query: str, limit: int) -> list[SearchHit]:
    """The first `limit` rows whose message really contains the query, as hits with snippets."""
    hits: list[SearchHit] = []
    for message_id, conversation_id, role, content, title, updated_at in rows:
        where = _locate(content, folded_query) if isinstance(content, str) else None
        if where is None:
            continue
        snippet = _snippet(content, *where)
        hits.append(SearchHit(conversation_id, str(title), message_id, role, snippet, updated_at))
        if len(hits) >= limit:
            break
    return hits


def open_chat_store(path: str | Path | None = None) -> tuple[ChatStore, str | None]:
    """Open the chat database; if it is damaged, keep it aside and start a fresh one.

    The bad file (and its "-wal"/"-shm" companions) is renamed to `chats.sqlite3.corrupt-<timestamp>`,
    where SQLite tools can still open it for recovery.

    Args:
        path: The database file; `paths.database_path()` by default.

    Returns:
        The store, and a one-line warning for the user when the old database had to be moved aside.

    Raises:
        StorageError: The database cannot be opened for another reason (no permission, full disk, written
            by a newer version) or the damaged file cannot be moved.
    """
    path = database_path() if path is None else Path(path)
    try:
        return ChatStore(path), None
    except CorruptDatabaseError as exc:
        reason = str(exc)
    try:
        aside = move_aside(path, companions=("-wal", "-shm"))
    except OSError as exc:
        raise os_storage_error("move the damaged chat database", path, exc) from exc
    store = ChatStore(path)
    return store, f"{reason} It was kept as {aside.name} and a new chat history was started."
