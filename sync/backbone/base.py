"""The one seam between a site and the shared truth. The embedded hub implements it here; the
Convex backbone implements the same contract over HTTP.

Contract, for every implementation:
- ``push`` upserts by (sourceSite, sourceId), idempotently, and returns one result a row, in order.
  A key that already holds an episode with another identity is a CONFLICT and is left untouched:
  the backbone, not the site's sidecar, is the judge of what a key holds. ``syncedAt`` is set by
  the backbone when it first receives an episode and never changes after.
- The site's cursor row (lastSyncedId, lastSyncedAt, totalSynced) is advanced in the same
  transaction as the rows; lastSyncedId never goes backwards.
- Failures raise ``BackboneUnavailable`` (transient: retry the same call) or ``BackboneRejected``
  (this request will never succeed: the engine splits the batch to find the row). A row the
  backbone will not store comes back as REJECTED with a reason.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class PushItem:
    source_id: str
    local_id: int
    identity_hash: str
    content_hash: str
    fields: Mapping[str, Any]  # camelCase episode fields, without the four the backbone keys on
    body: bytes  # the same fields as canonical JSON (what content_hash covers)

    @property
    def size(self) -> int:
        return len(self.body)


class Outcome(StrEnum):
    INSERTED = "inserted"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    CONFLICT = "conflict"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class PushResult:
    source_id: str
    outcome: Outcome
    remote_id: str | None = None
    synced_at: int | None = None
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class SiteCursor:
    site: str
    last_synced_id: int
    last_synced_at: int  # ms since the epoch
    total_synced: int


class Backbone(Protocol):
    kind: str
    # Where it is, fit for logs and status: never contains a secret.
    description: str
    max_batch_rows: int
    max_batch_bytes: int | None
    max_episode_bytes: int | None

    def push(self, site: str, items: Sequence[PushItem], cursor: int) -> list[PushResult]: ...

    def site_cursor(self, site: str) -> SiteCursor | None: ...

    def episodes(self, site: str | None = None) -> Iterator[dict[str, Any]]: ...

    def ping(self) -> None: ...

    def close(self) -> None: ...
