"""The site's own state, in its own SQLite file beside (never inside) the AgentDB file.

It holds the cursor (every id at or below it is either synced or quarantined), one row per episode
synced (its source id, identity and content hashes, remote id), the quarantine (dead letters, with
reasons, kept until they succeed) and the conflicts (ids reused for a different episode).

The sidecar may fall behind the backbone (a crash between the backbone's commit and ours) but the
engine never lets it run ahead: it records a batch only after the backbone has answered for it.
Losing it entirely costs one idempotent re-push of every episode.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sync.errors import ConfigError
from sync.push.plan import Occupant
from sync.sqlite_db import apply_schema, forget_text, open_wal, write_tx

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS occupants (
  local_id INTEGER NOT NULL,
  generation INTEGER NOT NULL,
  source_id TEXT NOT NULL UNIQUE,
  identity_hash TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  remote_id TEXT,
  synced_at INTEGER,
  PRIMARY KEY (local_id, generation)
)""",
    """CREATE TABLE IF NOT EXISTS quarantine (
  local_id INTEGER PRIMARY KEY,
  content_hash TEXT NOT NULL,
  stage TEXT NOT NULL,
  reason TEXT NOT NULL,
  first_seen REAL NOT NULL,
  last_seen REAL NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 1,
  retry_requested INTEGER NOT NULL DEFAULT 0,
  row_preview TEXT
)""",
    """CREATE TABLE IF NOT EXISTS conflicts (
  id INTEGER PRIMARY KEY,
  local_id INTEGER NOT NULL,
  kept_source_id TEXT NOT NULL,
  new_source_id TEXT NOT NULL,
  detected_at REAL NOT NULL,
  UNIQUE (local_id, new_source_id)
)""",
)
SCHEMA_VERSION = "1"
PREVIEW_LIMIT = 16 * 1024


@dataclass(frozen=True, slots=True)
class Synced:
    occupant: Occupant
    remote_id: str | None
    synced_at: int | None


@dataclass(frozen=True, slots=True)
class Quarantined:
    local_id: int
    content_hash: str
    stage: str  # "read": the row could not become an episode; "backbone": the backbone refused it
    reason: str
    preview: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    local_id: int
    content_hash: str
    stage: str
    reason: str
    first_seen: float
    last_seen: float
    attempts: int
    retry_requested: bool
    preview: str | None


@dataclass(frozen=True, slots=True)
class Conflict:
    local_id: int
    kept_source_id: str
    new_source_id: str


@dataclass(frozen=True, slots=True)
class ConflictEntry:
    local_id: int
    kept_source_id: str
    new_source_id: str
    detected_at: float


