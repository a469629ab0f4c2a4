"""A chat database as the first version of the app wrote it (schema 1), for the upgrade tests.

Written with plain SQL: the store's own methods speak the newest schema.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from qwen_desktop.storage.chats import MIGRATIONS


def write_schema_1(path: Path, chats: dict[str, list[tuple[str, str, int | None]]]) -> dict[str, int]:
    """Create `path` at schema 1 with `chats`: title -> messages as (role, content, parent index or None).

    Each conversation's head is its last message; message ids grow in the order given. Returns the
    conversation ids by title.
    """
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        MIGRATIONS[0](conn)
        ids: dict[str, int] = {}
        now = 1_700_000_000.0
        for title, messages in chats.items():
            now += 60
            cur = conn.execute(
                "INSERT INTO conversations (title, created_at, updated_at) VALUES (?, ?, ?)",
                (title, now, now),
            )
            conversation_id = cur.lastrowid
            assert conversation_id is not None
            ids[title] = conversation_id
            message_ids: list[int] = []
            for role, content, parent in messages:
                now += 1
                cur = conn.execute(
                    "INSERT INTO messages (conversation_id, parent_id, role, content, status, stats_json,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, 'complete', ?, ?, ?)",
                    (
                        conversation_id,
                        None if parent is None else message_ids[parent],
                        role,
                        content,
                        json.dumps({"tokens": len(content)}) if role == "assistant" else None,
                        now,
                        now,
                    ),
                )
                assert cur.lastrowid is not None
                message_ids.append(cur.lastrowid)
            conn.execute(
                "UPDATE conversations SET head_message_id = ?, updated_at = ? WHERE id = ?",
                (message_ids[-1] if message_ids else None, now, conversation_id),
            )
        conn.execute("PRAGMA user_version = 1")
        conn.execute("COMMIT")
    finally:
        conn.close()
    return ids
