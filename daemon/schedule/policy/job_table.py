"""The periodic jobs' table: each job, how it fires (an interval aligned to the epoch, or a cron
expression in UTC), its grace and lease, and **where** it runs: a global job once across every
site per slot (on the embedded hub a daemon takes the slot's lease; on Convex the deployment's
crons run it and daemons never do), a per-site job on every site, and the index job per site with
an embedded store but once across sites with a shared Qdrant (every site searches the one
collection, so an episode is embedded once). Pure.

A loose module, not in ``daemon/schedule``: the settings read it (``[jobs.<name>]``) and the
scheduler takes the settings. When a job fires is ``daemon/schedule/policy/plan.py``'s.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC
from enum import StrEnum
from typing import Final

from apscheduler.triggers.cron import CronTrigger


class Scope(StrEnum):
    GLOBAL = "global"  # once across sites per slot
    SITE = "site"  # on every site
    INDEX = "index"  # per site with an embedded store; global with a shared Qdrant
    # Once across sites under the backbone's lease on both backbones: a daemon's work even on Convex
    # (the dream needs the site's embedder, which Convex's deployment does not have).
    FLEET = "fleet"


class Where(StrEnum):
    HERE = "this site"
    ONE_SITE = "one site of the hub"  # whichever daemon takes the slot's lease
    ONE_SITE_SHARED_INDEX = "one site (shared Qdrant)"
    ONE_SITE_LEASED = "one site (the backbone's lease)"  # a fleet job, on either backbone
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
    # The dream cycle (daemon/usecases/memory/dream.py): nightly, before the digest that reports it; a
    # laptop asleep at 02:00 runs it when it wakes, up to 18 hours late.
    JobSpec("dream", Scope.FLEET, cron="0 2 * * *", grace_s=18 * 3600, lease_s=30 * MINUTE),
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


def where(spec: JobSpec, *, backbone: str, store: str) -> Where:
    """Where the job runs for a site on ``backbone`` ("local" | "convex") with ``store``
    ("edge" | "qdrant")."""
    if spec.scope is Scope.SITE:
        return Where.HERE
    if spec.scope is Scope.FLEET:
        return Where.ONE_SITE_LEASED
    if spec.scope is Scope.INDEX:
        if store != "qdrant":
            return Where.HERE
        return Where.ONE_SITE_SHARED_INDEX
    return Where.CONVEX if backbone == "convex" else Where.ONE_SITE


def runs_here(spec: JobSpec, *, backbone: str, store: str) -> bool:
    """Whether this daemon schedules the job at all (Convex's crons run the global ones)."""
    return spec.enabled and where(spec, backbone=backbone, store=store) is not Where.CONVEX


def needs_lease(spec: JobSpec, *, backbone: str, store: str) -> bool:
    return where(spec, backbone=backbone, store=store) in (
        Where.ONE_SITE,
        Where.ONE_SITE_SHARED_INDEX,
        Where.ONE_SITE_LEASED,
    )
