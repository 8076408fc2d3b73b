"""The one seam between a site and the shared truth. The embedded hub implements it here; the
Convex backbone implements the same contract over HTTP.

A backbone is opened for one site (the site is bound then, and no call names it again) and plays
roles, each a Protocol below with its part of the contract: ``EpisodeSink`` (the site's episodes
and cursor, its source), ``ChangeFeed`` (every site's changes, for the warm layer),
``Coordination`` (itself the union of ``Registry``, ``JobLeases``, ``Approvals``, ``Tasks``,
``Reports`` and ``Forgetting``), ``ColdArchive``, ``Links`` and ``Uses`` (the fleet's use of its
memories, and pins). ``Backbone`` is all of them; each consumer is typed with only the role it uses.
``Sweeps`` are the global periodic jobs' bodies: the embedded hub has them as methods (a daemon
runs them under a lease); on Convex the deployment's crons run the same logic server-side.

For every role and implementation, failures raise ``BackboneUnavailable`` (transient: retry the
same call) or ``BackboneRejected`` (this request will never succeed); the embedded hub also raises
``BackboneBroken`` (its file is damaged) and ``PathProblem`` (its file or folder cannot be written),
which no retry fixes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Protocol

from sync.archive.manifest import ArchiveFile
from sync.errors import BackboneRejected
from sync.policy.leases import Claim
from sync.policy.links import Link, StoredLink
from sync.policy.salience import check_kind


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
    site: str
    interface: str | None = None
    last_episode_at: int | None = None  # ms; the ts of its latest episode the site has seen


@dataclass(frozen=True, slots=True)
class AgentBeat:
    """An agent of the site showed signs of life since the daemon's last beat: a hook's
    ``memsync heartbeat`` or a new episode. ``seen_at`` is when (the hook's time, or the episode's
    ts), so a backlog of old episodes or a spool left while the daemon was down does not make an
    agent look alive now."""

    agent_name: str
    platform: str
    seen_at: int  # ms
    interface: str | None = None
    last_episode_at: int | None = None  # ms


@dataclass(frozen=True, slots=True)
class SiteBeat:
    """What a site's daemon says of itself on every registry heartbeat. The sidecar's counts travel
    with it because the daily digest reports them and only the site knows them."""

    version: str
    host: str
    pid: int
    lag_s: float | None
    backlog: int | None
    index_state: str | None
    quarantined: int
    conflicts: int
    redacted: int = 0  # episodes synced with secrets replaced (sync/source/redaction.py)


@dataclass(frozen=True, slots=True)
class SiteState:
    """One site as the fleet sees it: its last heartbeat (None: never), its cursor row and the
    sync-health job's judgement (None: never judged)."""

    site: str
    last_heartbeat: int | None  # ms
    online: bool
    version: str | None
    host: str | None
    pid: int | None
    lag_s: float | None
    backlog: int | None
    index_state: str | None
    cursor: int | None  # lastSyncedId
    last_sync_at: int | None  # ms
    quarantined: int
    conflicts: int
    health: str | None  # "up" | "down"
    total_synced: int | None = None  # episodes the site has synced, from its cursor row
    redacted: int = 0  # from its last heartbeat


JOB_OUTCOMES: Final = ("running", "ok", "failed", "abandoned")
CONVEX_SITE: Final = "convex"  # who ran a job when a Convex cron ran it


@dataclass(frozen=True, slots=True)
class JobRun:
    job: str
    slot: str
    site: str  # who ran it: a site, or "convex" for a Convex cron
    started_at: int  # ms
    ended_at: int | None  # ms; None while running
    outcome: str  # one of JOB_OUTCOMES
    summary: str


@dataclass(frozen=True, slots=True)
class HealthTransition:
    site: str
    state: str  # "up" | "down"
    at: int  # ms
    silent_for_s: float


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
    cost_usd: float | None = None  # what the request said it costs, if it said
    tests_passed: bool | None = None  # whether the request said its tests pass, if it said
    site: str = ""  # the site that asked
    summary: str | None = None  # what the agent wants to do, for the person deciding
    source_id: str | None = None  # the episode (of ``site``) it is about, if any
    created_at: int = 0  # ms
    resolved_at: int | None = None  # ms
    defer_count: int = 0


@dataclass(frozen=True, slots=True)
class NewTask:
    """A task an approval request creates beside it, linked to it (``sync.policy.tasks``)."""

    title: str
    assigned_to: str | None = None


