"""The scheduler with real daemons: global jobs once per slot across sites on one hub, a dead
claimant taken over once, a stopped daemon that runs a missed slot once, Convex's crons left to
Convex; and the commands that show it (jobs, digest, agents, status --fleet, heartbeat)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import SiteFiles, memsync, stop_daemon, wait_for, wait_started, write_config
from convex_fixtures import LocalConvex
from harness import logged

from sync.backbone.hub import HubBackbone
from sync.policy.leases import Claim

Daemons = Callable[..., subprocess.Popen[bytes]]
GLOBAL = (
    "mark-stale-agents",
    "expire-pending-approvals",
    "sync-health",
    "daily-digest",
    "cleanup-old-episodes",
    "alerts",
)


def compressed(every: float, lease: float = 5.0) -> str:
    """Every global job every ``every`` seconds, so that a test sees several slots."""
    tables = "".join(f"[jobs.{job}]\nevery = {every}\nlease = {lease}\n" for job in GLOBAL)
    return f"[jobs]\nheartbeat_interval = 1\n{tables}"


def runs(hub: Path, job: str | None = None) -> list[Any]:
    backbone = HubBackbone(hub, "reader", create=False)
    try:
        return backbone.job_runs(job, 500)
    finally:
        backbone.close()


def test_the_start_fires_and_the_first_heartbeat_are_set_by_the_schedulers_clock(
    site_files: Callable[..., SiteFiles],
) -> None:
    """The scheduler takes its clock as an argument: the fires it adds at start and the first
    heartbeat are due at the clock's now. A clock far ahead of the real one holds them all, so
    nothing runs while the test looks."""
    from daemon.schedule.worker import Scheduler
    from daemon.site import duties_of

    site = site_files("laptop", extra="[jobs]\nheartbeat_interval = 60\n")
    settings = site.settings()
    hub = HubBackbone(site.hub, site.name)
    # A year ahead of whatever now is (whole seconds, so the fires compare equal): held, not run.
    later = datetime.now(UTC).replace(microsecond=0) + timedelta(days=365)
    beats: list[None] = []
    scheduler = Scheduler(
        settings,
        hub,
        duties_of(settings, hub).sweeps,
        heartbeat=lambda: beats.append(None),
        index_catch_up=None,
        clock=later.timestamp,
    )
    scheduler.start()
    try:
        assert scheduler.next_fire("heartbeat") == later
        names = [spec.name for spec in scheduler.specs()]
        assert "daily-digest" in names
        assert {name: scheduler.next_fire(f"{name}@start") for name in names} == dict.fromkeys(names, later)
    finally:
        scheduler.stop()
        hub.close()
    assert beats == []
    assert runs(site.hub) == []


def test_two_sites_on_one_hub_run_every_global_job_once_per_slot(
    tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons
) -> None:
    hub = tmp_path / "hub.db"
    laptop = write_config(tmp_path / "laptop", "laptop", make_agentdb(5, name="a.db"), hub, extra=compressed(2))
    vm = write_config(tmp_path / "vm", "vm", make_agentdb(5, seed=3, name="b.db"), hub, extra=compressed(2))
    procs = [daemons(s.config, tmp_path / f"{s.name}.log") for s in (laptop, vm)]
    for site, proc in zip((laptop, vm), procs, strict=True):
        wait_started(site, proc, tmp_path / f"{site.name}.log")

    def slots_done() -> bool:
        return all(len({r.slot for r in runs(hub, job) if r.outcome == "ok"}) >= 3 for job in GLOBAL)

    wait_for(slots_done, timeout=60, what="three slots of every global job")
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    every = runs(hub)
    per_slot = Counter((r.job, r.slot) for r in every if r.outcome in ("ok", "running", "failed"))
    assert max(per_slot.values()) == 1, [k for k, n in per_slot.items() if n > 1]
    assert {r.site for r in every} <= {"laptop", "vm"}
    assert all(r.outcome == "ok" for r in every), [r for r in every if r.outcome != "ok"]

    backbone = HubBackbone(hub, "reader", create=False)
    try:
        sites = {s.site: s for s in backbone.sites()}
    finally:
        backbone.close()
    assert set(sites) == {"laptop", "vm"}
    assert all(s.version and s.pid for s in sites.values())


def test_a_claimant_killed_mid_run_is_taken_over_once(
    tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons
) -> None:
    hub = tmp_path / "hub.db"
    schedule = "[jobs]\nheartbeat_interval = 1\n[jobs.sync-health]\nevery = 3600\ngrace = 3600\nlease = 5\n"
    laptop = write_config(tmp_path / "laptop", "laptop", make_agentdb(5, name="a.db"), hub, extra=schedule)
    vm = write_config(tmp_path / "vm", "vm", make_agentdb(5, seed=3, name="b.db"), hub, extra=schedule)
    assert memsync("sync", "--config", str(laptop.config)).returncode == 0  # the hub exists
    # The slot is this hour's; the test needs the daemons to start within the same hour, so near
    # its end it waits for the next one (at most 90 s) rather than depend on the time it runs at.
    left = 3600 - time.time() % 3600
    if left < 90:
        time.sleep(left + 0.5)
    slot = time.strftime("%Y-%m-%dT%H:00:00Z", time.gmtime())
    # A real process claims this hour's slot and is killed with SIGKILL before it finishes.
    ghost = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from sync.backbone.hub import HubBackbone\n"
            f"hub = HubBackbone(__import__('pathlib').Path({str(hub)!r}), 'ghost')\n"
            f"print(hub.claim_job('sync-health', {slot!r}, 500), flush=True)\n"
            "time.sleep(3600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert ghost.stdout is not None
    assert ghost.stdout.readline().strip() == str(Claim.TAKE)
    ghost.kill()
    ghost.wait(10)
    ghost.stdout.close()
    time.sleep(0.6)  # on purpose: the ghost's lease (0.5 s) expires, by the daemons' real clocks
    procs = [daemons(s.config, tmp_path / f"{s.name}.log") for s in (laptop, vm)]
    for site, proc in zip((laptop, vm), procs, strict=True):
        wait_started(site, proc, tmp_path / f"{site.name}.log")

    def settled() -> bool:
        return any(r.outcome == "ok" for r in runs(hub, "sync-health") if r.slot == slot)

    wait_for(settled, timeout=30, what="the slot taken over and finished")

    def fired_at_start(site: SiteFiles) -> bool:
        """The daemon's start fire of the slot is over: it ran it, or skipped it (and said so)."""
        log = tmp_path / f"{site.name}.log"
        return any(logged(log, event, job="sync-health", slot=slot) for event in ("job ran", "job skipped"))

    wait_for(lambda: fired_at_start(laptop) and fired_at_start(vm), what="both daemons' start fires of the slot")
    mine = [r for r in runs(hub, "sync-health") if r.slot == slot]
    assert sorted(r.outcome for r in mine) == ["abandoned", "ok"], mine
    assert next(r for r in mine if r.outcome == "abandoned").site == "ghost"
    skipped = [
        e
        for site in (laptop, vm)
        for e in logged(tmp_path / f"{site.name}.log", "job skipped", job="sync-health", slot=slot)
    ]
    assert [e["reason"] for e in skipped] == ["another site holds or finished this slot"], skipped


