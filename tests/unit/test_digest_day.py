"""Tier: unit.

The day a manual `jobs run daily-digest` builds and the day `memsync digest` shows by default agree
at every hour of the day (before the 06:00 slot too): both are yesterday, the last whole UTC day.
The clock is an argument: a real hub at fixed instants over the hours of a day and of a year's
turn."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from harness import SiteFiles, write_config

from daemon.hubserver.scheduled import covered_day, last_whole_day
from daemon.job_table import DEFAULT_JOBS
from daemon.schedule import plan
from daemon.schedule.worker import run_job_now
from sync.backbone.hub import HubBackbone

INSTANTS = [datetime(2026, 11, 25, hour, 30, tzinfo=UTC) for hour in range(24)] + [
    datetime(2027, 1, 1, hour, minute, tzinfo=UTC) for hour, minute in ((0, 0), (5, 59), (6, 0), (23, 59))
]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> SiteFiles:
    root = tmp_path_factory.mktemp("digest-day")
    return write_config(root, "laptop", root / "agentdb.db", root / "hub.db")


@pytest.mark.parametrize("now", INSTANTS, ids=lambda t: t.strftime("%Y-%m-%d %H:%M"))
def test_a_manual_run_builds_the_day_digest_shows(site: SiteFiles, now: datetime) -> None:
    yesterday = (now - timedelta(days=1)).strftime("%Y-%m-%d")
    settings = site.settings()
    spec = next(s for s in settings.jobs.specs() if s.name == "daily-digest")
    hub = HubBackbone(site.hub, "laptop", clock=lambda: int(now.timestamp() * 1000))
    try:
        done = run_job_now(spec, settings, hub, hub, now=now.timestamp())
        assert (done.ran, done.outcome) == (True, "ok"), done
        assert done.summary.startswith(f"digest for {yesterday}: "), done.summary
        assert hub.digest(yesterday) is not None
    finally:
        hub.close()
    assert last_whole_day(now) == yesterday  # what `memsync digest` shows without --date


@pytest.mark.parametrize("now", INSTANTS, ids=lambda t: t.strftime("%Y-%m-%d %H:%M"))
def test_the_scheduled_slot_covers_the_day_before_it_began(now: datetime) -> None:
    spec = next(s for s in DEFAULT_JOBS if s.name == "daily-digest")
    start = plan.slot_start(spec, now)  # 06:00 today, or yesterday's 06:00 before it
    assert covered_day(start) == (start - timedelta(days=1)).strftime("%Y-%m-%d")
    if now.hour >= 6:  # from the 06:00 fire on, the slot's day is the manual run's: yesterday
        assert covered_day(start) == last_whole_day(now)
