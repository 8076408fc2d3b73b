"""Convex as a ``ChangeFeed``: every site's changes in seq order (``episodes:changes``), how far the
feed goes, and the point ids the warm layer records."""

from __future__ import annotations

from collections.abc import Sequence

from sync.backbone.base import Change, PointRecord
from sync.backbone.convex.connection import MAX_PAGE, ConvexConnection
from sync.backbone.convex.wire import exported


class ConvexFeed(ConvexConnection):
    def changes(self, after: int, limit: int) -> list[Change]:
        """Every site's changes after ``after``. At most 500 a call, and fewer when episodes are large
        (a Convex query reads at most 16 MiB): only an empty list means the caller has caught up."""
        rows = self.call("query", "episodes:changes", {"after": after, "limit": min(limit, MAX_PAGE)})
        return [
            Change(
                int(r["seq"]),
                r["sourceSite"],
                r["sourceId"],
                None if r["episode"] is None else exported(r["episode"]),
                r.get("qdrantPointId"),
                bool(r.get("archived", False)),
                r.get("seedPointId"),
            )
            for r in rows
        ]

    def feed_end(self) -> int:
        return int(self.call("query", "episodes:feedEnd", {}))

    def record_point_ids(self, records: Sequence[PointRecord]) -> int:
        recorded = 0
        for start in range(0, len(records), MAX_PAGE):
            items = [_wire_point(r) for r in records[start : start + MAX_PAGE]]
            recorded += int(self.call("mutation", "episodes:recordPoints", {"items": items})["recorded"])
        return recorded


def _wire_point(record: PointRecord) -> dict[str, str]:
    return {
        "sourceSite": record.site,
        "sourceId": record.source_id,
        "qdrantPointId": record.point_id,
        "contentHash": record.content_hash,
    }
