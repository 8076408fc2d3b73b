"""The one seam between a site and the shared truth. The embedded hub implements it here; the
Convex backbone implements the same contract over HTTP.

A backbone is opened for one site (the site is bound then, and no call names it again) and plays
three roles, each a Protocol below with its part of the contract: ``EpisodeSink`` (the site's
episodes and cursor, its source), ``ChangeFeed`` (every site's changes, for the warm layer) and
``Coordination`` (registry, approvals, job slots, forgetting). ``Backbone`` is all three; each
consumer is typed with only the role it uses.

For every role and implementation, failures raise ``BackboneUnavailable`` (transient: retry the
same call) or ``BackboneRejected`` (this request will never succeed).
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


class EpisodeSink(Protocol):
    """Where one site's episodes go: what the sync engine and the site's wiring need.

    - ``push`` upserts by (sourceSite, sourceId), idempotently, and returns one result a row, in
      order. A key that already holds an episode with another identity is a CONFLICT and is left
      untouched: the backbone, not the site's sidecar, is the judge of what a key holds.
      ``syncedAt`` is set by the backbone when it first receives an episode and never changes after.
    - The site's cursor row (lastSyncedId, lastSyncedAt, totalSynced) is advanced in the same
      transaction as the rows; lastSyncedId never goes backwards.
    - A row the backbone will not store comes back as REJECTED with a reason (a forgotten key among
      them); a request it will never take raises ``BackboneRejected`` (the engine splits the batch).
    """

    kind: str
    # Where it is, fit for logs and status: never contains a secret.
    description: str
    site: str  # the site this backbone was opened for: every write is this site's
    max_batch_rows: int
    max_batch_bytes: int | None
    max_episode_bytes: int | None

    def push(self, items: Sequence[PushItem], cursor: int) -> list[PushResult]: ...

    def site_cursor(self) -> SiteCursor | None: ...

    def episodes(self, site: str | None = None) -> Iterator[dict[str, Any]]:
        """Episodes as ``export`` prints them, oldest first: ``site``'s, or every site's for None.
        A backbone may hold back other sites' (a Convex site reads only its own)."""
        ...

    def ping(self) -> None: ...

    def close(self) -> None: ...

    # -- one source per site ----------------------------------------------------------------------
    def source_of(self) -> SourceRecord | None:
        """The source recorded as feeding the site, or None before any claim."""
        ...

    def set_source(self, record: SourceRecord, *, expected: str | None) -> bool:
        """Record ``record`` as the site's source, atomically, if the recorded instance is
        ``expected`` (None: no record yet) or already ``record.instance``; False otherwise (someone
        else claimed it meanwhile). Sets claimed_at when the instance changes, last_seen_at always.
        The decision whether to claim is the caller's (``sync.source``); this is compare-and-set."""
        ...


class ChangeFeed(Protocol):
    """Every site's changes in one order: what the warm layer's indexer and lag counting read.

    Every insert, edit and forget gets a sequence number, strictly increasing across the whole
    backbone in commit order (assigned inside the writing transaction, so a reader that has seen
    seq N will never later see a new change numbered N or below). An episode edited twice appears
    once, at its latest seq. Recording a point id is not a change.
    """

    def changes(self, after: int, limit: int) -> list[Change]:
        """Up to ``limit`` (1..500) changes with seq > ``after``, every site's, in seq order. A page
        may be shorter than ``limit`` with more to come (Convex stops at its read limit): only an
        empty page means the reader has caught up."""
        ...

    def feed_end(self) -> int:
        """The latest seq handed out (0 before any change): how far the feed goes, for progress."""
        ...

    def record_point_ids(self, records: Sequence[PointRecord]) -> int:
        """Set qdrantPointId on episodes (any site's) whose content hash still matches; returns how
        many."""
        ...

    def close(self) -> None: ...


class Coordination(Protocol):
    """The shared registry and coordination between sites: what the scheduler, the registry and
    alerts use. Each site sees its own agents and approvals.

    It keeps the agent registry (heartbeats; offline after 3 minutes of silence), approvals (pending
    until approved, rejected or expired), one owner per (job, slot), and tombstones. On Convex,
    crons sweep stale agents and expired approvals; on the hub, whoever runs the periodic jobs calls
    ``mark_stale`` and ``expire_approvals`` (the hub's own: they sweep every site at once).
    """

    def heartbeat(self, agent_name: str, platform: str) -> None: ...

    def agents(self) -> list[AgentState]: ...

    def claim_slot(self, job: str, slot: str) -> bool:
        """True for exactly one site per (job, slot), ever; a repeated call by the owner says True."""
        ...

    def create_approval(
        self,
        *,
        agent_name: str,
        action_type: str,
        priority: str,
        reviewers: Sequence[str],
        expires_at: int,
    ) -> str: ...

    def resolve_approval(self, approval_id: str, status: str, by: str) -> str:
        """Approve or reject a pending approval; BackboneConflict once resolved or past expiry,
        BackboneNotFound for an unknown id or another site's."""
        ...

    def approvals(self, status: str | None = None) -> list[Approval]: ...

    def forget(self, source_id: str) -> bool:
        """Delete one of the site's episodes for good: a later push of the key is REJECTED as
        forgotten (and the feed lists the key as forgotten)."""
        ...

    def close(self) -> None: ...


class Backbone(EpisodeSink, ChangeFeed, Coordination, Protocol):
    """What opening a backbone for a site gives: all three roles over one connection. Consumers
    take only the role they use."""