@dataclass(frozen=True, slots=True)
class Task:
    """Work an agent of ``site`` is to do, possibly waiting on an approval, whose decision moves its
    status (``sync.policy.tasks``)."""

    task_id: str
    title: str
    agent_name: str
    site: str
    status: str  # one of sync.policy.tasks.TASK_STATUSES
    assigned_to: str | None = None
    approval_id: str | None = None
    created_at: int = 0  # ms
    updated_at: int = 0  # ms; its latest change (a person's, or its approval's)


@dataclass(frozen=True, slots=True)
class Change:
    """One entry of the change feed: an episode as it now is, or a key that was forgotten."""

    seq: int
    site: str
    source_id: str
    episode: Mapping[str, Any] | None  # the exported fields (EXPORT_FIELDS); None once forgotten or archived
    point_id: str | None = None  # the qdrantPointId recorded for the current content, if any
    # The cleanup job moved the episode's body to the cold archive: ``episode`` is None, and the
    # index keeps its point (marked archived) rather than deleting it. A restore is a change again,
    # with the episode.
    archived: bool = False
    # An episode adopted from the seed design (cloud_functions/adopt.ts) keeps the point the seed
    # wrote: the index writes, and deletes, that point rather than one under memsync's own id.
    seed_point_id: str | None = None


