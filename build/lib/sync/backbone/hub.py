"""The embedded hub: a SQLite file in WAL mode that several sites on one machine share.

It is the default backbone (no cloud account needed) and what ``memsync demo`` runs on. It keeps
the contract in ``sync.backbone.base`` with the same per-row outcomes as the Convex functions.
Durability: synchronous=FULL, because the sidecars (synchronous=NORMAL) may only ever be behind
the hub, never ahead of it; a sidecar that lost a commit just re-pushes and gets UNCHANGED.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from sync.backbone.base import (
    APPROVAL_PRIORITIES,
    AgentState,
    Approval,
    Change,
    Outcome,
    PointRecord,
    PushItem,
    PushResult,
    SiteCursor,
    SourceRecord,
)
from sync.episode import EXPORT_FIELDS
from sync.errors import BackboneConflict, BackboneNotFound, BackboneRejected, BackboneUnavailable
from sync.sqlite_db import apply_schema, open_wal, primary_code, write_tx

_COUNTERS = "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL)"
_SITE_SOURCES = """CREATE TABLE IF NOT EXISTS site_sources (
  site TEXT PRIMARY KEY,
  instance TEXT NOT NULL,
  machine TEXT NOT NULL,
  host TEXT NOT NULL,
  agentdb_path TEXT NOT NULL,
  claimed_at INTEGER NOT NULL,      -- ms; when this instance took the site
  last_seen_at INTEGER NOT NULL     -- ms; its latest set_source
)"""
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS episodes (
  id INTEGER PRIMARY KEY,
  source_site TEXT NOT NULL,
  source_id TEXT NOT NULL,
  identity_hash TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  body TEXT NOT NULL,               -- the episode's camelCase fields as JSON
  ts INTEGER,
  created_at INTEGER,
  synced_at INTEGER NOT NULL,       -- ms; first receipt, never changed after
  updated_at INTEGER NOT NULL,
  change_seq INTEGER,               -- the change feed's position of the latest insert or edit
  point_id TEXT,                    -- qdrantPointId for the current content; cleared by an edit
  UNIQUE (source_site, source_id)
)""",
    """CREATE INDEX IF NOT EXISTS episodes_by_created ON episodes (created_at)""",
    """CREATE TABLE IF NOT EXISTS agents (
  site TEXT NOT NULL,
  agent_name TEXT NOT NULL,
  platform TEXT NOT NULL,
  status TEXT NOT NULL,
  last_heartbeat INTEGER NOT NULL,
  PRIMARY KEY (site, agent_name)
)""",
    """CREATE TABLE IF NOT EXISTS approvals (
  id INTEGER PRIMARY KEY,
  site TEXT NOT NULL,
  agent_name TEXT NOT NULL,
  action_type TEXT NOT NULL,
  status TEXT NOT NULL,
  priority TEXT NOT NULL,
  reviewers TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  resolved_at INTEGER,
  resolved_by TEXT
)""",
    """CREATE INDEX IF NOT EXISTS approvals_by_status_expires ON approvals (status, expires_at)""",
    """CREATE TABLE IF NOT EXISTS job_claims (
  job TEXT NOT NULL,
  slot TEXT NOT NULL,
  claimant TEXT NOT NULL,
  claimed_at INTEGER NOT NULL,
  PRIMARY KEY (job, slot)
)""",
    """CREATE TABLE IF NOT EXISTS tombstones (
  source_site TEXT NOT NULL,
  source_id TEXT NOT NULL,
  deleted_at INTEGER NOT NULL,
  change_seq INTEGER,
  PRIMARY KEY (source_site, source_id)
)""",
    _COUNTERS,
    """CREATE TABLE IF NOT EXISTS sync_cursors (
  site TEXT PRIMARY KEY,
  last_synced_id INTEGER NOT NULL,
  last_synced_at INTEGER NOT NULL,
  total_synced INTEGER NOT NULL
)""",
    _SITE_SOURCES,
)
SCHEMA_VERSION = "4"
# Version 2 hubs predate the change feed: their rows get a seq in id order, tombstones after them.
_MIGRATE_TO_3 = (
    "ALTER TABLE episodes ADD COLUMN change_seq INTEGER",
    "ALTER TABLE episodes ADD COLUMN point_id TEXT",
    "ALTER TABLE tombstones ADD COLUMN change_seq INTEGER",
    "UPDATE episodes SET change_seq = id",
    "UPDATE tombstones SET change_seq = (SELECT coalesce(max(id), 0) FROM episodes) + rowid",
)
_INDEXES_3 = (
    "CREATE INDEX IF NOT EXISTS episodes_by_change ON episodes (change_seq)",
    "CREATE INDEX IF NOT EXISTS tombstones_by_change ON tombstones (change_seq)",
)
# An agent silent this long is offline (the same rule as the Convex functions).
STALE_AFTER_MS = 3 * 60 * 1000
# Far below SQLite's own 1 GB limit; chosen so one site cannot make a batch hog the write lock.
MAX_BATCH_ROWS = 500


