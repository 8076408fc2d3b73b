"""The schedule's pure core: no I/O, no clock of its own. Every decision the scheduler makes is a
function here of its inputs, so that it can be tested from tables.

- A job fires on an interval (aligned to the epoch, so every site computes the same slots) or on a
  cron expression, in UTC.
- A fire belongs to a **slot**: the latest scheduled fire time at or before the moment the job
  runs. A laptop that slept through 06:00 and runs the digest at 09:10 works for the 06:00 slot, as
  does every other site that runs it late: one slot, one owner.
- **Where** a job runs: a global job once across every site per slot (on the embedded hub a daemon
  takes the slot's lease; on Convex the deployment's crons run it and daemons never do), a per-site
  job on every site, and the index job per site with an embedded store but once across sites with a
  shared Qdrant (every site searches the one collection, so an episode is embedded once).
- A global job's slot is run under a lease (``sync.leases``, decided the same way by both
  backbones): one holder, taken over only after it expires, never run again once finished.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Final, Protocol, TypeVar

from apscheduler.triggers.cron import CronTrigger


class Scope(StrEnum):
    GLOBAL = "global"  # once across sites per slot
    SITE = "site"  # on every site
    INDEX = "index"  # per site with an embedded store; global with a shared Qdrant


class Where(StrEnum):
    HERE = "this site"
    ONE_SITE = "one site of the hub"  # whichever daemon takes the slot's lease
    ONE_SITE_SHARED_INDEX = "one site (shared Qdrant)"
    CONVEX = "Convex"  # the deployment's crons


@dataclass(frozen=True, slots=True)
class JobSpec:
    name: str
    scope: Scope
    every_s: float | None = None  # an interval job, aligned to the epoch
    cron: str | None = None  # or a crontab expression (5 fields, UTC)
    grace_s: float = 3600.0  # how late a missed fire may still run (a laptop asleep at 06:00)
    lease_s: float = 600.0  # how long a slot's holder has before another site may take it over
    enabled: bool = True

    def __post_init__(self) -> None:
        if (self.every_s is None) == (self.cron is None):
            raise ValueError(f"job {self.name}: give exactly one of every_s and cron")
        if self.every_s is not None and self.every_s <= 0:
            raise ValueError(f"job {self.name}: every_s must be positive")
        if self.cron is not None:
            trigger(self)  # a malformed expression is refused here, with its reason


def trigger(spec: JobSpec) -> CronTrigger:
    assert spec.cron is not None
    return CronTrigger.from_crontab(spec.cron, timezone=UTC)


MINUTE: Final = 60.0
DEFAULT_JOBS: Final = (
    JobSpec("mark-stale-agents", Scope.GLOBAL, every_s=5 * MINUTE, grace_s=5 * MINUTE, lease_s=2 * MINUTE),
    JobSpec("expire-pending-approvals", Scope.GLOBAL, every_s=15 * MINUTE, grace_s=15 * MINUTE, lease_s=2 * MINUTE),
    JobSpec("sync-health", Scope.GLOBAL, every_s=30 * MINUTE, grace_s=30 * MINUTE, lease_s=5 * MINUTE),
    JobSpec("qdrant-episode-sync", Scope.INDEX, every_s=5 * MINUTE, grace_s=5 * MINUTE, lease_s=10 * MINUTE),
    JobSpec("daily-digest", Scope.GLOBAL, cron="0 6 * * *", grace_s=18 * 3600, lease_s=10 * MINUTE),
    JobSpec("cleanup-old-episodes", Scope.GLOBAL, cron="0 3 * * sun", grace_s=3 * 86400, lease_s=30 * MINUTE),
    # The fleet's alerts (daemon/alerts): every minute, so that a site gone silent is said within one.
    JobSpec("alerts", Scope.GLOBAL, every_s=MINUTE, grace_s=MINUTE, lease_s=MINUTE),
)
JOB_NAMES: Final = tuple(job.name for job in DEFAULT_JOBS)


def with_overrides(spec: JobSpec, **changes: object) -> JobSpec:
    """The spec with the config's ``[jobs.<name>]`` values (None: keep the default); an interval
    replaces a cron and the other way round."""
    given = {k: v for k, v in changes.items() if v is not None}
    if "every_s" in given:
        given["cron"] = None
    elif "cron" in given:
        given["every_s"] = None
    return replace(spec, **given)  # type: ignore[arg-type]  # checked by JobSpec itself


def slot_start(spec: JobSpec, now: datetime) -> datetime:
    """The slot ``now`` belongs to: the latest scheduled fire at or before ``now``."""
    if spec.every_s is not None:
        seconds = now.timestamp()
        return datetime.fromtimestamp(seconds - seconds % spec.every_s, UTC)
    cron, moment = trigger(spec), now.astimezone(UTC)
    # The trigger only looks forward: step from far enough back to pass the latest fire.
    latest: datetime | None = None
    probe = cron.get_next_fire_time(None, moment - timedelta(days=400))
    while probe is not None and probe <= moment:
        latest = probe
        probe = cron.get_next_fire_time(probe, probe + timedelta(seconds=1))
    if latest is None:
        raise ValueError(f"job {spec.name}: its cron never fired in the last 400 days")
    return latest


def slot_key(spec: JobSpec, now: datetime) -> str:
    """The slot as the backbone stores it: its start, to the second, in UTC."""
    return slot_start(spec, now).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_fire(spec: JobSpec, now: datetime) -> datetime:
    if spec.every_s is not None:
        return datetime.fromtimestamp(slot_start(spec, now).timestamp() + spec.every_s, UTC)
    found: datetime | None = trigger(spec).get_next_fire_time(None, now.astimezone(UTC) + timedelta(seconds=1))
    assert found is not None
    return found


def late_but_in_grace(spec: JobSpec, now: datetime) -> bool:
    """Whether a run at ``now`` may still work for its slot (a fire missed by less than the grace)."""
    return (now - slot_start(spec, now)).total_seconds() <= spec.grace_s


def where(spec: JobSpec, *, backbone: str, store: str) -> Where:
    """Where the job runs for a site on ``backbone`` ("local" | "convex") with ``store``
    ("edge" | "qdrant")."""
    if spec.scope is Scope.SITE:
        return Where.HERE
    if spec.scope is Scope.INDEX:
        if store != "qdrant":
            return Where.HERE
        return Where.ONE_SITE_SHARED_INDEX
    return Where.CONVEX if backbone == "convex" else Where.ONE_SITE


def runs_here(spec: JobSpec, *, backbone: str, store: str) -> bool:
    """Whether this daemon schedules the job at all (Convex's crons run the global ones)."""
    return spec.enabled and where(spec, backbone=backbone, store=store) is not Where.CONVEX


def needs_lease(spec: JobSpec, *, backbone: str, store: str) -> bool:
    return where(spec, backbone=backbone, store=store) in (Where.ONE_SITE, Where.ONE_SITE_SHARED_INDEX)


# -- manual runs (``memsync jobs run NAME``) ---------------------------------------------------------
# A manual run is no fire of the schedule: it owns a slot of its own, named by the instant it began,
# so that it neither needs a grace (only the scheduler's catch-up of a missed fire does) nor takes or
# finishes a scheduled slot's lease (the schedule's next slot runs as if no one had run it by hand;
# the bodies are idempotent). Its run record's slot says it was manual.
MANUAL_PREFIX: Final = "manual:"


def manual_slot(now: datetime) -> str:
    """The slot of a manual run begun at ``now``: its instant, to the millisecond, in UTC."""
    moment = now.astimezone(UTC)
    return f"{MANUAL_PREFIX}{moment.strftime('%Y-%m-%dT%H:%M:%S')}.{moment.microsecond // 1000:03d}Z"


def is_manual(slot: str) -> bool:
    return slot.startswith(MANUAL_PREFIX)


class RunLike(Protocol):
    """What ``manual_blocker`` reads of a run record (``sync.backbone.base.JobRun``)."""

    @property
    def slot(self) -> str: ...
    @property
    def site(self) -> str: ...
    @property
    def started_at(self) -> int: ...
    @property
    def outcome(self) -> str: ...


Run = TypeVar("Run", bound=RunLike)


def manual_blocker(runs: Iterable[Run], lease_ms: int, now_ms: int, mine: tuple[str, str] | None = None) -> Run | None:
    """The manual run of a job that a manual run must wait for, or None: two manual runs of one job
    never run at once. Each manual run records itself ("running") before it looks, then runs only if
    no other live manual run started before it (by the backbone's clock, then slot, then site); a
    run still "running" ``lease_ms`` after it started is taken for dead (its process was killed).
    ``mine`` is (slot, site) of the caller's own recorded run; None looks before recording: any
    live manual run blocks."""
    live = [r for r in runs if is_manual(r.slot) and r.outcome == "running" and now_ms - r.started_at < lease_ms]
    if mine is None:
        return min(live, key=_order, default=None)
    own = next((r for r in live if (r.slot, r.site) == mine), None)
    others = [r for r in live if (r.slot, r.site) != mine]
    if own is None:
        return min(others, key=_order, default=None)
    return min((r for r in others if _order(r) < _order(own)), key=_order, default=None)


def _order(run: RunLike) -> tuple[int, str, str]:
    return run.started_at, run.slot, run.site
