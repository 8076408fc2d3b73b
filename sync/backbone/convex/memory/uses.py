"""Convex as ``Uses`` (``uses.ts``): the fleet's use of its memories, and their pins."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from sync.backbone.base import MemoryKey, UseEvent, UseTotals, checked_uses
from sync.backbone.convex.connection import ConvexConnection
from sync.backbone.convex.wire import int_or_none

EVENTS_A_CALL: Final = 100  # uses.ts MAX_EVENTS
KEYS_AN_EVENT: Final = 50  # uses.ts MAX_KEYS
KEYS_A_QUERY: Final = 200  # uses.ts totals' bound
# Memories a call counts at most: each reads about three documents (the episode, the use, the
# totals) and writes two, far inside a mutation's limits (16,384 documents read).
KEYS_A_CALL: Final = 500
PAGE: Final = 500


def _key(key: MemoryKey) -> dict[str, str]:
    return {"sourceSite": key[0], "sourceId": key[1]}


def _event(event: UseEvent, keys: Sequence[MemoryKey]) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "useId": event.use_id,
        "kind": event.kind,
        "usedAt": event.used_at,
        "keys": [_key(k) for k in keys],
    }
    if event.agent is not None:
        wire["agent"] = event.agent
    return wire


def _totals(value: Mapping[str, Any]) -> UseTotals:
    return UseTotals(
        str(value["sourceSite"]),
        str(value["sourceId"]),
        int(value["accessCount"]),
        int_or_none(value.get("lastAccessed")),
        {str(k): int(v) for k, v in dict(value.get("byKind") or {}).items()},
        bool(value.get("pinned")),
        value.get("pinnedBy"),
        int_or_none(value.get("pinnedAt")),
    )


class ConvexUses(ConvexConnection):
    def record_uses(self, events: Sequence[UseEvent]) -> int:
        checked_uses(events)
        # An event naming more memories than a call takes goes in parts under its one id: the
        # deployment counts each (event, memory) once whichever part it came in.
        wire = [
            _event(e, e.keys[i : i + KEYS_AN_EVENT])
            for e in events
            for i in range(0, max(1, len(e.keys)), KEYS_AN_EVENT)
        ]
        counted = 0
        part: list[dict[str, Any]] = []
        keys = 0
        for event in wire:
            if part and (len(part) == EVENTS_A_CALL or keys + len(event["keys"]) > KEYS_A_CALL):
                counted += int(self.call("mutation", "uses:record", {"events": part})["counted"])
                part, keys = [], 0
            part.append(event)
            keys += len(event["keys"])
        if part:
            counted += int(self.call("mutation", "uses:record", {"events": part})["counted"])
        return counted

    def use_totals(self, keys: Sequence[MemoryKey] | None = None) -> dict[MemoryKey, UseTotals]:
        found: list[UseTotals] = []
        if keys is None:
            after: str | None = None
            while True:
                page = self.call("query", "uses:totalsPage", {"after": after, "limit": PAGE})
                found += map(_totals, page["totals"])
                after = page.get("next")
                if after is None:
                    break
        else:
            wanted = list(dict.fromkeys(keys))
            for start in range(0, len(wanted), KEYS_A_QUERY):
                part = [_key(k) for k in wanted[start : start + KEYS_A_QUERY]]
                found += map(_totals, self.call("query", "uses:totals", {"keys": part}))
        return {(t.site, t.source_id): t for t in found}

    def pin(self, site: str, source_id: str, *, pinned: bool, by: str) -> bool:
        args = {"sourceSite": site, "sourceId": source_id, "pinned": pinned, "by": by}
        return bool(self.call("mutation", "uses:pin", args))


__all__ = ["ConvexUses"]
