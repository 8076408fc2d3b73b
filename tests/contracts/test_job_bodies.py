"""The job bodies' bounds (contracts/job_bodies.json): the hub's are the file's, and what both
servers share is equal (cloud_functions/jobBodies.test.ts holds Convex's side)."""

from __future__ import annotations

from typing import Any

from contract import contract

from daemon.hubserver import scheduled as jobs
from daemon.schedule.policy.job_table import DEFAULT_JOBS
from sync.archive import files
from sync.backbone.hub.fleet import digest

BODIES: dict[str, Any] = contract("job_bodies.json")


def test_each_bounded_job_is_a_job_of_the_table_and_says_why_each_side_bounds_it() -> None:
    assert set(BODIES["jobs"]) <= {job.name for job in DEFAULT_JOBS}
    for sides in BODIES["jobs"].values():
        assert set(sides) == {"hub", "convex"}
        assert all(side["why"] for side in sides.values())


def test_the_hub_archives_a_call_at_a_time_as_the_contract_says() -> None:
    hub = BODIES["jobs"]["cleanup-old-episodes"]["hub"]
    assert hub["call_limit"] == jobs.ARCHIVE_BATCH
    assert hub["run_limit"] is None  # the job calls again until a call archives fewer


def test_what_both_servers_share() -> None:
    shared = BODIES["shared"]
    assert shared["archive_orphan_age_ms"] == files.ORPHAN_AGE_S * 1000
    assert shared["digest_top"] == digest.TOP