def test_a_daemon_stopped_across_fire_times_runs_the_slot_once(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], daemons: Daemons, tmp_path: Path
) -> None:
    site = site_files("laptop", make_agentdb(5), extra="[jobs.mark-stale-agents]\nevery = 2\nlease = 5\n")
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: len(runs(site.hub, "mark-stale-agents")) >= 1, what="a first run")
    proc.send_signal(signal.SIGSTOP)
    time.sleep(5)  # on purpose: two or three fire times pass while it is stopped
    before = len(runs(site.hub, "mark-stale-agents"))
    proc.send_signal(signal.SIGCONT)
    wait_for(lambda: len(runs(site.hub, "mark-stale-agents")) > before, what="the run after waking")
    time.sleep(1)  # on purpose: a second run of a missed slot would come now, right after the first
    after = runs(site.hub, "mark-stale-agents")
    per_slot = Counter(r.slot for r in after)
    assert max(per_slot.values()) == 1, per_slot
    assert 1 <= len(after) - before <= 2, "the missed fires were coalesced into one run (and the next slot's, at most)"


def test_jobs_digest_agents_fleet_and_heartbeat_through_the_cli(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], daemons: Daemons, tmp_path: Path
) -> None:
    site = site_files("laptop", make_agentdb(20), extra="[jobs]\nheartbeat_interval = 1\n")
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)

    done = memsync("heartbeat", "--agent", "hook-agent", "--platform", "claude-code", "--config", str(site.config))
    assert done.returncode == 0, done.stderr

    def agent_online() -> bool:
        listed = memsync("agents", "--json", "--config", str(site.config))
        return any(a["agent_name"] == "hook-agent" and a["status"] == "online" for a in json.loads(listed.stdout))

    wait_for(agent_online, timeout=20, what="the hook's heartbeat forwarded by the daemon")

    ran = memsync("jobs", "run", "daily-digest", "--config", str(site.config))
    assert ran.returncode == 0, ran.stderr
    assert "daily-digest, slot" in ran.stderr
    listed = memsync("jobs", "--json", "--config", str(site.config))
    rows = {r["job"]: r for r in json.loads(listed.stdout)}
    assert set(rows) == {*GLOBAL, "qdrant-episode-sync", "dream"}
    assert rows["dream"]["where"] == "one site (the backbone's lease)"
    assert rows["dream"]["enabled"] is False  # the tests' configs leave it off (tests/harness/site.py)
    assert rows["daily-digest"]["last"]["site"] == "laptop"
    assert rows["daily-digest"]["where"] == "one site of the hub"

    fleet = memsync("status", "--fleet", "--json", "--config", str(site.config))
    report = json.loads(fleet.stdout)
    assert [s["site"] for s in report["sites"]] == ["laptop"]
    assert report["sites"][0]["online"] is True
    assert fleet.returncode == report["exitCode"]

    missing = memsync("digest", "--date", "1999-01-01", "--config", str(site.config))
    assert missing.returncode == 1
    assert "no digest for 1999-01-01" in missing.stderr