@dataclass(frozen=True, slots=True)
class Forgotten:
    """Where ``forget`` removed an episode from: the hot table, and the archive file of the week it
    was archived in (rewritten without it), if it had been archived."""

    deleted: bool  # a hot or archived row held the key (False: unknown, or forgotten before)
    archive_week: str | None = None  # the archive file rewritten without it


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
    same machine from a copy on a clone; ``agentdb_path`` tells two files on one machine apart;
    ``host`` is for people."""

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

    def episodes(self, site: str | None = None, since_ms: int | None = None) -> Iterator[dict[str, Any]]:
        """Episodes as ``export`` prints them, oldest first: ``site``'s, or every site's for None;
        with ``since_ms``, only those whose ``ts`` is at or after it. A backbone may hold back other
        sites' (a Convex site reads only its own)."""
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
        The decision whether to claim is the caller's (``sync.push.claim``); this is compare-and-set."""
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

    def archived_records(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        """The full records (as ``export`` prints them, with ``archived: true``) of those of these
        (site, sourceId) keys, any site's, that are archived now: what an index that never saw an
        episode before it was archived embeds it from. Keys not archived are absent."""
        ...

    def close(self) -> None: ...


class Registry(Protocol):
    """The registry of sites and agents: what the heartbeat sends and the fleet view and the alerts
    job read. ``heartbeat`` (an agent of this site) and ``heartbeat_site`` (this site's daemon, with
    the agents it saw active since its last beat) set them online with last_heartbeat = their latest
    sign of life; the mark-stale-agents sweep sets them offline after a silence
    (``sync.push.agents.liveness``) and prunes agents silent past the retention. The fleet is every
    site's."""

    def heartbeat(
        self, agent_name: str, platform: str, interface: str | None = None, last_episode_at: int | None = None
    ) -> None:
        """An agent of this site is alive. ``interface`` and ``last_episode_at`` left out (None)
        keep what is known; last_episode_at never goes backwards."""
        ...

    def heartbeat_site(self, beat: SiteBeat, agents: Sequence[AgentBeat] = ()) -> None:
        """This site's registry row (online again, last_heartbeat = now, the beat's figures) and its
        agents seen since the last beat, in one call: each agent's last_heartbeat becomes the later
        of the stored one and its ``seen_at`` (never after now), and it is online again."""
        ...

    def sites(self) -> list[SiteState]:
        """Every site, by name: on the hub every site that heartbeated or synced, on Convex every
        registered site (a site may read the fleet view)."""
        ...

    def agents(self, all_sites: bool = False) -> list[AgentState]:
        """This site's agents by name, or every site's by (site, name)."""
        ...


class JobLeases(Protocol):
    """Job leases and runs (``sync.policy.leases``): what the scheduler and ``memsync jobs`` use.
    ``claim_job`` applies ``decide`` atomically, so that one site runs a global job's slot; every
    run, wherever it ran, is recorded (``job_runs``, every site's)."""

    def claim_job(self, job: str, slot: str, lease_ms: int) -> Claim:
        """``sync.policy.leases.decide(current, this site, now)``, applied atomically. TAKE, KEEP and
        TAKE_OVER make this site the holder until now + lease_ms and record its run as "running"
        (KEEP reuses its running run); TAKE_OVER marks the previous holder's running run
        "abandoned". SKIP changes nothing."""
        ...

    def finish_job(self, job: str, slot: str, outcome: str, summary: str) -> None:
        """The slot is done (never run again, whatever ``outcome``: "ok" | "failed") and this
        site's run of it ends with ``outcome`` and ``summary``."""
        ...

    def record_run(self, job: str, slot: str, outcome: str, summary: str, started_at: int, ended_at: int) -> None:
        """A per-site job's run (no lease), as this site's."""
        ...

    def job_runs(self, job: str | None = None, limit: int = 50) -> list[JobRun]:
        """Every site's runs (of ``job``, or of every job), newest first, at most ``limit`` (Convex
        answers 500 at most)."""
        ...


class Approvals(Protocol):
    """Approvals: what ``memsync approval``, the MCP tools and Telegram's presses use. Pending until
    approved, rejected or expired (at the earlier of ``expires_at`` and its category's timeout, by
    the expire-pending-approvals sweep). Each site sees its own; people decide for the fleet."""

    def create_approval(
        self,
        *,
        agent_name: str,
        action_type: str,
        priority: str,
        reviewers: Sequence[str],
        expires_at: int,
        timeout_ms: int | None = None,
        cost_usd: float | None = None,
        tests_passed: bool | None = None,
        summary: str | None = None,
        source_id: str | None = None,
        task: NewTask | None = None,
        task_id: str | None = None,
    ) -> str:
        """A new approval for ``action_type`` (its category), stored with ``cost_usd`` and
        ``tests_passed`` (what the request says of itself, if anything), ``summary`` (for the person
        deciding) and ``source_id`` (one of this site's episodes it is about, whose
        ``approvalStatus`` then follows the decision). ``task`` creates a task of this site linked to
        it, ``task_id`` links one of this site's tasks (BackboneNotFound for none; not both), in the
        same transaction: the task takes the ``requested`` or, approved at once, the ``approved``
        event (``sync.policy.tasks``). ``timeout_ms`` is the
        category's timeout under the caller's policy (None: ``sync.policy.approvals.APPROVAL_TIMEOUTS_MS``,
        else ``DEFAULT_APPROVAL_TIMEOUT_MS``). ``sync.policy.approvals.approved_at_creation`` decides
        whether it is approved at once, resolved_by "policy": a timeout of 0, an external_api under
        $0.10, a code_commit whose tests passed. A negative or non-finite cost is rejected."""
        ...

    def resolve_approval(self, approval_id: str, status: str, by: str) -> str:
        """Approve or reject a pending approval, any site's (people decide for the fleet, from any
        site); BackboneConflict once resolved or past expiry, BackboneNotFound for an unknown id.
        The linked episode's ``approvalStatus`` and the linked tasks' status (``sync.policy.tasks``) follow,
        in the same transaction; as they do when it is deferred or expires."""
        ...

    def defer_approval(self, approval_id: str, by: str, timeout_ms: int | None = None) -> Approval:
        """Push a pending approval's expiry out by its category's timeout (``timeout_ms``, the
        caller's policy; None: ``sync.policy.approvals``'), at most ``sync.policy.approvals.MAX_DEFERS`` times
        (``sync.policy.approvals.deferred_expiry``); BackboneConflict otherwise. Returns it as it now is."""
        ...

    def approval(self, approval_id: str) -> Approval | None:
        """Any site's approval by id; None for an unknown or malformed id."""
        ...

    def approvals(self, status: str | None = None, all_sites: bool = False) -> list[Approval]:
        """This site's approvals (or every site's), oldest first."""
        ...


class Tasks(Protocol):
    """Tasks: work an agent is to do, some waiting on an approval (``Approvals``), whose decision,
    deferral or expiry moves their status by ``sync.policy.tasks``, in the approval's own transaction. A
    site creates its own tasks; people see and update the fleet's, from any site (as they decide
    approvals)."""

    def create_task(
        self, *, title: str, agent_name: str, assigned_to: str | None = None, approval_id: str | None = None
    ) -> str:
        """A new task of this site, "pending"; linked to one of this site's approvals
        (``approval_id``; BackboneNotFound for none), it takes at once the event of the approval's
        status (``sync.policy.tasks.link_event``). An empty title is rejected. Returns its id."""
        ...

    def task(self, task_id: str) -> Task | None:
        """Any site's task by id; None for an unknown or malformed id."""
        ...

    def tasks(
        self,
        *,
        status: str | None = None,
        agent_name: str | None = None,
        site: str | None = None,
        approval_id: str | None = None,
    ) -> list[Task]:
        """The fleet's tasks (or ``site``'s), oldest first, narrowed by each filter given."""
        ...

    def update_task(self, task_id: str, *, status: str | None = None, assigned_to: str | None = None) -> Task:
        """Set any site's task's status (one of ``sync.policy.tasks.TASK_STATUSES``) and/or assignee (None:
        unchanged); BackboneNotFound for an unknown id, BackboneRejected for an unknown status or
        nothing to change. Returns it as it now is."""
        ...


class Reports(Protocol):
    """What the fleet's reports read: the daily digests and the sync-health job's transitions,
    every site's."""

    def digest(self, day: str) -> dict[str, Any] | None:
        """The stored daily digest of the UTC day "YYYY-MM-DD", or None if none was built."""
        ...

    def build_today_digest(self, day: str) -> dict[str, Any]:
        """Today's digest built now, "so far" (the episodes created since 00:00 UTC, each site's
        figures as they are now), and stored under ``day`` until the daily-digest job builds the
        whole day. ``day`` must be today (UTC) by the backbone's clock: refused otherwise (the hub
        raises ``ValueError``, Convex ``BackboneRejected``)."""
        ...

    def health_transitions(self, since_ms: int) -> list[HealthTransition]:
        """The sync-health job's transitions at or after ``since_ms``, oldest first (at most 1000)."""
        ...


class Forgetting(Protocol):
    """Tombstones: ``memsync forget``'s one call."""

    def forget(self, source_id: str) -> Forgotten:
        """Delete one of the site's episodes for good, from the hot table and the cold archive (its
        week's file rewritten without it): a later push of the key is REJECTED as forgotten (and
        the feed lists the key as forgotten, so that every index drops it)."""
        ...


class Coordination(Registry, JobLeases, Approvals, Tasks, Reports, Forgetting, Protocol):
    """The shared registry and coordination between sites, all its roles over one connection: what
    a backbone implements. Consumers take only the role they use (``Registry``, ``JobLeases``,
    ``Approvals``, ``Tasks``, ``Reports``, ``Forgetting``)."""

    def close(self) -> None: ...


class Sweeps(Protocol):
    """The global periodic jobs' bodies, over every site at once. The embedded hub has them (a
    daemon runs each slot under a lease); on Convex the same logic runs in internal functions that
    the deployment's crons call. Each is idempotent: a slot run twice does no harm."""

    def mark_stale(self, now_ms: int, stale_after_ms: int) -> int:
        """Online agents and sites with no heartbeat for ``stale_after_ms`` go offline; how many."""
        ...

    def prune_agents(self, now_ms: int, retention_ms: int) -> int:
        """Agents of every site with no sign of life for ``retention_ms`` leave the registry; how many."""
        ...

    def expire_approvals(self, now_ms: int, timeouts_ms: Mapping[str, int], default_ms: int) -> int:
        """A pending approval of category C created at t expires once now - t >=
        timeouts_ms.get(C, default_ms), or once its own expires_at has passed; how many."""
        ...

    def sync_health(self, now_ms: int, silent_after_ms: int) -> list[HealthTransition]:
        """A site whose last sync is ``silent_after_ms`` old or older is "down", else "up"; a
        transition is recorded and returned only when a site's state changes (a site first judged
        healthy is no news; first judged silent is)."""
        ...

    def build_digest(self, day: str, now_ms: int) -> dict[str, Any]:
        """The digest of the UTC day "YYYY-MM-DD", stored (replacing any of that day) and returned."""
        ...

    def archive_older_than(self, cutoff_ms: int, limit: int) -> int:
        """Move at most ``limit`` episodes with ts < ``cutoff_ms`` to the cold archive (one file
        per site and ISO week, written and verified before the bodies leave the hot table; the
        keys stay); how many."""
        ...


@dataclass(frozen=True, slots=True)
class ArchiveCheck:
    """``archive verify``'s finding for one file: None when it reads back as its manifest says."""

    file: ArchiveFile
    problem: str | None


@dataclass(frozen=True, slots=True)
class ArchiveRun:
    """What the last cleanup run did, for ``status``."""

    at: int  # ms
    archived: int  # episodes moved this run
    files: int  # files written or rewritten


class ColdArchive(Protocol):
    """The cold archive, as ``memsync archive``, ``export --archived`` and ``status`` see it. Every
    call takes the range it covers: ``site`` None is every site; ``since_ms``/``until_ms`` bound
    the weeks by their episodes' ts (a file is in range when its [from_ts, to_ts] overlaps)."""

    def archive_files(
        self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[ArchiveFile]: ...

    def verify_archive(
        self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None
    ) -> list[ArchiveCheck]:
        """Read every file back: its sha256 and size as the manifest says, every line an episode,
        the count and key range, and every archived key of its week present in it."""
        ...

    def restore_archive(self, site: str | None = None, since_ms: int | None = None, until_ms: int | None = None) -> int:
        """Bring the archived episodes of these files back to the hot tables (a change each, so
        every index unmarks them); how many came back. Idempotent: a restored episode is hot, and
        restoring again brings nothing. The files stay (the next cleanup run merges into them)."""
        ...

    def archived_episodes(self, site: str | None = None) -> Iterator[dict[str, Any]]:
        """Every archived episode (keys archived in the hot table), as ``export`` prints them with
        ``archived: true``."""
        ...

    def last_archive_run(self) -> ArchiveRun | None: ...

    def archived_counts(self, site: str | None = None) -> dict[tuple[str, str], int] | None:
        """How many of each (site, week) file's episodes are archived now: fewer than its manifest's
        count once some were restored, edited (hot again) or forgotten. None when the backbone
        cannot say cheaply (then a file's count is all there is)."""
        ...


MemoryKey = tuple[str, str]  # (sourceSite, sourceId): a memory, wherever it was written


@dataclass(frozen=True, slots=True)
class UseEvent:
    """One use of memories by an agent at one moment: the memories a context hook handed over, a
    search's results, an episode opened. ``use_id`` is unique to the event (the recording site
    makes it), so an event delivered twice counts once."""

    use_id: str
    kind: str  # one of sync.policy.salience.USE_KINDS
    used_at: int  # ms
    keys: tuple[MemoryKey, ...]
    agent: str | None = None  # the agent tool or MCP client that got them, when known


@dataclass(frozen=True, slots=True)
class UseTotals:
    """What the fleet's use of one memory adds up to, and whether it is pinned."""

    site: str
    source_id: str
    access_count: int
    last_accessed: int | None  # ms; None: pinned, never used
    by_kind: Mapping[str, int]
    pinned: bool = False
    pinned_by: str | None = None
    pinned_at: int | None = None  # ms


def checked_uses(events: Sequence[UseEvent]) -> None:
    """BackboneRejected, in one sentence, for an event both backbones refuse (before any call)."""
    for event in events:
        try:
            check_kind(event.kind)
        except ValueError as exc:
            raise BackboneRejected(str(exc)) from None
        if not event.use_id:
            raise BackboneRejected("a use needs its id (the recording site's): none was given")


class Uses(Protocol):
    """The fleet's use of its memories (which were handed to or opened by which agent), and pins:
    what salience (``sync.policy.salience``) is computed from.

    - ``record_uses`` stores each event's memories once per (use_id, memory) however often it is
      delivered, skipping memories the backbone does not hold (unknown, or forgotten), and returns
      how many (event, memory) pairs it counted for the first time; the event's site is this one.
    - ``use_totals`` sums them per memory: every memory used or pinned (``keys`` None), or those
      of ``keys`` that are.
    - ``pin`` sets or clears a memory's pin (any site's memory: people pin the fleet's); False when
      the backbone holds no such memory.
    - Forgetting a memory removes its uses and its pin with it (``Forgetting.forget``).
    """

    def record_uses(self, events: Sequence[UseEvent]) -> int: ...

    def use_totals(self, keys: Sequence[MemoryKey] | None = None) -> dict[MemoryKey, UseTotals]: ...

    def pin(self, site: str, source_id: str, *, pinned: bool, by: str) -> bool: ...


class Links(Protocol):
    """The links between memories (``sync.policy.links``, pinned in ``contracts/links.json``):
    what ``memsync related``, the MCP server and the indexer's near-duplicates use. Explicit links
    live in a ``links`` table keyed (from, to, kind), written by ``add_links`` and by a push whose
    metadata names an ``about`` or ``updates`` episode (replacing that episode's earlier ones);
    derived links are computed when asked. A forget deletes every explicit link with the key at
    either end, in its own transaction; a link with a forgotten end is never stored."""

    def related(self, site: str, source_id: str, limit: int = 20) -> list[Link]:
        """Any site's episode's neighbours, at most ``limit`` (1..200), ranked as
        ``sync.policy.links.related`` ranks them; BackboneNotFound for a key the backbone does not
        hold (hot or archived)."""
        ...

    def add_links(self, links: Sequence[StoredLink]) -> int:
        """Store explicit links (at most 200 a call; a kind not explicit is BackboneRejected), each
        once by (from, to, kind); a link to itself or with a forgotten end is skipped. Returns how
        many were new."""
        ...


class Backbone(EpisodeSink, ChangeFeed, Coordination, ColdArchive, Links, Uses, Protocol):
    """What opening a backbone for a site gives: every role over one connection. Consumers take
    only the role they use."""
