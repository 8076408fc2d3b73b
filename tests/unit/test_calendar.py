"""The date-sensitive decisions at fixed instants, whatever day the suite runs: which slot a job's
fire owns, whether a late fire is still within its grace, the next fire, the day a digest covers,
and quiet hours across a daylight-saving change. All pure: the instant is an argument."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from daemon.hubserver.scheduled import covered_day
from daemon.job_table import DEFAULT_JOBS
from daemon.schedule import plan

JOBS = {job.name: job for job in DEFAULT_JOBS}


def at(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("job", "instant", "slot", "in_grace", "next_fire"),
    [
        # The weekly cleanup, Sunday 03:00 UTC, grace 3 days.
        ("cleanup-old-episodes", "2026-11-22 02:59", "2026-11-15T03:00:00Z", False, "2026-11-22 03:00"),
        ("cleanup-old-episodes", "2026-11-22 03:01", "2026-11-22T03:00:00Z", True, "2026-11-29 03:00"),
        ("cleanup-old-episodes", "2026-11-25 12:00", "2026-11-22T03:00:00Z", False, "2026-11-29 03:00"),  # a Wednesday
        ("cleanup-old-episodes", "2026-11-25 02:59", "2026-11-22T03:00:00Z", True, "2026-11-29 03:00"),
        # A new year: 2026 has an ISO week 53 (Thursday 31 December); 2027's first Sunday is the 3rd.
        ("cleanup-old-episodes", "2026-12-31 23:59", "2026-12-27T03:00:00Z", False, "2027-01-03 03:00"),
        ("cleanup-old-episodes", "2027-01-01 00:01", "2026-12-27T03:00:00Z", False, "2027-01-03 03:00"),
        ("cleanup-old-episodes", "2027-01-03 03:01", "2027-01-03T03:00:00Z", True, "2027-01-10 03:00"),
        # The daily digest, 06:00 UTC, grace 18 hours.
        ("daily-digest", "2026-11-25 12:00", "2026-11-25T06:00:00Z", True, "2026-11-26 06:00"),
        ("daily-digest", "2026-11-25 05:59", "2026-11-24T06:00:00Z", False, "2026-11-25 06:00"),  # 23 h late
        ("daily-digest", "2026-12-31 23:59", "2026-12-31T06:00:00Z", True, "2027-01-01 06:00"),
        ("daily-digest", "2027-01-01 00:01", "2026-12-31T06:00:00Z", False, "2027-01-01 06:00"),
        # Crons are in UTC: the nights Paris changes its clocks (29 March, 25 October 2026) are not special.
        ("daily-digest", "2026-03-29 06:30", "2026-03-29T06:00:00Z", True, "2026-03-30 06:00"),
        ("cleanup-old-episodes", "2026-03-29 03:01", "2026-03-29T03:00:00Z", True, "2026-04-05 03:00"),
        ("cleanup-old-episodes", "2026-10-25 02:59", "2026-10-18T03:00:00Z", False, "2026-10-25 03:00"),
        ("cleanup-old-episodes", "2026-10-25 03:00", "2026-10-25T03:00:00Z", True, "2026-11-01 03:00"),
        # An interval job: slots aligned to the epoch, across the year's end.
        ("mark-stale-agents", "2026-12-31 23:59", "2026-12-31T23:55:00Z", True, "2027-01-01 00:00"),
        ("mark-stale-agents", "2027-01-01 00:01", "2027-01-01T00:00:00Z", True, "2027-01-01 00:05"),
    ],
)
def test_slot_grace_and_next_fire_at_fixed_instants(
    job: str, instant: str, slot: str, in_grace: bool, next_fire: str
) -> None:
    spec, moment = JOBS[job], at(instant)
    assert plan.slot_key(spec, moment) == slot
    assert plan.late_but_in_grace(spec, moment) is in_grace
    assert plan.next_fire(spec, moment) == at(next_fire)
    # A manual run at the same instant has a slot of its own, whatever the day.
    assert plan.manual_slot(moment) == f"manual:{moment.strftime('%Y-%m-%dT%H:%M')}:00.000Z"
    assert plan.manual_slot(moment) != slot


@pytest.mark.parametrize(
    ("slot_start", "covered"),
    [
        ("2026-11-25 06:00", "2026-11-24"),  # a Wednesday covers Tuesday
        ("2027-01-01 06:00", "2026-12-31"),  # the new year's first covers the old year's last
        ("2026-03-01 06:00", "2026-02-28"),
        ("2028-03-01 06:00", "2028-02-29"),  # a leap year
        ("2026-03-30 06:00", "2026-03-29"),  # the day Paris lost an hour is a whole UTC day
    ],
)
def test_the_day_a_digest_covers(slot_start: str, covered: str) -> None:
    assert covered_day(at(slot_start)) == covered
