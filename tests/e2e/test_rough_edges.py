"""The smaller rough edges a new user hit (issue 19): each as the user met it, through the real CLI
in child processes, real AgentDB files, a real hub and real daemons; Gemini is a real HTTP server on
127.0.0.1 speaking its API, the lowest seam for a test that must catch `sync` mid-indexing."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
import structlog
from conftest import SiteFiles, memsync, status_json, wait_for, wait_started, write_config
from fake_providers import KEY, FakeProvider, Reply, gemini_respond, serve
from harness import log_events

from daemon.cli.common import EX_USAGE
from daemon.fleet import fleet_report
from sync.backbone.base import SiteState
from sync.backbone.hub import HubBackbone

Daemons = Callable[..., subprocess.Popen[bytes]]
GEMINI_ENV = {"MEMSYNC_WARM__API_KEY": KEY}


def gemini_site(site_files: Callable[..., SiteFiles], tmp_path: Path, url: str, **options: Any) -> SiteFiles:
    """Warm layer on, embedding through the fake Gemini at ``url``, two episodes a page."""
    warm = f'path = "{tmp_path / "warm"}"\nembedder = "gemini"\nbase_url = "{url}"\nbatch_size = 2\n'
    return site_files(warm=warm, **options)


def source_seen_at(hub: Path, site: str) -> int:
    """When the hub last saw the site's source (ms); 0 before anything claimed it."""
    if not hub.exists():
        return 0
    backbone = HubBackbone(hub, site, create=False)
    try:
        recorded = backbone.source_of()
    finally:
        backbone.close()
    return 0 if recorded is None else recorded.last_seen_at


# -- a missing AgentDB file is an agent that has not written yet -----------------------------------
def test_a_missing_agentdb_file_is_waited_for_not_an_error(site_files: Callable[..., SiteFiles]) -> None:
    site = site_files(log_format=None)
    assert not site.agentdb.exists()

    synced = memsync("sync", "--config", str(site.config))
    assert synced.returncode == 0, synced.stderr
    assert synced.stderr == (
        f"memsync: nothing to sync yet: the AgentDB file {site.agentdb} does not exist (the agent has not written it)\n"
    )

    code, report = status_json(site.config)
    assert (code, report["health"]) == (1, "degraded"), report["reasons"]
    assert report["reasons"] == ["no daemon running for this site"]
    assert report["agentdb"]["waiting"] is True
    assert report["backlog"] == 0

    shown = memsync("status", "--config", str(site.config))
    assert shown.returncode == 1
    assert f"waiting for the AgentDB file at {site.agentdb} (not created yet)" in shown.stdout
    assert "down" not in shown.stdout
    trailing = [line for line in shown.stdout.splitlines() if line != line.rstrip()]
    assert trailing == [], "status lines end in spaces"


