"""`memsync jobs run NAME`: a manual run does the work whatever the day (a Wednesday, a Sunday
before or after the 03:00 slot), is recorded as manual, leaves the schedule's slots to the
scheduler, and gives way to a manual run of the same job already on. A real hub, synced by the real
CLI, at fixed instants: the hub's clock is its lowest seam."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import SiteFiles, memsync, write_config

from daemon.config import Settings
from daemon.job_table import JobSpec
from daemon.schedule import plan
from daemon.schedule.worker import run_job, run_job_now
from sync.backbone.hub import HubBackbone

EPISODES = 6  # the fixtures' episodes date from 2025-01-01: older than 90 days at every instant below
WEDNESDAY = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
SUNDAY_0259 = datetime(2026, 11, 22, 2, 59, tzinfo=UTC)
SUNDAY_0301 = datetime(2026, 11, 22, 3, 1, tzinfo=UTC)
NEW_YEAR = datetime(2027, 1, 1, 0, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> SiteFiles:
    """One site synced once into its hub; each test copies the hub."""
    from conftest import generate_agentdb

    root = tmp_path_factory.mktemp("synced")
    agentdb = root / "agentdb.db"
    generate_agentdb(agentdb, EPISODES)
    site = write_config(root / "laptop", "laptop", agentdb, root / "hub.db")
    done = memsync("sync", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    return site


@pytest.fixture
def hub_at(synced: SiteFiles, tmp_path: Path) -> Iterator[Callable[[str, datetime], HubBackbone]]:
    copy = tmp_path / "hub.db"
    for part in synced.hub.parent.glob("hub.db*"):
        shutil.copyfile(part, tmp_path / part.name)
    opened: list[HubBackbone] = []

    def open_at(site: str, moment: datetime) -> HubBackbone:
        hub = HubBackbone(copy, site, clock=lambda: int(moment.timestamp() * 1000))
        opened.append(hub)
        return hub

    yield open_at
    for hub in opened:
        hub.close()


def hot(hub: HubBackbone) -> int:
    with closing(sqlite3.connect(hub.path)) as conn:
        return int(conn.execute("SELECT count(*) FROM episodes WHERE archived = 0").fetchone()[0])


def cleanup(settings: Settings) -> JobSpec:
    return next(s for s in settings.jobs.specs() if s.name == "cleanup-old-episodes")


@pytest.mark.parametrize(
    ("moment", "scheduled_runs"),
    [
        (WEDNESDAY, False),  # the Sunday slot's 3-day grace has passed
        (SUNDAY_0259, False),  # the previous Sunday's slot: a week old
        (SUNDAY_0301, True),  # one minute into the slot
        (NEW_YEAR, False),
    ],
    ids=["wednesday", "sunday-02:59", "sunday-03:01", "new-year"],
)
def test_a_manual_cleanup_archives_on_any_day_and_is_recorded_as_manual(
    synced: SiteFiles, hub_at: Callable[[str, datetime], HubBackbone], moment: datetime, scheduled_runs: bool
) -> None:
    settings, spec = synced.settings(), cleanup(synced.settings())
    hub = hub_at("laptop", moment)
    # What the scheduler's fire would do at that instant, on a copy: grace decides.
    fired = run_job(spec, settings, hub, hub, now=moment.timestamp(), clock=moment.timestamp)
    assert fired.ran is scheduled_runs, fired
    assert hot(hub) == (0 if scheduled_runs else EPISODES)
    restored = hub.restore_archive() if scheduled_runs else 0
    assert restored == (EPISODES if scheduled_runs else 0)

    done = run_job_now(spec, settings, hub, hub, now=moment.timestamp())
    assert (done.ran, done.outcome) == (True, "ok"), done
    assert done.summary == f"{EPISODES} episodes older than 90 days archived"
    assert hot(hub) == 0
    (last, *_) = hub.job_runs("cleanup-old-episodes")
    assert last.slot == done.slot == plan.manual_slot(moment)
    assert plan.is_manual(last.slot)
    assert (last.site, last.outcome, last.started_at) == ("laptop", "ok", int(moment.timestamp() * 1000))


def test_a_manual_run_leaves_the_scheduled_slot_to_the_scheduler(
    synced: SiteFiles, hub_at: Callable[[str, datetime], HubBackbone]
) -> None:
    settings = synced.settings()
    spec = cleanup(settings)
    hub = hub_at("laptop", SUNDAY_0301)
    assert run_job_now(spec, settings, hub, hub, now=SUNDAY_0301.timestamp()).ran
    # Another site's daemon fires for the 03:00 slot a minute later: it is still the scheduler's.
    vm = hub_at("vm", SUNDAY_0301.replace(minute=2))  # (the settings' site is only the manual runs')
    fired = run_job(spec, settings, vm, vm, now=SUNDAY_0301.timestamp() + 60)
    assert (fired.ran, fired.slot) == (True, "2026-11-22T03:00:00Z")
    assert fired.summary == "0 episodes older than 90 days archived"
    # And once the slot is done, a manual run still runs.
    laptop = hub_at("laptop", SUNDAY_0301.replace(minute=3))
    again = run_job_now(spec, settings, laptop, laptop, now=SUNDAY_0301.timestamp() + 120)
    assert (again.ran, again.outcome) == (True, "ok")
    slots = [r.slot for r in hub.job_runs("cleanup-old-episodes")]
    assert sorted(slots) == sorted([plan.manual_slot(SUNDAY_0301), "2026-11-22T03:00:00Z", again.slot])


def test_a_manual_run_gives_way_to_one_already_on_until_its_lease_lapses(
    synced: SiteFiles, hub_at: Callable[[str, datetime], HubBackbone]
) -> None:
    settings = synced.settings()
    spec = cleanup(settings)  # lease 30 min
    vm = hub_at("vm", WEDNESDAY)
    # A manual run on another site, begun and not finished (its process is busy, or was killed).
    vm.claim_job(spec.name, plan.manual_slot(WEDNESDAY), int(spec.lease_s * 1000))
    later = WEDNESDAY.replace(minute=10)
    laptop = hub_at("laptop", later)
    busy = run_job_now(spec, settings, laptop, laptop, now=later.timestamp())
    assert (busy.ran, busy.outcome) == (False, "busy")
    assert "another manual run of cleanup-old-episodes (site vm, begun 12:00:00 UTC) is still running" in busy.summary
    assert hot(laptop) == EPISODES  # no work done
    lapsed = WEDNESDAY.replace(minute=31)
    laptop = hub_at("laptop", lapsed)
    done = run_job_now(spec, settings, laptop, laptop, now=lapsed.timestamp())
    assert (done.ran, done.outcome) == (True, "ok")
    assert hot(laptop) == 0


def test_of_two_manual_runs_recorded_at_once_the_first_goes_on() -> None:
    class Run:
        def __init__(self, slot: str, site: str, started_at: int, outcome: str = "running") -> None:
            self.slot, self.site, self.started_at, self.outcome = slot, site, started_at, outcome

    a = Run("manual:a", "laptop", 1000)
    b = Run("manual:b", "vm", 1000)  # the same millisecond: the slot decides
    c = Run("manual:c", "vm", 2000)
    old = Run("manual:old", "vm", 0, "ok")
    scheduled = Run("2026-11-22T03:00:00Z", "vm", 500)
    runs = [c, b, a, old, scheduled]
    assert plan.manual_blocker(runs, 60_000, 2000, mine=("manual:a", "laptop")) is None
    assert plan.manual_blocker(runs, 60_000, 2000, mine=("manual:b", "vm")) is a
    assert plan.manual_blocker(runs, 60_000, 2000, mine=("manual:c", "vm")) is a
    assert plan.manual_blocker(runs, 60_000, 2000) is a  # before recording: any live one blocks
    assert plan.manual_blocker([a, b, old], 1000, 2000) is None  # begun a lease ago: taken for dead
    assert plan.manual_blocker([scheduled, old], 60_000, 2000) is None


def test_jobs_run_and_digest_today_through_the_cli(
    tmp_path: Path, synced: SiteFiles, site_files: Callable[..., SiteFiles]
) -> None:
    """Whatever today is: the cleanup archives and says so, exit 0; a run that cannot go exits 1;
    `digest --date <today>` builds today so far."""
    for part in synced.hub.parent.glob("hub.db*"):
        shutil.copyfile(part, tmp_path / part.name)
    site = site_files("laptop", synced.agentdb, tmp_path / "hub.db")
    config = str(site.config)
    ran = memsync("jobs", "run", "cleanup-old-episodes", "--config", config)
    assert ran.returncode == 0, ran.stderr
    assert f"{EPISODES} episodes older than 90 days archived" in ran.stderr
    listed = {r["job"]: r for r in json.loads(memsync("jobs", "--json", "--config", config).stdout)}
    assert plan.is_manual(listed["cleanup-old-episodes"]["last"]["slot"])

    hub = HubBackbone(tmp_path / "hub.db", "vm")
    try:
        hub.claim_job("daily-digest", plan.manual_slot(datetime.now(UTC)), 600_000)  # vm's manual run, on
    finally:
        hub.close()
    busy = memsync("jobs", "run", "daily-digest", "--config", config)
    assert busy.returncode == 1
    assert "another manual run of daily-digest (site vm" in busy.stderr

    for _ in range(2):  # once more if the UTC day turned between the test's today and the command's
        today = datetime.now(UTC).strftime("%Y-%m-%d")
        shown = memsync("digest", "--date", today, "--json", "--config", config)
        if shown.returncode == 0 or datetime.now(UTC).strftime("%Y-%m-%d") == today:
            break
    assert shown.returncode == 0, shown.stderr
    built = json.loads(shown.stdout)
    assert (built["day"], [s["site"] for s in built["sites"]]) == (today, ["laptop"])
