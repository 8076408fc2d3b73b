"""The journal's file: ``<data_dir>/<site>.journal.db``, whose ``episodes`` table has the AgentDB
episodes shape, so that the engine reads it through the AgentDB reader and converts its rows as it
converts an AgentDB file's (``sync.source.journal.source``).

memsync writes it (the AgentDB file stays the agent's, never written); every save is one
transaction with ``synchronous = FULL``, so a save that returned is on disk whatever happens to the
daemon next. Ids are never reused (AUTOINCREMENT): a forgotten ``m<n>`` stays forgotten. Beside the
AgentDB columns, ``content_hash`` (the save's text, normalised) lets a repeated save find the memory
it repeats without the search index.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson

from sync.sqlite_db import apply_schema, open_wal, write_tx

SCHEMA: Final = (
    """CREATE TABLE IF NOT EXISTS episodes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  ts INTEGER NOT NULL,
  session_id TEXT NOT NULL,
  task TEXT NOT NULL,
  input TEXT,
  output TEXT,
  critique TEXT,
  reward REAL,
  success INTEGER,
  latency_ms INTEGER,
  tokens_used INTEGER,
  tags TEXT,
  metadata TEXT,
  created_at INTEGER NOT NULL,
  agent_name TEXT,
  agent_platform TEXT,
  content_hash TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS episodes_content ON episodes (content_hash)",
)
SCHEMA_VERSION: Final = "1"
# The columns a person's text can be in (``forget --matching``); memsync's own names, never input.
TEXT_COLUMNS: Final = ("task", "input", "output", "critique", "tags", "metadata")


def journal_path(data_dir: Path, site: str) -> Path:
    return data_dir / f"{site}.journal.db"


def content_key(text: str) -> str:
    """What makes two saves the same save: the text with its whitespace and case folded."""
    return hashlib.sha256(" ".join(text.split()).casefold().encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Entry:
    """One saved memory as the journal stores it (AgentDB's columns; JSON ones as Python values)."""

    session_id: str
    task: str
    created_ms: int
    tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] | None = None
    agent_name: str | None = None
    agent_platform: str | None = None
    input: str | None = None
    output: str | None = None
    critique: str | None = None
    reward: float | None = None
    success: bool = True


class Journal:
    """The journal file, opened for writing (a save, a forget) or reading."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn = open_wal(path, synchronous="FULL")
        self._conn.execute("PRAGMA secure_delete = ON")  # a forgotten memory's text is overwritten
        apply_schema(self._conn, SCHEMA, SCHEMA_VERSION)

    def append(self, entry: Entry) -> int:
        """Store ``entry``; returns its id (its key on the backbone is ``m<id>``)."""
        with write_tx(self._conn) as conn:
            cursor = conn.execute(
                """INSERT INTO episodes (ts, session_id, task, input, output, critique, reward, success,
                     tags, metadata, created_at, agent_name, agent_platform, content_hash)
                   VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                (
                    entry.created_ms,
                    entry.session_id,
                    entry.task,
                    entry.input,
                    entry.output,
                    entry.critique,
                    entry.reward,
                    int(entry.success),
                    orjson.dumps(list(entry.tags)).decode(),
                    orjson.dumps(dict(entry.metadata or {})).decode(),
                    entry.created_ms,
                    entry.agent_name,
                    entry.agent_platform,
                    content_key(entry.task),
                ),
            )
            return int(cursor.lastrowid or 0)

    def same_content(self, text: str) -> int | None:
        """The id of the latest memory saved with this text (``content_key``), or None."""
        row = self._conn.execute("SELECT max(id) FROM episodes WHERE content_hash = ?", (content_key(text),)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def get(self, local_id: int) -> dict[str, Any] | None:
        cursor = self._conn.execute("SELECT * FROM episodes WHERE id = ?", (local_id,))
        names = [d[0] for d in cursor.description]
        row = cursor.fetchone()
        return None if row is None else dict(zip(names, row, strict=True))

    def retag(self, local_id: int, tags: Iterable[str], metadata: Mapping[str, Any]) -> bool:
        """A saved memory's tags and metadata rewritten in place (``sync.source.journal.correction``:
        its text, and so its identity, stay); False when there is no such row."""
        with write_tx(self._conn) as conn:
            cursor = conn.execute(
                "UPDATE episodes SET tags = ?, metadata = ? WHERE id = ?",
                (orjson.dumps(list(tags)).decode(), orjson.dumps(dict(metadata)).decode(), local_id),
            )
            return cursor.rowcount == 1

    def count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM episodes").fetchone()[0])

    def delete(self, ids: Iterable[int]) -> int:
        """Forget these memories here (their text overwritten, the -wal emptied); how many went."""
        wanted = sorted(set(ids))
        if not wanted:
            return 0
        with write_tx(self._conn) as conn:
            gone = conn.executemany("DELETE FROM episodes WHERE id = ?", [(i,) for i in wanted]).rowcount
        self._checkpoint()
        return int(gone)

    def forget_text(self, text: str) -> int:
        """``forget --matching``: every memory whose text holds ``text`` deleted (not edited: an edit
        would be pushed again under the key just forgotten); how many."""
        held = " OR ".join(f"instr(coalesce({c}, ''), ?) > 0" for c in TEXT_COLUMNS)
        ids = [r[0] for r in self._conn.execute(f"SELECT id FROM episodes WHERE {held}", (text,) * len(TEXT_COLUMNS))]
        return self.delete(ids)

    def _checkpoint(self) -> None:
        with contextlib.suppress(sqlite3.Error):  # a reader holds it: the next checkpoint empties it
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
