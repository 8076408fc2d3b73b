"""The schedule's pure core, from tables: slots, fires, grace, where each job runs, leases."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from daemon.schedule.policy.job_table import (
    DEFAULT_JOBS,
    JobSpec,
    Scope,
    Where,
    needs_lease,
    runs_here,
    where,
    with_overrides,
)
from daemon.schedule.policy.plan import late_but_in_grace, next_fire, slot_key
from sync.policy.leases import Claim, Lease, decide

JOBS = {job.name: job for job in DEFAULT_JOBS}


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("job", "now", "slot"),
    [
        # Intervals are aligned to the epoch: every site computes the same slot.
        ("mark-stale-agents", "2026-11-23 16:00:00", "2026-11-23T16:00:00Z"),
        ("mark-stale-agents", "2026-11-23 16:04:59", "2026-11-23T16:00:00Z"),
        ("mark-stale-agents", "2026-11-23 16:05:00", "2026-11-23T16:05:00Z"),
        ("expire-pending-approvals", "2026-11-23 16:29:00", "2026-11-23T16:15:00Z"),
        ("sync-health", "2026-11-23 16:31:00", "2026-11-23T16:30:00Z"),
        # A cron's slot is its latest fire at or before now: a restart at 06:20 is still 06:00's slot,
        # and a laptop that slept through 06:00 and wakes at 09:10 works for 06:00's slot too.
        ("daily-digest", "2026-11-23 06:00:00", "2026-11-23T06:00:00Z"),
        ("daily-digest", "2026-11-23 06:20:00", "2026-11-23T06:00:00Z"),
        ("daily-digest", "2026-11-23 09:10:00", "2026-11-23T06:00:00Z"),
        ("daily-digest", "2026-11-23 05:59:59", "2026-11-22T06:00:00Z"),
        # Sunday 03:00 UTC: 2026-11-22 is a Sunday.
        ("cleanup-old-episodes", "2026-11-22 03:00:00", "2026-11-22T03:00:00Z"),
        ("cleanup-old-episodes", "2026-11-25 12:00:00", "2026-11-22T03:00:00Z"),
        ("cleanup-old-episodes", "2026-11-22 02:59:00", "2026-11-15T03:00:00Z"),
    ],
)
def test_the_slot_a_fire_belongs_to(job: str, now: str, slot: str) -> None:
    assert slot_key(JOBS[job], at(now)) == slot


@pytest.mark.parametrize(
    ("job", "now", "fire"),
    [
        ("mark-stale-agents", "2026-11-23 16:01:00", "2026-11-23 16:05:00"),
        ("daily-digest", "2026-11-23 06:00:00", "2026-11-24 06:00:00"),
        ("daily-digest", "2026-11-23 05:00:00", "2026-11-23 06:00:00"),
        ("cleanup-old-episodes", "2026-11-23 00:00:00", "2026-11-29 03:00:00"),
    ],
)
def test_the_next_fire(job: str, now: str, fire: str) -> None:
    assert next_fire(JOBS[job], at(now)) == at(fire)


@pytest.mark.parametrize(
    ("job", "now", "in_grace"),
    [
        ("daily-digest", "2026-11-23 09:10:00", True),  # slept through 06:00: still that day's digest
        ("daily-digest", "2026-11-24 00:30:00", False),  # 18 h is the default grace
        ("mark-stale-agents", "2026-11-23 16:04:00", True),
    ],
)
def test_a_missed_fire_runs_late_only_within_its_grace(job: str, now: str, in_grace: bool) -> None:
    assert late_but_in_grace(JOBS[job], at(now)) is in_grace


@pytest.mark.parametrize(
    ("job", "backbone", "store", "place"),
    [
        ("mark-stale-agents", "local", "edge", Where.ONE_SITE),
        ("mark-stale-agents", "convex", "edge", Where.CONVEX),
        ("daily-digest", "convex", "qdrant", Where.CONVEX),
        ("qdrant-episode-sync", "local", "edge", Where.HERE),
        ("qdrant-episode-sync", "convex", "edge", Where.HERE),  # each site's own embedded index
        ("qdrant-episode-sync", "convex", "qdrant", Where.ONE_SITE_SHARED_INDEX),  # one shared collection
        ("qdrant-episode-sync", "local", "qdrant", Where.ONE_SITE_SHARED_INDEX),
    ],
)
def test_where_each_job_runs(job: str, backbone: str, store: str, place: Where) -> None:
    spec = JOBS[job]
    assert where(spec, backbone=backbone, store=store) is place
    assert runs_here(spec, backbone=backbone, store=store) is (place is not Where.CONVEX)
    assert needs_lease(spec, backbone=backbone, store=store) is (place in (Where.ONE_SITE, Where.ONE_SITE_SHARED_INDEX))


def test_a_disabled_job_runs_nowhere() -> None:
    off = with_overrides(JOBS["sync-health"], enabled=False)
    assert not runs_here(off, backbone="local", store="edge")


def test_overrides_swap_an_interval_for_a_cron_and_refuse_nonsense() -> None:
    digest = with_overrides(JOBS["daily-digest"], every_s=2.0)
    assert (digest.every_s, digest.cron) == (2.0, None)
    stale = with_overrides(JOBS["mark-stale-agents"], cron="*/10 * * * *")
    assert (stale.every_s, stale.cron) == (None, "*/10 * * * *")
    with pytest.raises(ValueError, match="Wrong number of fields"):
        with_overrides(JOBS["daily-digest"], cron="0 6 * *")
    with pytest.raises(ValueError, match="exactly one"):
        JobSpec("x", Scope.GLOBAL)


NOW = 1_000_000


@pytest.mark.parametrize(
    ("current", "site", "claim"),
    [
        (None, "laptop", Claim.TAKE),
        (Lease("j", "s", "laptop", NOW + 1, done=False), "laptop", Claim.KEEP),  # a restart inside the slot
        (Lease("j", "s", "vm", NOW + 1, done=False), "laptop", Claim.SKIP),  # the holder is still on it
        (Lease("j", "s", "vm", NOW, done=False), "laptop", Claim.TAKE_OVER),  # killed mid-run: lease expired
        (Lease("j", "s", "vm", NOW - 5, done=True), "laptop", Claim.SKIP),  # finished: never run again
        (Lease("j", "s", "laptop", NOW - 5, done=True), "laptop", Claim.SKIP),
    ],
)
def test_a_slot_lease(current: Lease | None, site: str, claim: Claim) -> None:
    assert decide(current, site, NOW) is claim


@pytest.mark.parametrize("backbone", ["local", "convex"])
def test_the_dream_runs_on_one_site_under_the_lease_on_both_backbones(backbone: str) -> None:
    """A fleet job: a daemon's on Convex too (the deployment has no embedder), once under the lease."""
    from daemon.schedule.policy.job_table import Where, needs_lease, runs_here, where

    dream = JOBS["dream"]
    assert where(dream, backbone=backbone, store="edge") is Where.ONE_SITE_LEASED
    assert runs_here(dream, backbone=backbone, store="edge")
    assert needs_lease(dream, backbone=backbone, store="edge")
