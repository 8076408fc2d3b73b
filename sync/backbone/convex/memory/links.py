"""Convex as ``Links`` (``links.ts``): the deployment stores the explicit links (written by
``links:add`` and by a push's metadata, dropped by a forget in its own mutation) and reads what
derived links are decided from (``links:neighbourhood``); ``sync.policy.links`` decides, here, as
it does for the hub, so both backbones answer alike."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from sync.backbone.convex.connection import ConvexConnection
from sync.errors import BackboneRejected
from sync.policy.links import EXPLICIT, EpisodeRef, Link, StoredLink, candidate, related

MAX_LIMIT: Final = 200  # as the hub's (sync/backbone/hub/memory/links.py)
MAX_ADD: Final = 200  # links.ts's MAX_ADD


def _stored(row: Mapping[str, Any]) -> StoredLink:
    source = EpisodeRef(str(row["fromSite"]), str(row["fromId"]))
    return StoredLink(source, EpisodeRef(str(row["toSite"]), str(row["toId"])), str(row["kind"]))


class ConvexLinks(ConvexConnection):
    def related(self, site: str, source_id: str, limit: int = 20) -> list[Link]:
        if not 1 <= limit <= MAX_LIMIT:
            raise BackboneRejected(f"limit must be from 1 to {MAX_LIMIT}, not {limit}")
        found = self.call("query", "links:neighbourhood", {"sourceSite": site, "sourceId": source_id})
        others = [candidate(c) for c in found["candidates"]]
        return related(candidate(found["subject"]), others, [_stored(r) for r in found["links"]], limit)

    def add_links(self, links: Sequence[StoredLink]) -> int:
        if len(links) > MAX_ADD:
            raise BackboneRejected(f"{len(links)} links in one call; at most {MAX_ADD}")
        for link in links:
            if link.kind not in EXPLICIT:
                raise BackboneRejected(f"a stored link is one of {', '.join(sorted(EXPLICIT))}, not {link.kind!r}")
        rows = [
            {
                "fromSite": link.source.site,
                "fromId": link.source.source_id,
                "toSite": link.target.site,
                "toId": link.target.source_id,
                "kind": link.kind,
            }
            for link in links
        ]
        return int(self.call("mutation", "links:add", {"links": rows})["added"]) if rows else 0
