"""The hub as an ``EpisodeSink``: a site's pushes (with its cursor row, in one transaction), the
export, and which source feeds the site.

Per-row outcomes are the same as the Convex functions'; see ``sync.backbone.base``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import orjson

from sync.backbone.base import Outcome, PushItem, PushResult, SiteCursor, SourceRecord
from sync.backbone.dreams import DREAM_FIELD
from sync.backbone.hub.connection import HubConnection
from sync.backbone.hub.memory.links import store_pushed_links
from sync.backbone.hub.schema import change_seq, set_change_seq
from sync.episode import EXPORT_FIELDS
from sync.sqlite_db import primary_code

# Far below SQLite's own 1 GB limit; chosen so one site cannot make a batch hog the write lock.
MAX_BATCH_ROWS = 500

_INSERT = (
    "INSERT INTO episodes (id, source_site, source_id, identity_hash, content_hash, body, ts, created_at,"
    " synced_at, updated_at, change_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# An edit brings an archived episode back hot, with its new body; archive_week still names the file
# that holds its old copy (replaced when the next cleanup run archives it, dropped by a forget).
_UPDATE = (
    "UPDATE episodes SET content_hash = ?, body = ?, ts = ?, created_at = ?, updated_at = ?, change_seq = ?,"
    " point_id = NULL, archived = 0 WHERE id = ?"
)


def _refused_row(exc: sqlite3.Error) -> bool:
    """SQLite refused a value (too big, wrong type), not the database as a whole."""
    return isinstance(exc, sqlite3.DataError) or primary_code(exc) == sqlite3.SQLITE_TOOBIG


def exported(
    source_site: str, source_id: str, body: str, content_hash: str, synced_at: int, archived: bool = False
) -> dict[str, Any]:
    """A hub row as ``export`` prints it: the documented fields, in order, and ``archived: true``
    after them for an archived episode (only then, so that every other line keeps exactly the
    documented keys)."""
    record = orjson.loads(body)  # the stored fields, then the columns of their own
    record["sourceSite"], record["sourceId"] = source_site, source_id
    record["contentHash"], record["syncedAt"] = content_hash, synced_at
    out = {name: record.get(name) for name in EXPORT_FIELDS}
    if archived:
        out["archived"] = True
    return out


def with_approval(record: dict[str, Any], approval_status: str | None) -> dict[str, Any]:
    """``export``'s record with the decision on an approval about the episode, if one was asked
    (after the documented fields; not part of its content, so neither the feed nor an archive
    file carries it)."""
    if approval_status is None:
        return record
    out = {k: v for k, v in record.items() if k != "archived"}
    out["approvalStatus"] = approval_status
    if record.get("archived") is True:
        out["archived"] = True
    return out


def with_dream(record: dict[str, Any], dream_state: str | None) -> dict[str, Any]:
    """``export``'s record with the mark of the standing dream step that hides it, if one does
    (``dream``: role, by whom, which step; after the documented fields and ``approvalStatus``, not
    part of its content)."""
    if dream_state is None:
        return record
    out = {k: v for k, v in record.items() if k != "archived"}
    out[DREAM_FIELD] = orjson.loads(dream_state)
    if record.get("archived") is True:
        out["archived"] = True
    return out


class HubEpisodes(HubConnection):
    max_batch_rows = MAX_BATCH_ROWS
    max_batch_bytes: int | None = 64 * 1024 * 1024
    max_episode_bytes: int | None = None

    def push(self, items: Sequence[PushItem], cursor: int) -> list[PushResult]:
        now = self.clock()

        def rows_and_cursor(conn: sqlite3.Connection) -> list[PushResult]:
            results = self._upsert(conn, items, now)
            inserted = sum(r.outcome is Outcome.INSERTED for r in results)
            conn.execute(
                """INSERT INTO sync_cursors (site, last_synced_id, last_synced_at, total_synced)
                   VALUES (?, ?, ?, ?)
                   ON CONFLICT (site) DO UPDATE SET
                     last_synced_id = max(last_synced_id, excluded.last_synced_id),
                     last_synced_at = excluded.last_synced_at,
                     total_synced = total_synced + ?""",
                (self.site, cursor, now, inserted, inserted),
            )
            return results

        return self._run(rows_and_cursor)

    def _upsert(self, conn: sqlite3.Connection, items: Sequence[PushItem], now: int) -> list[PushResult]:
        existing = self._existing(conn, items)
        forgotten = {r[0] for r in self._for_keys(conn, "SELECT source_id FROM tombstones", items)}
        results: list[PushResult] = []
        # (index of the result, statement, parameters) for every row to write
        writes: list[tuple[int, str, tuple[Any, ...]]] = []
        # We hold the write lock (BEGIN IMMEDIATE), so ids can be assigned here and rows written in bulk.
        next_id: int = conn.execute("SELECT coalesce(max(id), 0) + 1 FROM episodes").fetchone()[0]
        seq = change_seq(conn)
        for item in items:
            found = existing.get(item.source_id)
            ts, created = item.fields.get("ts"), item.fields.get("createdAt")
            if item.source_id in forgotten:
                results.append(PushResult(item.source_id, Outcome.REJECTED, reason="forgotten"))
            elif found is None:
                row: tuple[Any, ...] = (
                    next_id,
                    self.site,
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
        set_change_seq(conn, seq)
        written = {Outcome.INSERTED, Outcome.UPDATED}
        pushed = [
            (item.source_id, item.fields.get("metadata"))
            for item, result in zip(items, results, strict=True)
            if result.outcome in written
        ]
        store_pushed_links(conn, self.site, pushed, now)
        return results

    def _for_keys(self, conn: sqlite3.Connection, select: str, items: Sequence[PushItem]) -> Iterator[tuple[Any, ...]]:
        """Rows of ``select`` (a table keyed by source_site, source_id) for this batch's keys only,
        500 keys a query: the cost of a push never grows with the size of the table."""
        keys = list({item.source_id for item in items})
        for start in range(0, len(keys), 500):
            chunk = keys[start : start + 500]
            marks = ",".join("?" * len(chunk))
            yield from conn.execute(f"{select} WHERE source_site = ? AND source_id IN ({marks})", (self.site, *chunk))

    def _existing(self, conn: sqlite3.Connection, items: Sequence[PushItem]) -> dict[str, tuple[int, str, str, int]]:
        """(row id, identity, content hash, syncedAt) for the keys already in the hub."""
        select = "SELECT source_id, id, identity_hash, content_hash, synced_at FROM episodes"
        return {row[0]: (row[1], row[2], row[3], row[4]) for row in self._for_keys(conn, select, items)}

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

    def site_cursor(self) -> SiteCursor | None:
        rows = self._read(
            "SELECT last_synced_id, last_synced_at, total_synced FROM sync_cursors WHERE site = ?", (self.site,)
        )
        return SiteCursor(self.site, *rows[0]) if rows else None

    def episodes(self, site: str | None = None, since_ms: int | None = None) -> Iterator[dict[str, Any]]:
        """Every hot episode in the hub (or one site's, any site's), oldest first, as ``export``
        prints them (with ``approvalStatus`` when an approval is about one); the archived ones are
        the archive's (``archived_episodes``)."""
        last = 0
        while True:
            rows = self._read(
                "SELECT id, source_site, source_id, body, content_hash, synced_at, approval_status, dream_state"
                " FROM episodes"
                " WHERE id > ? AND (? IS NULL OR source_site = ?) AND archived = 0 AND (? IS NULL OR ts >= ?)"
                " ORDER BY id LIMIT 1000",
                (last, site, site, since_ms, since_ms),
            )
            if not rows:
                return
            for row_id, source_site, source_id, body, content_hash, synced_at, approval, dream in rows:
                record = exported(source_site, source_id, body, content_hash, synced_at)
                yield with_dream(with_approval(record, approval), dream)
                last = row_id

    # -- one source per site --------------------------------------------------------------------
    def source_of(self) -> SourceRecord | None:
        rows = self._read(
            "SELECT instance, machine, host, agentdb_path, claimed_at, last_seen_at FROM site_sources WHERE site = ?",
            (self.site,),
        )
        return SourceRecord(*rows[0]) if rows else None

    def set_source(self, record: SourceRecord, *, expected: str | None) -> bool:
        def compare_and_set(conn: sqlite3.Connection) -> bool:
            # Read and write under BEGIN IMMEDIATE (the file's write lock, not only this object's):
            # two daemons claiming one site name from this file cannot both see the old instance.
            row = conn.execute("SELECT instance, claimed_at FROM site_sources WHERE site = ?", (self.site,)).fetchone()
            current = None if row is None else row[0]
            if current not in (expected, record.instance):
                return False
            now = self.clock()
            claimed_at = row[1] if row is not None and current == record.instance else now
            conn.execute(
                "INSERT OR REPLACE INTO site_sources VALUES (?, ?, ?, ?, ?, ?, ?)",
                (self.site, record.instance, record.machine, record.host, record.agentdb_path, claimed_at, now),
            )
            return True

        return self._run(compare_and_set)
