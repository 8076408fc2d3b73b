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
  backbone will not store comes back as REJECTED with a reason (a forgotten key among them).
- Beside episodes it keeps the agent registry (heartbeats; offline after 3 minutes of silence),
  approvals (pending until approved, rejected or expired), one owner per (job, slot), and
  tombstones. On Convex, crons sweep stale agents and expired approvals; on the hub, whoever runs
  the periodic jobs calls ``mark_stale`` and ``expire_approvals``.
- A change feed for the warm layer: every insert, edit and forget gets a sequence number, strictly
  increasing across the whole backbone in commit order (assigned inside the writing transaction,
  so a reader that has seen seq N will never later see a new change numbered N or below).
  ``changes(after)`` lists them; an episode edited twice appears once, at its latest seq.
  Recording a point id is not a change.
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


@dataclass(frozen=True, slots=True)
class AgentState:
    agent_name: str
    platform: str
    status: str  # "online" | "offline"
    last_heartbeat: int  # ms


APPROVAL_PRIORITIES = ("low", "normal", "high", "critical")


@dataclass(frozen=True, slots=True)
class Approval:
    approval_id: str
    agent_name: str
    action_type: str
    status: str  # "pending" | "approved" | "rejected" | "expired"
    priority: str
    reviewers: tuple[str, ...]
    expires_at: int  # ms
    resolved_by: str | None = None


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of the change feed: an episode as it now is, or a key that was forgotten."""

    seq: int
    site: str
    source_id: str
    episode: Mapping[str, Any] | None  # the exported fields (EXPORT_FIELDS); None once forgotten
    point_id: str | None = None  # the qdrantPointId recorded for the current content, if any


@dataclass(frozen=True, slots=True)
class PointRecord:
    """A vector store point written for an episode's content: recorded only while that content is
    still the episode's (an edit since then leaves the episode waiting for a new vector)."""

    site: str
    source_id: str
    point_id: str
    content_hash: str


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """Which source feeds a site: one AgentDB file on one machine, told apart by an instance id its
    sidecar keeps. ``machine`` (a hash of host name and machine id) tells a reset sidecar on the
    same machine from a copy on a clone; ``host`` and ``agentdb_path`` are for people."""

    instance: str
    machine: str
    host: str
    agentdb_path: str
    claimed_at: int = 0  # ms; set by the backbone when the instance changes
    last_seen_at: int = 0  # ms; set by the backbone on every set_source


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

    # -- the shared registry and coordination (the scheduler and alerts use these) --------------
    def heartbeat(self, site: str, agent_name: str, platform: str) -> None: ...

    def agents(self, site: str) -> list[AgentState]: ...

    def claim_slot(self, site: str, job: str, slot: str) -> bool:
        """True for exactly one site per (job, slot), ever; a repeated call by the owner says True."""
        ...

    def create_approval(
        self,
        site: str,
        *,
        agent_name: str,
        action_type: str,
        priority: str,
        reviewers: Sequence[str],
        expires_at: int,
    ) -> str: ...

    def resolve_approval(self, site: str, approval_id: str, status: str, by: str) -> str:
        """Approve or reject a pending approval; BackboneConflict once resolved or past expiry,
        BackboneNotFound for an unknown id or another site's."""
        ...

    def approvals(self, site: str, status: str | None = None) -> list[Approval]: ...

    def forget(self, site: str, source_id: str) -> bool:
        """Delete an episode for good: a later push of the key is REJECTED as forgotten."""
        ...

    # -- one source per site ----------------------------------------------------------------------
    def source_of(self, site: str) -> SourceRecord | None:
        """The source recorded as feeding ``site``, or None before any claim."""
        ...

    def set_source(self, site: str, record: SourceRecord, *, expected: str | None) -> bool:
        """Record ``record`` as the site's source, atomically, if the recorded instance is
        ``expected`` (None: no record yet) or already ``record.instance``; False otherwise (someone
        else claimed it meanwhile). Sets claimed_at when the instance changes, last_seen_at always.
        The decision whether to claim is the caller's (``sync.source``); this is compare-and-set."""
        ...

    # -- the warm layer's feed ------------------------------------------------------------------
    def changes(self, site: str, after: int, limit: int) -> list[Change]:
        """Up to ``limit`` (1..500) changes with seq > ``after``, every site's, in seq order (``site``
        is the caller, for authentication). A page may be shorter than ``limit`` with more to come
        (Convex stops at its read limit): only an empty page means the reader has caught up."""
        ...

    def feed_end(self, site: str) -> int:
        """The latest seq handed out (0 before any change): how far the feed goes, for progress."""
        ...

    def record_point_ids(self, site: str, records: Sequence[PointRecord]) -> int:
        """Set qdrantPointId on episodes whose content hash still matches; returns how many."""
        ...