class Sidecar:
    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = path
        if readonly and not path.exists():
            raise FileNotFoundError(path)
        self._conn = open_wal(path, readonly=readonly)
        if not readonly:
            apply_schema(self._conn, SCHEMA, SCHEMA_VERSION)
        elif self._conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone() is None:
            # Created a moment ago by a daemon that has not laid out its tables yet: nothing to read.
            self._conn.close()
            raise FileNotFoundError(path)

    def forget_text(self, text: str) -> int:
        """``forget --matching``: ``text`` out of the quarantine's row previews (rows that never
        reached the backbone); how many rows held it."""
        return forget_text(self._conn, "quarantine", "row_preview", text)

    # -- binding --------------------------------------------------------------------------------
    def bind(self, site: str, backbone: str) -> bool:
        """Tie this sidecar to one site and one backbone. Returns True when the backbone changed
        (its records are then dropped, so that everything is pushed to the new one)."""
        known_site = self.get("site")
        if known_site is not None and known_site != site:
            raise ConfigError(
                f"state file {self.path} belongs to site {known_site!r}, not {site!r}: "
                "give each site its own state.path"
            )
        changed = self.get("backbone") not in (None, backbone)
        with write_tx(self._conn) as conn:
            if changed:
                conn.execute("DELETE FROM occupants")
                conn.execute("DELETE FROM meta WHERE key IN ('cursor', 'last_full_at')")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('site', ?)", (site,))
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('backbone', ?)", (backbone,))
        return changed

    # -- meta -----------------------------------------------------------------------------------
    def get(self, key: str) -> str | None:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def get_float(self, key: str) -> float | None:
        value = self.get(key)
        return None if value is None else float(value)

    def set_many(self, values: dict[str, str | float | int | None]) -> None:
        with write_tx(self._conn) as conn:
            self._set(conn, values)

    @staticmethod
    def _set(conn: sqlite3.Connection, values: dict[str, str | float | int | None]) -> None:
        for key, value in values.items():
            if value is None:
                conn.execute("DELETE FROM meta WHERE key = ?", (key,))
            else:
                conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, str(value)))

    def cursor(self) -> int:
        value = self.get("cursor")
        return 0 if value is None else int(value)

    # -- occupants ------------------------------------------------------------------------------
    def occupants_between(self, after: int, upto: int) -> dict[int, list[Occupant]]:
        rows = self._conn.execute(
            "SELECT local_id, generation, source_id, identity_hash, content_hash FROM occupants"
            " WHERE local_id > ? AND local_id <= ?",
            (after, upto),
        ).fetchall()
        return _group(rows)

    def occupants_for(self, ids: Iterable[int]) -> dict[int, list[Occupant]]:
        wanted = sorted(set(ids))
        rows: list[Any] = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows += self._conn.execute(
                "SELECT local_id, generation, source_id, identity_hash, content_hash FROM occupants"
                f" WHERE local_id IN ({','.join('?' * len(chunk))})",
                chunk,
            ).fetchall()
        return _group(rows)

    def synced_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM occupants").fetchone()[0])

    # -- the one write a batch makes ------------------------------------------------------------
    def record(
        self,
        synced: Sequence[Synced],
        quarantined: Sequence[Quarantined],
        conflicts: Sequence[Conflict],
        released: Iterable[int] = (),
        cursor: int | None = None,
        now: float | None = None,
    ) -> None:
        """Everything a delivered batch changed, in one transaction (so a crash keeps all or none)."""
        now = time.time() if now is None else now
        with write_tx(self._conn) as conn:
            conn.executemany(
                "INSERT INTO occupants (local_id, generation, source_id, identity_hash, content_hash,"
                " remote_id, synced_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (source_id) DO UPDATE SET content_hash = excluded.content_hash,"
                " identity_hash = excluded.identity_hash, remote_id = excluded.remote_id,"
                " synced_at = coalesce(occupants.synced_at, excluded.synced_at)",
                [
                    (
                        s.occupant.local_id,
                        s.occupant.generation,
                        s.occupant.source_id,
                        s.occupant.identity_hash,
                        s.occupant.content_hash,
                        s.remote_id,
                        s.synced_at,
                    )
                    for s in synced
                ],
            )
            conn.executemany("DELETE FROM quarantine WHERE local_id = ?", [(i,) for i in released])
            conn.executemany(
                "INSERT INTO quarantine (local_id, content_hash, stage, reason, first_seen, last_seen,"
                " row_preview) VALUES (?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (local_id) DO UPDATE SET content_hash = excluded.content_hash,"
                " stage = excluded.stage, reason = excluded.reason, last_seen = excluded.last_seen,"
                " attempts = quarantine.attempts + 1, retry_requested = 0,"
                " row_preview = excluded.row_preview",
                [(q.local_id, q.content_hash, q.stage, q.reason, now, now, _preview(q.preview)) for q in quarantined],
            )
            conn.executemany(
                "INSERT OR IGNORE INTO conflicts (local_id, kept_source_id, new_source_id, detected_at)"
                " VALUES (?, ?, ?, ?)",
                [(c.local_id, c.kept_source_id, c.new_source_id, now) for c in conflicts],
            )
            if cursor is not None:
                self._set(conn, {"cursor": cursor})

    # -- quarantine -----------------------------------------------------------------------------
    _QUARANTINE_COLUMNS = (
        "local_id, content_hash, stage, reason, first_seen, last_seen, attempts, retry_requested, row_preview"
    )

    def quarantine(self) -> list[QuarantineEntry]:
        rows = self._conn.execute(f"SELECT {self._QUARANTINE_COLUMNS} FROM quarantine ORDER BY local_id")
        return [_entry(r) for r in rows]

    def quarantined_between(self, after: int, upto: int) -> dict[int, QuarantineEntry]:
        rows = self._conn.execute(
            f"SELECT {self._QUARANTINE_COLUMNS} FROM quarantine WHERE local_id > ? AND local_id <= ?", (after, upto)
        )
        return {r[0]: _entry(r) for r in rows}

    def quarantine_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM quarantine").fetchone()[0])

    def retry_requested(self) -> list[int]:
        return [
            r[0]
            for r in self._conn.execute("SELECT local_id FROM quarantine WHERE retry_requested = 1 ORDER BY local_id")
        ]

    def request_retry(self, ids: Sequence[int] | None = None) -> int:
        """Mark quarantined rows to be tried again on the next pass; None means all of them."""
        with write_tx(self._conn) as conn:
            if ids is None:
                return conn.execute("UPDATE quarantine SET retry_requested = 1").rowcount
            return sum(
                conn.execute("UPDATE quarantine SET retry_requested = 1 WHERE local_id = ?", (i,)).rowcount for i in ids
            )

    # -- conflicts ------------------------------------------------------------------------------
    def conflicts(self) -> list[ConflictEntry]:
        rows = self._conn.execute(
            "SELECT local_id, kept_source_id, new_source_id, detected_at FROM conflicts ORDER BY id"
        ).fetchall()
        return [ConflictEntry(*r) for r in rows]

    def conflict_count(self) -> int:
        return int(self._conn.execute("SELECT count(*) FROM conflicts").fetchone()[0])

    def close(self) -> None:
        self._conn.close()


def _entry(r: Any) -> QuarantineEntry:
    return QuarantineEntry(r[0], r[1], r[2], r[3], r[4], r[5], r[6], bool(r[7]), r[8])


def _group(rows: Iterable[Any]) -> dict[int, list[Occupant]]:
    grouped: dict[int, list[Occupant]] = {}
    for local_id, generation, source_id, identity_hash, content_hash in rows:
        grouped.setdefault(local_id, []).append(Occupant(local_id, generation, source_id, identity_hash, content_hash))
    return grouped


def _preview(row: dict[str, Any] | None) -> str | None:
    if row is None:
        return None
    text = json.dumps(row, ensure_ascii=False, default=str)
    return text if len(text) <= PREVIEW_LIMIT else text[:PREVIEW_LIMIT] + "...(truncated)"