def test_a_daemon_waiting_for_its_agentdb_file_answers_sync_wait_at_once(
    site_files: Callable[..., SiteFiles], daemons: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    """With a daemon running and no AgentDB file yet, `sync --wait` (an agent's hook) returns 0
    with nothing to sync rather than time out, and the daemon logs no error for it."""
    site = site_files(log_format="json")
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    done = memsync("sync", "--wait", "--timeout", "20", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    assert "backlog 0" in done.stderr
    lines = list(log_events(log))
    assert [r for r in lines if r.get("level") == "error"] == []
    assert sum(r.get("event") == "waiting for the AgentDB file to be created" for r in lines) == 1


# -- Ctrl-C while `sync` indexes -------------------------------------------------------------------
@pytest.fixture
def held_gemini() -> Iterator[tuple[FakeProvider, threading.Event, threading.Event]]:
    """A Gemini that holds its first request until the test releases it."""
    arrived, release = threading.Event(), threading.Event()

    def respond(path: str, body: Any) -> Reply:
        arrived.set()
        release.wait(60)
        return gemini_respond(path, body)

    for provider in serve(respond):
        yield provider, arrived, release
        release.set()


def test_ctrl_c_while_sync_indexes_exits_130_and_says_what_is_left(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    tmp_path: Path,
    held_gemini: tuple[FakeProvider, threading.Event, threading.Event],
) -> None:
    provider, arrived, release = held_gemini
    site = gemini_site(site_files, tmp_path, provider.url, agentdb=make_agentdb(8))
    proc = subprocess.Popen(
        [sys.executable, "-m", "daemon", "sync", "--config", str(site.config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **GEMINI_ENV},
    )
    try:
        assert arrived.wait(120), "sync never asked the embedder"
        proc.send_signal(signal.SIGINT)
        release.set()
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    assert proc.returncode == 130, err
    assert "8 new" in err, "the episodes were synced before the index was interrupted"
    assert "interrupted while indexing for search: synced, but the index stopped at feed position" in err
    assert "the next `memsync sync` or the daemon indexes the rest" in err

    again = memsync("sync", "--config", str(site.config), env=GEMINI_ENV)
    assert again.returncode == 0, again.stderr
    embedded = int(again.stderr.split("indexed for search: ")[1].split(" embedded")[0])
    assert 0 < embedded < 8, again.stderr


# -- usage errors, once -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "mistake"),
    [
        (["search"], "the following arguments are required: query"),
        (["search", "--limit", "x", "q"], "argument -n/--limit: invalid int value: 'x'"),
        (["heartbeat"], "the following arguments are required: --agent"),
        (["sync", "--timeout", "x"], "argument --timeout: invalid float value: 'x'"),
    ],
)
def test_a_light_path_usage_error_is_said_once(args: list[str], mistake: str) -> None:
    done = memsync(*args)
    assert done.returncode == EX_USAGE
    assert done.stderr.count("usage: ") == 1, done.stderr
    assert done.stderr.count(mistake) == 1, done.stderr


@pytest.mark.parametrize("command", ["search", "heartbeat", "sync"])
def test_help_of_a_light_path_is_only_the_help(command: str) -> None:
    done = memsync(command, "--help")
    assert done.returncode == 0
    assert done.stderr == ""
    assert done.stdout.startswith(f"usage: memsync {command} ")


# -- logs on a command's stderr ---------------------------------------------------------------------
def test_a_piped_command_prints_sentences_not_json_logs(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    # The config asks for debug logs and leaves the format to "auto": the daemon would log JSON.
    site = site_files(agentdb=make_agentdb(20), log_format=None)
    done = memsync("sync", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines, "sync says what it did"
    assert [line for line in lines if not line.startswith("memsync: ")] == []


def test_log_lines_go_to_the_stderr_of_the_moment(monkeypatch: pytest.MonkeyPatch) -> None:
    """While a progress bar is live, rich puts its own stream in sys.stderr: a log line must go there."""
    from daemon import logs

    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    try:
        logs.configure("warning", "auto", command=True)
        later = StringIO()
        monkeypatch.setattr(sys, "stderr", later)
        structlog.get_logger("memsync.test").warning("a warning while a bar is live")
    finally:
        root.handlers[:], level = saved
        root.setLevel(level)
    assert "a warning while a bar is live" in later.getvalue()
    assert not later.getvalue().lstrip().startswith("{"), "a command's log lines are text, not JSON"


# -- APScheduler's own "missed by" --------------------------------------------------------------------
def test_start_fires_queued_behind_a_slow_job_run_without_apschedulers_warning(
    site_files: Callable[..., SiteFiles], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from daemon.schedule.worker import Scheduler
    from daemon.site import duties_of

    site = site_files(warm=f'path = "{tmp_path / "warm"}"\n', extra="[jobs]\nheartbeat_interval = 3600\n")
    settings = site.settings()
    hub = HubBackbone(site.hub, site.name)
    released = threading.Event()

    def slow_index_catch_up() -> str:
        released.wait(3)  # longer than APScheduler's own 1 s grace for the fires queued behind it
        return "caught up"

    sweeps = duties_of(settings, hub).sweeps
    scheduler = Scheduler(settings, hub, sweeps, heartbeat=lambda: None, index_catch_up=slow_index_catch_up)
    caplog.set_level(logging.DEBUG)
    scheduler.start()
    try:
        wait_for(lambda: bool(hub.job_runs("alerts", 5)), timeout=60, what="the alerts job's start fire")
    finally:
        released.set()
        scheduler.stop()
    missed = [r.getMessage() for r in caplog.records if "was missed by" in r.getMessage()]
    assert missed == []


# -- status --fleet -----------------------------------------------------------------------------------
def test_an_offline_site_is_down_in_the_fleet_whatever_sync_health_said() -> None:
    def site(name: str, *, online: bool) -> SiteState:
        return SiteState(name, 1_000, online, "1", "h", 1, 0.0, 0, "ok", 5, 1_000, 0, 0, "up")

    report = fleet_report([site("laptop", online=True), site("vm", online=False)], [], [], 0, 60.0, 2_000, 180_000)
    assert [(s["site"], s["online"], s["health"]) for s in report["sites"]] == [
        ("laptop", True, "up"),
        ("vm", False, "down"),
    ]
    assert report["health"] == "down"


def test_the_fleet_shows_this_sites_index_as_it_is_now(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], tmp_path: Path
) -> None:
    for provider in serve(gemini_respond):
        site = gemini_site(site_files, tmp_path, provider.url, agentdb=make_agentdb(4))
        done = memsync("sync", "--config", str(site.config), env=GEMINI_ENV)
        assert done.returncode == 0, done.stderr
        assert "indexed for search: 4 embedded" in done.stderr
    fleet = memsync("status", "--fleet", "--json", "--config", str(site.config), env=GEMINI_ENV)
    (laptop,) = json.loads(fleet.stdout)["sites"]
    assert laptop["site"] == "laptop"
    assert laptop["index_state"] == "ok"
    _, report = status_json(site.config, env=GEMINI_ENV)
    assert report["warm"]["lastIndexedAt"] is not None


# -- the source of a site ----------------------------------------------------------------------------
def test_last_seen_moves_while_the_daemon_runs(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], daemons: Daemons, tmp_path: Path
) -> None:
    site = site_files(agentdb=make_agentdb(5), extra="[jobs]\nheartbeat_interval = 1\n")
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: source_seen_at(site.hub, site.name) > 0, what="the claim")
    first = source_seen_at(site.hub, site.name)
    wait_for(lambda: source_seen_at(site.hub, site.name) > first, timeout=60, what="last seen to move")


def test_a_refused_second_source_says_why_in_status(make_agentdb: Callable[..., Path], tmp_path: Path) -> None:
    hub = tmp_path / "hub.db"
    first = write_config(tmp_path / "one", "laptop", make_agentdb(3, name="one.db"), hub)
    second = write_config(tmp_path / "two", "laptop", make_agentdb(3, name="two.db"), hub)
    assert memsync("sync", "--config", str(first.config)).returncode == 0
    refused = memsync("sync", "--config", str(second.config))
    assert refused.returncode == 78
    assert "is already fed by another source" in refused.stderr

    code, report = status_json(second.config)
    assert (code, report["health"]) == (2, "down")
    why = report["sourceRefused"]
    assert why is not None
    assert why.startswith("site 'laptop' is already fed by another source: ")
    assert str(first.agentdb) in why
    assert str(second.agentdb) in why
    assert f"refused: {why}" in report["reasons"]

    code, report = status_json(first.config)
    assert report["sourceRefused"] is None
    assert not any(r.startswith("refused") for r in report["reasons"])
