"""Convex as an ``EpisodeSink``: a site's pushes (``episodes:bulkSyncEpisodes``, with its cursor
row), the export (a site reads only its own), and which source feeds the site (``sources.ts``)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sync.backbone.base import Outcome, PushItem, PushResult, SiteCursor, SourceRecord
from sync.backbone.convex.connection import ConvexConnection
from sync.backbone.convex.wire import exported, int_or_none
from sync.episode import canonical_json

# Convex's limits: 16 MiB of arguments, 1 MiB a document, 8192 array elements; an upsert costs an
# index read a row, so a few hundred rows a call keeps a mutation well inside its budget.
MAX_BATCH_ROWS = 200
MAX_BATCH_BYTES = 8 * 1024 * 1024
MAX_EPISODE_BYTES = 900 * 1024  # a document is at most 1 MiB, with the backbone's own fields around


class ConvexEpisodes(ConvexConnection):
    max_batch_rows = MAX_BATCH_ROWS
    max_batch_bytes: int | None = MAX_BATCH_BYTES
    max_episode_bytes: int | None = MAX_EPISODE_BYTES

    def push(self, items: Sequence[PushItem], cursor: int) -> list[PushResult]:
        value = self.call(
            "mutation",
            "episodes:bulkSyncEpisodes",
            {"cursor": cursor, "episodes": [_wire_episode(i) for i in items]},
        )

        return [
            PushResult(
                r["sourceId"], Outcome(r["outcome"]), r.get("remoteId"), int_or_none(r.get("syncedAt")), r.get("reason")
            )
            for r in value["results"]
        ]

    def site_cursor(self) -> SiteCursor | None:
        value = self.call("query", "episodes:getCursor")
        if value is None:
            return None
        return SiteCursor(self.site, int(value["lastSyncedId"]), int(value["lastSyncedAt"]), int(value["totalSynced"]))

    def episodes(self, site: str | None = None, since_ms: int | None = None) -> Iterator[dict[str, Any]]:
        """This site's episodes (a site reads only its own), oldest first; ``since_ms`` is applied
        here (the deployment pages them in the order they were synced, not by ts)."""
        if site not in (None, self.site):
            return
        after: str | None = None
        while True:
            page = self.call("query", "episodes:listEpisodes", {"after": after, "limit": 500})
            for episode in page["episodes"]:
                if since_ms is None or (episode.get("ts") is not None and int(episode["ts"]) >= since_ms):
                    yield exported(episode)
            after = page.get("next")
            if after is None:
                return

    # -- one source per site --------------------------------------------------------------------
    def source_of(self) -> SourceRecord | None:
        value = self.call("query", "sources:getSource")
        return None if value is None else _source(value)

    def set_source(self, record: SourceRecord, *, expected: str | None) -> bool:
        value = self.call(
            "mutation",
            "sources:setSource",
            {
                "expected": expected,
                "instance": record.instance,
                "machine": record.machine,
                "host": record.host,
                "agentdbPath": record.agentdb_path,
            },
        )
        return bool(value["claimed"])


def _wire_episode(item: PushItem) -> dict[str, Any]:
    """Metadata travels as JSON text: Convex refuses object keys that start with '$' or are not
    ASCII, and agents' metadata may have any keys (and integers beyond 2^53)."""
    fields = {k: v for k, v in item.fields.items() if k != "metadata"}
    fields["metadataJson"] = canonical_json(item.fields.get("metadata") or {}).decode()
    return {
        "sourceId": item.source_id,
        "identityHash": item.identity_hash,
        "contentHash": item.content_hash,
        "fields": fields,
    }


def _source(value: Mapping[str, Any]) -> SourceRecord:
    return SourceRecord(
        value["instance"],
        value["machine"],
        value["host"],
        value["agentdbPath"],
        int(value["claimedAt"]),
        int(value["lastSeenAt"]),
    )
