"""The hub as ``Uses``: the fleet's use of its memories (schema version 13) and their pins.

``uses`` keeps one row per (event, memory), so that an event the daemon delivers twice (a fold
that died after the hub committed) counts once; ``use_totals`` adds them up per memory in the same
transaction, so that reading a memory's salience is one row, not a scan of its history. A forget
removes both (``forget_uses``, called inside the forget's own transaction).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from sync.backbone.base import MemoryKey, UseEvent, UseTotals, checked_uses
from sync.backbone.hub.connection import HubConnection

_TOTALS = "source_site, source_id, access_count, last_accessed, by_kind, pinned, pinned_by, pinned_at"


def _holds(conn: sqlite3.Connection, site: str, source_id: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM episodes WHERE source_site = ? AND source_id = ?", (site, source_id)).fetchone()
        is not None
    )


def _totals(row: Any) -> UseTotals:
    site, source_id, count, last, by_kind, pinned, pinned_by, pinned_at = row
    return UseTotals(site, source_id, int(count), last, json.loads(by_kind), bool(pinned), pinned_by, pinned_at)


def _add(conn: sqlite3.Connection, key: MemoryKey, kind: str, used_at: int) -> None:
    row = conn.execute(
        "SELECT by_kind, last_accessed FROM use_totals WHERE source_site = ? AND source_id = ?", key
    ).fetchone()
    by_kind: dict[str, int] = {} if row is None else json.loads(row[0])
    by_kind[kind] = by_kind.get(kind, 0) + 1
    last = used_at if row is None or row[1] is None else max(int(row[1]), used_at)
    conn.execute(
        "INSERT INTO use_totals (source_site, source_id, access_count, last_accessed, by_kind) VALUES (?, ?, 1, ?, ?)"
        " ON CONFLICT (source_site, source_id) DO UPDATE SET access_count = access_count + 1,"
        " last_accessed = excluded.last_accessed, by_kind = excluded.by_kind",
        (*key, last, json.dumps(by_kind, sort_keys=True)),
    )


def forget_uses(conn: sqlite3.Connection, site: str, source_id: str) -> None:
    """A forgotten memory's uses and pin go with it (inside the forget's transaction)."""
    conn.execute("DELETE FROM uses WHERE source_site = ? AND source_id = ?", (site, source_id))
    conn.execute("DELETE FROM use_totals WHERE source_site = ? AND source_id = ?", (site, source_id))


class HubUses(HubConnection):
    def record_uses(self, events: Sequence[UseEvent]) -> int:
        checked_uses(events)

        def record(conn: sqlite3.Connection) -> int:
            counted = 0
            for event in events:
                for key in dict.fromkeys(event.keys):  # a memory twice in one event counts once
                    if not _holds(conn, *key):
                        continue  # unknown here, or forgotten: nothing to count it against
                    inserted = conn.execute(
                        "INSERT OR IGNORE INTO uses VALUES (?, ?, ?, ?, ?, ?, ?)",
                        (event.use_id, *key, event.kind, self.site, event.agent, event.used_at),
                    ).rowcount
                    if inserted:
                        _add(conn, key, event.kind, event.used_at)
                        counted += 1
            return counted

        return self._run(record)

    def use_totals(self, keys: Sequence[MemoryKey] | None = None) -> dict[MemoryKey, UseTotals]:
        if keys is None:
            rows = self._read(f"SELECT {_TOTALS} FROM use_totals", ())
        else:
            rows = []
            for key in dict.fromkeys(keys):
                rows += self._read(f"SELECT {_TOTALS} FROM use_totals WHERE source_site = ? AND source_id = ?", key)
        return {(t.site, t.source_id): t for t in map(_totals, rows)}

    def pin(self, site: str, source_id: str, *, pinned: bool, by: str) -> bool:
        def pin(conn: sqlite3.Connection) -> bool:
            if not _holds(conn, site, source_id):
                return False
            at = self.clock() if pinned else None
            conn.execute(
                "INSERT INTO use_totals (source_site, source_id, pinned, pinned_by, pinned_at) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (source_site, source_id) DO UPDATE SET pinned = excluded.pinned,"
                " pinned_by = excluded.pinned_by, pinned_at = excluded.pinned_at",
                (site, source_id, int(pinned), by if pinned else None, at),
            )
            conn.execute(  # unpinned and never used: nothing left to say of it
                "DELETE FROM use_totals WHERE source_site = ? AND source_id = ? AND pinned = 0 AND access_count = 0",
                (site, source_id),
            )
            return True

        return self._run(pin)


__all__ = ["HubUses", "forget_uses"]