_INSERT = (
    "INSERT INTO episodes (id, source_site, source_id, identity_hash, content_hash, body, ts, created_at,"
    " synced_at, updated_at, change_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_UPDATE = (
    "UPDATE episodes SET content_hash = ?, body = ?, ts = ?, created_at = ?, updated_at = ?, change_seq = ?,"
    " point_id = NULL WHERE id = ?"
)


def _refused_row(exc: sqlite3.Error) -> bool:
    """SQLite refused a value (too big, wrong type), not the database as a whole."""
    return isinstance(exc, sqlite3.DataError) or primary_code(exc) == sqlite3.SQLITE_TOOBIG


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class HubBackbone:
    kind = "local"
    max_batch_rows = MAX_BATCH_ROWS
    max_batch_bytes: int | None = 64 * 1024 * 1024
    max_episode_bytes: int | None = None

    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000, create: bool = True) -> None:
        """``create=False`` opens an existing hub without writing to it (status, export)."""
        self.path = path
        self.description = f"embedded hub {path}"
        self._lock = threading.Lock()
        if not create and not path.exists():
            raise BackboneUnavailable(f"embedded hub {path} does not exist yet (no site has synced into it)")
        try:
            self._conn = open_wal(path, synchronous="FULL", busy_timeout_ms=busy_timeout_ms)
            if create:
                self._migrate()
                apply_schema(self._conn, SCHEMA + _INDEXES_3, SCHEMA_VERSION)
        except sqlite3.Error as exc:
            raise BackboneUnavailable(f"cannot open the embedded hub {path}: {exc}") from exc

    def _migrate(self) -> None:
        """Bring an older hub to the current version in place, step by step, in one transaction:
        version 2 (before the change feed) to 3, version 3 (before site sources) to 4."""
        with write_tx(self._conn) as conn:
            if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_info'").fetchone():
                return
            row = conn.execute("SELECT value FROM schema_info WHERE key = 'version'").fetchone()
            version = None if row is None else row[0]
            if version == "2":
                for statement in _MIGRATE_TO_3:
                    conn.execute(statement)
                conn.execute(_COUNTERS)
                conn.execute(
                    "INSERT OR REPLACE INTO counters VALUES ('change_seq', max("
                    " coalesce((SELECT max(change_seq) FROM episodes), 0),"
                    " coalesce((SELECT max(change_seq) FROM tombstones), 0)))"
                )
                version = "3"
            if version == "3":
                # apply_schema would create the table as well, but it never changes a recorded
                # version; here the file says "4" only once the table exists, in one transaction.
                conn.execute(_SITE_SOURCES)
                version = "4"
            if row is not None and version != row[0]:
                conn.execute("UPDATE schema_info SET value = ? WHERE key = 'version'", (version,))

    def push(self, site: str, items: Sequence[PushItem], cursor: int) -> list[PushResult]:
        now = _now_ms()
        with self._lock:
            try:
                with write_tx(self._conn) as conn:
                    results = self._upsert(conn, site, items, now)
                    inserted = sum(r.outcome is Outcome.INSERTED for r in results)
                    conn.execute(
                        """INSERT INTO sync_cursors (site, last_synced_id, last_synced_at, total_synced)
                           VALUES (?, ?, ?, ?)
                           ON CONFLICT (site) DO UPDATE SET
                             last_synced_id = max(last_synced_id, excluded.last_synced_id),
                             last_synced_at = excluded.last_synced_at,
                             total_synced = total_synced + ?""",
                        (site, cursor, now, inserted, inserted),
                    )
            except sqlite3.Error as exc:
                raise BackboneUnavailable(f"embedded hub {self.path}: {exc}") from exc
        return results

    def _upsert(self, conn: sqlite3.Connection, site: str, items: Sequence[PushItem], now: int) -> list[PushResult]:
        existing = self._existing(conn, site, items)
        forgotten = {r[0] for r in self._for_keys(conn, "SELECT source_id FROM tombstones", site, items)}
        results: list[PushResult] = []
        # (index of the result, statement, parameters) for every row to write
        writes: list[tuple[int, str, tuple[Any, ...]]] = []
        # We hold the write lock (BEGIN IMMEDIATE), so ids can be assigned here and rows written in bulk.
        next_id: int = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM episodes").fetchone()[0]
        seq = _change_seq(conn)
        for item in items:
            found = existing.get(item.source_id)
            ts, created = item.fields.get("ts"), item.fields.get("createdAt")
            if item.source_id in forgotten:
                results.append(PushResult(item.source_id, Outcome.REJECTED, reason="forgotten"))
            elif found is None:
                row: tuple[Any, ...] = (
                    next_id,
                    site,
                    item.source_id,
                    item.identity_hash,
                    item.content_hash,
                    item.body.decode(),
                    ts,
                    created,
                    now,
                    now,
                    seq := seq + 1,
                )
                writes.append((len(results), _INSERT, row))
                existing[item.source_id] = (next_id, item.identity_hash, item.content_hash, now)
                results.append(PushResult(item.source_id, Outcome.INSERTED, str(next_id), now))
                next_id += 1
            elif found[1] != item.identity_hash:
                reason = "the key holds another episode"
                results.append(PushResult(item.source_id, Outcome.CONFLICT, str(found[0]), found[3], reason))
            elif found[2] == item.content_hash:
                results.append(PushResult(item.source_id, Outcome.UNCHANGED, str(found[0]), found[3]))
            else:
                row = (item.content_hash, item.body.decode(), ts, created, now, seq := seq + 1, found[0])
                writes.append((len(results), _UPDATE, row))
                existing[item.source_id] = (found[0], found[1], item.content_hash, found[3])
                results.append(PushResult(item.source_id, Outcome.UPDATED, str(found[0]), found[3]))
        self._write(conn, writes, results)
        _set_change_seq(conn, seq)
        return results

    @staticmethod
    def _for_keys(
        conn: sqlite3.Connection, select: str, site: str, items: Sequence[PushItem]
    ) -> Iterator[tuple[Any, ...]]:
        """Rows of ``select`` (a table keyed by source_site, source_id) for this batch's keys only,
        500 keys a query: the cost of a push never grows with the size of the table."""
        keys = list({item.source_id for item in items})
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            yield from conn.execute(f"{select} WHERE source_site = ? AND source_id IN ({marks})", (site, *chunk))

    @classmethod
    def _existing(
        cls, conn: sqlite3.Connection, site: str, items: Sequence[PushItem]
    ) -> dict[str, tuple[int, str, str, int]]:
        """(row id, identity, content hash, syncedAt) for the keys already in the hub."""
        select = "SELECT source_id, id, identity_hash, content_hash, synced_at FROM episodes"
        return {row[0]: (row[1], row[2], row[3], row[4]) for row in cls._for_keys(conn, select, site, items)}

    @staticmethod
    def _write(
        conn: sqlite3.Connection, writes: list[tuple[int, str, tuple[Any, ...]]], results: list[PushResult]
    ) -> None:
        """All rows in bulk; if SQLite refuses one (too big), row by row, and only that one is REJECTED."""
        conn.execute("SAVEPOINT rows")
        try:
            for statement in (_INSERT, _UPDATE):
                conn.executemany(statement, [params for _, s, params in writes if s == statement])
        except sqlite3.Error as exc:
            conn.execute("ROLLBACK TO rows")
            conn.execute("RELEASE rows")
            if not _refused_row(exc):
                raise
        else:
            conn.execute("RELEASE rows")
            return
        for index, statement, params in writes:
            try:
                conn.execute(statement, params)
            except sqlite3.Error as exc:
                if not _refused_row(exc):
                    raise
                results[index] = PushResult(
                    results[index].source_id, Outcome.REJECTED, reason=f"hub refused the row: {exc}"
                )

    def site_cursor(self, site: str) -> SiteCursor | None:
        with self._lock:
            try:
                row = self._conn.execute(
                    "SELECT last_synced_id, last_synced_at, total_synced FROM sync_cursors WHERE site = ?", (site,)
                ).fetchone()
            except sqlite3.Error as exc:
                raise BackboneUnavailable(f"embedded hub {self.path}: {exc}") from exc
        return None if row is None else SiteCursor(site, row[0], row[1], row[2])

    def episodes(self, site: str | None = None) -> Iterator[dict[str, Any]]:
        """Every episode in the hub (or one site's), oldest first, as ``export`` prints them."""
        last = 0
        while True:
            with self._lock:
                try:
                    rows = self._conn.execute(
                        "SELECT id, source_site, source_id, body, content_hash, synced_at FROM episodes"
                        " WHERE id > ? AND (? IS NULL OR source_site = ?) ORDER BY id LIMIT 1000",
                        (last, site, site),
                    ).fetchall()
                except sqlite3.Error as exc:
                    raise BackboneUnavailable(f"embedded hub {self.path}: {exc}") from exc
            if not rows:
                return
            for row_id, source_site, source_id, body, content_hash, synced_at in rows:
                yield _exported(source_site, source_id, body, content_hash, synced_at)
                last = row_id

    def ping(self) -> None:
        with self._lock:
            try:
                self._conn.execute("SELECT count(*) FROM sync_cursors").fetchone()
            except sqlite3.Error as exc:
                raise BackboneUnavailable(f"embedded hub {self.path}: {exc}") from exc

    # -- registry and coordination --------------------------------------------------------------
    def _run(self, fn: Any) -> Any:
        """Run ``fn(conn)`` in one write transaction, as one hub operation."""
        with self._lock:
            try:
                with write_tx(self._conn) as conn:
                    return fn(conn)
            except sqlite3.Error as exc:
                raise BackboneUnavailable(f"embedded hub {self.path}: {exc}") from exc

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise BackboneUnavailable(f"embedded hub {self.path}: {exc}") from exc

    def heartbeat(self, site: str, agent_name: str, platform: str) -> None:
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO agents VALUES (?, ?, ?, 'online', ?) ON CONFLICT (site, agent_name) DO UPDATE SET"
                " platform = excluded.platform, status = 'online', last_heartbeat = excluded.last_heartbeat",
                (site, agent_name, platform, _now_ms()),
            )
        )

    def agents(self, site: str) -> list[AgentState]:
        rows = self._read(
            "SELECT agent_name, platform, status, last_heartbeat FROM agents WHERE site = ? ORDER BY agent_name",
            (site,),
        )
        return [AgentState(*row) for row in rows]

    def mark_stale(self, now_ms: int | None = None) -> int:
        """Online agents silent for STALE_AFTER_MS go offline (Convex's mark-stale-agents cron)."""
        cutoff = (_now_ms() if now_ms is None else now_ms) - STALE_AFTER_MS
        cursor = self._run(
            lambda conn: conn.execute(
                "UPDATE agents SET status = 'offline' WHERE status = 'online' AND last_heartbeat < ?", (cutoff,)
            )
        )
        return int(cursor.rowcount)

    def claim_slot(self, site: str, job: str, slot: str) -> bool:
        def claim(conn: sqlite3.Connection) -> bool:
            conn.execute("INSERT OR IGNORE INTO job_claims VALUES (?, ?, ?, ?)", (job, slot, site, _now_ms()))
            (claimant,) = conn.execute(
                "SELECT claimant FROM job_claims WHERE job = ? AND slot = ?", (job, slot)
            ).fetchone()
            return bool(claimant == site)

        return bool(self._run(claim))

    def create_approval(
        self,
        site: str,
        *,
        agent_name: str,
        action_type: str,
        priority: str,
        reviewers: Sequence[str],
        expires_at: int,
    ) -> str:
        if priority not in APPROVAL_PRIORITIES:
            raise BackboneRejected(f"priority must be one of {', '.join(APPROVAL_PRIORITIES)}, not {priority!r}")
        cursor = self._run(
            lambda conn: conn.execute(
                "INSERT INTO approvals (site, agent_name, action_type, status, priority, reviewers, expires_at,"
                " created_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)",
                (site, agent_name, action_type, priority, json.dumps(list(reviewers)), expires_at, _now_ms()),
            )
        )
        return str(cursor.lastrowid)

    def resolve_approval(self, site: str, approval_id: str, status: str, by: str) -> str:
        if status not in ("approved", "rejected"):
            raise BackboneRejected(f"an approval is resolved as approved or rejected, not {status!r}")

        def resolve(conn: sqlite3.Connection) -> str:
            now = _now_ms()
            row = conn.execute(
                "SELECT status, expires_at FROM approvals WHERE id = ? AND site = ?",
                (int(approval_id) if approval_id.isdigit() else -1, site),
            ).fetchone()
            if row is None:
                raise BackboneNotFound(f"no approval {approval_id!r} for site {site!r}")
            if row[0] != "pending" or now >= row[1]:
                raise BackboneConflict(f"approval {approval_id} is {row[0] if row[0] != 'pending' else 'expired'}")
            conn.execute(
                "UPDATE approvals SET status = ?, resolved_at = ?, resolved_by = ? WHERE id = ?",
                (status, now, by, int(approval_id)),
            )
            return status

        return str(self._run(resolve))

    def approvals(self, site: str, status: str | None = None) -> list[Approval]:
        rows = self._read(
            "SELECT id, agent_name, action_type, status, priority, reviewers, expires_at, resolved_by FROM approvals"
            " WHERE site = ? AND (? IS NULL OR status = ?) ORDER BY id",
            (site, status, status),
        )
        return [Approval(str(r[0]), r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6], r[7]) for r in rows]

    def expire_approvals(self, now_ms: int | None = None) -> int:
        """Pending approvals past their deadline expire (Convex's expire-pending-approvals cron)."""
        now = _now_ms() if now_ms is None else now_ms
        cursor = self._run(
            lambda conn: conn.execute(
                "UPDATE approvals SET status = 'expired', resolved_at = ? WHERE status = 'pending' AND expires_at <= ?",
                (now, now),
            )
        )
        return int(cursor.rowcount)

    def forget(self, site: str, source_id: str) -> bool:
        def forget(conn: sqlite3.Connection) -> bool:
            deleted = conn.execute(
                "DELETE FROM episodes WHERE source_site = ? AND source_id = ?", (site, source_id)
            ).rowcount
            if not conn.execute(
                "SELECT 1 FROM tombstones WHERE source_site = ? AND source_id = ?", (site, source_id)
            ).fetchone():
                seq = _change_seq(conn) + 1
                conn.execute(
                    "INSERT INTO tombstones (source_site, source_id, deleted_at, change_seq) VALUES (?, ?, ?, ?)",
                    (site, source_id, _now_ms(), seq),
                )
                _set_change_seq(conn, seq)
            return bool(deleted)

        return bool(self._run(forget))

    # -- one source per site --------------------------------------------------------------------
    def source_of(self, site: str) -> SourceRecord | None:
        rows = self._read(
            "SELECT instance, machine, host, agentdb_path, claimed_at, last_seen_at FROM site_sources WHERE site = ?",
            (site,),
        )
        return SourceRecord(*rows[0]) if rows else None

    def set_source(self, site: str, record: SourceRecord, *, expected: str | None) -> bool:
        def compare_and_set(conn: sqlite3.Connection) -> bool:
            # Read and write under BEGIN IMMEDIATE (the file's write lock, not only this object's):
            # two daemons claiming one site name from this file cannot both see the old instance.
            row = conn.execute("SELECT instance, claimed_at FROM site_sources WHERE site = ?", (site,)).fetchone()
            current = None if row is None else row[0]
            if current not in (expected, record.instance):
                return False
            now = _now_ms()
            claimed_at = row[1] if row is not None and current == record.instance else now
            conn.execute(
                "INSERT OR REPLACE INTO site_sources VALUES (?, ?, ?, ?, ?, ?, ?)",
                (site, record.instance, record.machine, record.host, record.agentdb_path, claimed_at, now),
            )
            return True

        return bool(self._run(compare_and_set))

    # -- the warm layer's feed ------------------------------------------------------------------
    def changes(self, site: str, after: int, limit: int) -> list[Change]:
        rows = self._read(
            """SELECT change_seq, source_site, source_id, body, content_hash, synced_at, point_id FROM (
                 SELECT change_seq, source_site, source_id, body, content_hash, synced_at, point_id
                 FROM episodes WHERE change_seq > ? ORDER BY change_seq LIMIT ?)
               UNION ALL
               SELECT * FROM (
                 SELECT change_seq, source_site, source_id, NULL, NULL, NULL, NULL
                 FROM tombstones WHERE change_seq > ? ORDER BY change_seq LIMIT ?)
               ORDER BY change_seq LIMIT ?""",
            (after, limit, after, limit, limit),
        )
        changes: list[Change] = []
        for seq, source_site, source_id, body, content_hash, synced_at, point in rows:
            episode = None if body is None else _exported(source_site, source_id, body, content_hash, synced_at)
            changes.append(Change(seq, source_site, source_id, episode, point))
        return changes

    def feed_end(self, site: str) -> int:
        rows = self._read("SELECT value FROM counters WHERE name = 'change_seq'", ())
        return int(rows[0][0]) if rows else 0

    def record_point_ids(self, site: str, records: Sequence[PointRecord]) -> int:
        def record(conn: sqlite3.Connection) -> int:
            cursor = conn.executemany(
                "UPDATE episodes SET point_id = ? WHERE source_site = ? AND source_id = ? AND content_hash = ?",
                [(r.point_id, r.site, r.source_id, r.content_hash) for r in records],
            )
            return int(cursor.rowcount)

        return int(self._run(record)) if records else 0

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _change_seq(conn: sqlite3.Connection) -> int:
    row = conn.execute("SELECT value FROM counters WHERE name = 'change_seq'").fetchone()
    return 0 if row is None else int(row[0])


def _set_change_seq(conn: sqlite3.Connection, seq: int) -> None:
    conn.execute("INSERT OR REPLACE INTO counters VALUES ('change_seq', ?)", (seq,))


def _exported(source_site: str, source_id: str, body: str, content_hash: str, synced_at: int) -> dict[str, Any]:
    """A hub row as ``export`` prints it: the documented fields, in order."""
    fields = json.loads(body)
    record = {
        "sourceSite": source_site,
        "sourceId": source_id,
        **fields,
        "contentHash": content_hash,
        "syncedAt": synced_at,
    }
    return {name: record.get(name) for name in EXPORT_FIELDS}
