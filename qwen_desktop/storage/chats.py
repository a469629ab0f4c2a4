"""The chat history: conversations stored as trees of messages in one SQLite file.

A conversation is a tree so that nothing is silently lost: regenerating an answer or editing a question adds
a sibling of the old message (same parent) and moves the conversation's head to it; the old branch stays
reachable through `ChatStore.siblings` and `ChatStore.switch_to`. The conversation shown is the path from
the root to the head.

The schema is versioned with `PRAGMA user_version` and upgraded at open by `MIGRATIONS`, applied in order,
each in its own transaction. To change the schema, append one function to `MIGRATIONS`; never edit one that
has shipped.
"""

from __future__ import annotations

import contextlib
import enum
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
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
    """

    id: int
    title: str
    created_at: float
    updated_at: float
    head_message_id: int | None
    system_prompt: str | None


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


# Each function gets the connection inside an open transaction and must not commit. user_version is set
# to the function's 1-based position in the same transaction. PRAGMA foreign_keys cannot change inside a
# transaction: a migration that rebuilds a table should use `PRAGMA defer_foreign_keys = ON`; the
# foreign keys are checked before the commit.
MIGRATIONS: Final[tuple[Migration, ...]] = (_migration_1_initial_schema,)

_CONVERSATION_COLUMNS = "id, title, created_at, updated_at, head_message_id, system_prompt"
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
    return None if stats is None else json.dumps(dict(stats), ensure_ascii=False)


def _check_status(status: str) -> None:
    if status not in STATUSES:
        raise ValueError(f"status must be one of {', '.join(STATUSES)}, not {status!r}")


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

    def __init__(self, path: str | Path, *, migrations: Sequence[Migration] = MIGRATIONS) -> None:
        """Open (creating if needed) and upgrade the database at `path`.

        Args:
            path: The database file; its folder must exist.
            migrations: The schema migrations; tests pass extra ones to exercise an upgrade.

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
        try:
            self._open(migrations)
        except BaseException:
            self._conn.close()
            raise

    def _open(self, migrations: Sequence[Migration]) -> None:
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
        with self._transaction() as conn:
            conn.execute(
                "UPDATE messages SET status = 'interrupted', updated_at = ? WHERE status = 'streaming'",
                (time.time(),),
            )

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
        self, title: str = DEFAULT_TITLE, system_prompt: str | None = None
    ) -> Conversation:
        """Add an empty conversation.

        Args:
            title: Its title; `auto_title` replaces the default one with the first question.
            system_prompt: Its own system prompt, or None to use the settings' one.
        """
        now = time.time()
        with self._transaction() as conn:
            cur = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at, system_prompt) VALUES (?, ?, ?, ?)",
                (title, now, now, system_prompt),
            )
            new_id = cast(int, cur.lastrowid)
        return Conversation(new_id, title, now, now, None, system_prompt)

    def list_conversations(self) -> list[Conversation]:
        """All conversations, the most recently updated first."""
        rows = self._query(
            f"SELECT {_CONVERSATION_COLUMNS} FROM conversations ORDER BY updated_at DESC, id DESC"
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
        title = title.strip()
        if not title:
            raise ValueError("a conversation title cannot be blank")
        self._update_conversation(conversation_id, "title = ?", (title,))
        return self.get_conversation(conversation_id)

    def set_system_prompt(self, conversation_id: int, system_prompt: str | None) -> Conversation:
        """Give a conversation its own system prompt, or None to fall back to the settings' one.

        Raises:
            NotFoundError: There is no such conversation.
        """
        self._update_conversation(conversation_id, "system_prompt = ?", (system_prompt,))
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
        title = title_from_text(first_user_text)
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
            params.append(content)
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