@pytest.mark.parametrize("name", ["no-such-job"])
def test_running_an_unknown_job_names_the_jobs(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], name: str
) -> None:
    site = site_files("laptop", make_agentdb(3))
    done = memsync("jobs", "run", name, "--config", str(site.config))
    assert done.returncode == 2
    assert "no job named 'no-such-job' (jobs: mark-stale-agents" in done.stderr


def test_on_convex_the_daemon_runs_no_global_job_and_the_crons_runs_show_in_jobs(
    local_convex: LocalConvex, make_agentdb: Callable[..., Path], daemons: Daemons, tmp_path: Path
) -> None:
    secret = local_convex.register_site("sched-convex")
    site = write_config(
        tmp_path / "sites",
        "sched-convex",
        make_agentdb(5),
        tmp_path / "unused-hub.db",
        kind="convex",
        backbone=f'url = "{local_convex.url}"\n',
        # Not compressed(1): a Convex site's config may not reschedule the crons' jobs (refused,
        # tests/contracts/test_settings_contract.py); the daemon keeps its heartbeat fast only.
        extra="[jobs]\nheartbeat_interval = 1\n",
    )
    env = {"MEMSYNC_BACKBONE__SITE_SECRET": secret}
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log, env=env)
    wait_started(site, proc, log)

    def heartbeat_seen() -> bool:
        fleet = memsync("status", "--fleet", "--json", "--config", str(site.config), env=env)
        report = json.loads(fleet.stdout or "{}")
        return any(s["site"] == "sched-convex" and s["online"] for s in report.get("sites", []))

    wait_for(heartbeat_seen, timeout=30, what="the daemon's heartbeat in Convex")
    time.sleep(3)  # on purpose: a daemon that ran global jobs would have run their current slots by now
    local_convex.admin("action", "scheduled:markStaleAgents", {})  # what the cron runs
    listed = memsync("jobs", "--json", "--config", str(site.config), env=env)
    rows = {r["job"]: r for r in json.loads(listed.stdout)}
    assert all(rows[job]["where"] == "Convex" for job in GLOBAL)
    assert rows["mark-stale-agents"]["last"]["site"] == "convex"
    assert logged(log, "job ran") == [], "a daemon on Convex never runs a global job"
    assert logged(log, "job skipped") == [], "nor fires one"
    assert stop_daemon(proc) == 0


def test_the_index_job_starts_no_worker_when_the_index_is_up_to_date(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], short_dir: Path, tmp_path: Path
) -> None:
    from daemon.schedule.worker import index_catch_up
    from sync.errors import DaemonNotListening

    warm = f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "s.sock"}"\n'
    site = site_files("laptop", make_agentdb(5), warm=warm)
    settings = site.settings()
    hub = HubBackbone(site.hub, "laptop")
    try:
        # Nothing in the feed: up to date, and nobody is asked (no daemon listens on the socket).
        assert index_catch_up(settings, hub) == "search index up to date (feed position 0)"
        assert memsync("sync", "--config", str(site.config), env={"MEMSYNC_WARM__ENABLED": "false"}).returncode == 0
        # Five episodes the index has not seen: now the worker is asked (and nobody answers here).
        with pytest.raises(DaemonNotListening):
            index_catch_up(settings, hub)
    finally:
        hub.close()
