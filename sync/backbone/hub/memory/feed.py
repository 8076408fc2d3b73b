"""The hub as a ``ChangeFeed``: every site's inserts, edits, archivings, restores and forgets in seq
order, for the warm layer, and the point ids it records back.

The seq is the ``change_seq`` column of episodes and tombstones, handed out from the counter in
``schema`` inside each writing transaction (the hub's one write lock makes commit order seq order).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from sync.backbone.base import Change, PointRecord
from sync.backbone.hub.connection import HubConnection
from sync.backbone.hub.memory.episodes import exported, with_approval, with_dream


class HubFeed(HubConnection):
    def changes(self, after: int, limit: int) -> list[Change]:
        # Each side is limited before the merge, so one page reads at most 2 * limit rows.
        rows = self._read(
            """SELECT change_seq, source_site, source_id, body, content_hash, synced_at, point_id, archived,
                      approval_status, dream_state FROM (
                 SELECT change_seq, source_site, source_id, body, content_hash, synced_at, point_id, archived,
                        approval_status, dream_state
                 FROM episodes WHERE change_seq > ? ORDER BY change_seq LIMIT ?)
               UNION ALL
               SELECT * FROM (
                 SELECT change_seq, source_site, source_id, NULL, NULL, NULL, NULL, NULL, NULL, NULL
                 FROM tombstones WHERE change_seq > ? ORDER BY change_seq LIMIT ?)
               ORDER BY change_seq LIMIT ?""",
            (after, limit, after, limit, limit),
        )
        changes: list[Change] = []
        for seq, source_site, source_id, body, content_hash, synced_at, point, archived, approval, dream in rows:
            # A tombstone (no body) or an archived episode (its text is in the archive): no episode.
            episode = (
                None
                if body is None or archived
                else with_dream(
                    with_approval(exported(source_site, source_id, body, content_hash, synced_at), approval), dream
                )
            )
            changes.append(Change(seq, source_site, source_id, episode, point, archived=bool(archived)))
        return changes

    def feed_end(self) -> int:
        rows = self._read("SELECT value FROM counters WHERE name = 'change_seq'", ())
        return int(rows[0][0]) if rows else 0

    def record_point_ids(self, records: Sequence[PointRecord]) -> int:
        if not records:
            return 0

        def record(conn: sqlite3.Connection) -> int:
            # Any site's episodes: the indexer records for every site it indexes.
            cursor = conn.executemany(
                "UPDATE episodes SET point_id = ? WHERE source_site = ? AND source_id = ? AND content_hash = ?",
                [(r.point_id, r.site, r.source_id, r.content_hash) for r in records],
            )
            return int(cursor.rowcount)

        return self._run(record)
