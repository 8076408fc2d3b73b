"""Fault injection through the real CLI: kill -9 at random points under a live writer, the backbone
locked away under writes, SIGTERM in the middle of a big backfill. After each, exactly once must hold:
one hub episode per AgentDB row, none missing, none twice, each equal to its row."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    GEN,
    AgentProcess,
    SiteFiles,
    assert_exactly_once,
    episode,
    flat,
    hub_episodes,
    memsync,
    read_agentdb_rows,
    require_node_modules,
    status_json,
    stop_daemon,
    wait_for,
    wait_started,
    write_config,
)
from harness import live_agent_argv


# -- helpers (local to this file) ----------------------------------------------------------------
def sync_once(site: SiteFiles) -> str:
    done = memsync("sync", "--once", "--config", str(site.config), timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return flat(done.stderr)


def assert_nothing_left(site: SiteFiles) -> None:
    """Content hashes are stable: one more pass finds nothing to send."""
    summary = sync_once(site)
    assert "0 new, 0 updated, 0 already there, 0 reused ids kept, 0 quarantined" in summary, summary


def sidecar_cursor(state: Path) -> int:
    if not state.exists():
        return 0
    conn = sqlite3.connect(f"file:{state}?mode=ro", uri=True, timeout=5)
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'cursor'").fetchone()
    except sqlite3.OperationalError:  # schema not there yet
        return 0
    finally:
        conn.close()
    return 0 if row is None else int(row[0])


class LiveAgent:
    """tests/agentdb_gen/agent.mjs --live N: stores N episodes, saving (rewriting the file) after each."""

    def __init__(self, db: Path, count: int, interval_ms: int, seed: int, out: Path) -> None:
        require_node_modules(GEN)
        self.out = out.open("ab")
        self.proc = subprocess.Popen(
            live_agent_argv(db, count, interval_ms=interval_ms, seed=seed, session=f"live-{seed}"),
            stdout=self.out,
            stderr=subprocess.DEVNULL,
        )

    def running(self) -> bool:
        return self.proc.poll() is None

    def finish(self, timeout: float = 120) -> None:
        try:
            code = self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait(10)
            self.out.close()
        assert code == 0, f"live agent exited {code}"


# -- kill -9 ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_kill_9_at_random_points_under_a_live_writer_keeps_exactly_once(
    site_files: Callable[..., SiteFiles], daemons: Callable[..., subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    seed = int(os.environ.get("MEMSYNC_CRASH_SEED", random.SystemRandom().randrange(1_000_000)))
    print(f"kill -9 schedule seed: {seed} (set MEMSYNC_CRASH_SEED={seed} to replay it)")
    rng = random.Random(seed)
    site = site_files("crashy", tmp_path / "agentdb.db")
    log = tmp_path / "daemon.log"
    cycles, kills_while_writing = 30, 0
    # The first writer stores 600 episodes; if kills remain when it is done, smaller ones follow,
    # so that every kill lands while the file is being rewritten.
    writer = LiveAgent(site.agentdb, 600, 15, 1, tmp_path / "agent.out")
    writers = [writer]
    try:
        for cycle in range(cycles):
            if not writer.running() and len(writers) < 6:
                writer.finish()
                writer = LiveAgent(site.agentdb, 150, 15, len(writers) + 1, tmp_path / "agent.out")
                writers.append(writer)
            proc = daemons(site.config, log)
            wait_started(site, proc, log)
            time.sleep(rng.uniform(0.05, 0.8))  # on purpose: the kill lands at a random point of the work
            assert proc.poll() is None, f"cycle {cycle}: the daemon died on its own (exit {proc.returncode})"
            kills_while_writing += writer.running()
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(30) == -signal.SIGKILL
        writer.finish()
    finally:
        for w in writers:
            if w.running():
                w.proc.kill()
                w.proc.wait(10)
            if not w.out.closed:
                w.out.close()
    print(f"{cycles} kills, {kills_while_writing} while an agent was writing; cursor {sidecar_cursor(site.state)}")

    # One last daemon, until it is caught up; then one more pass must find nothing to do.
    rows = read_agentdb_rows(site.agentdb)
    assert len(rows) == 600 + 150 * (len(writers) - 1)
    proc = daemons(site.config, log)

    def caught_up() -> bool:
        assert proc.poll() is None, "the last daemon died"
        return site.hub.exists() and len(hub_episodes(site.hub, "crashy")) >= len(rows)

    wait_for(caught_up, timeout=120, interval=0.2, what="the last daemon to catch up")
    wait_started(site, proc, log)  # SIGTERM before the handlers are in place is not what we test
    assert stop_daemon(proc, timeout=60) == 0
    episodes = assert_exactly_once(site.hub, "crashy", site.agentdb)
    assert len(episodes) == len(rows)
    assert_nothing_left(site)
    report = status_json(site.config)[1]
    assert (report["quarantined"], report["conflicts"], report["backlog"]) == (0, 0, 0), report
    assert report["synced"] == len(rows)


# -- the backbone locked away -----------------------------------------------------------------------
@pytest.mark.slow
def test_backbone_outage_under_writes_is_reported_then_everything_arrives_once(
    daemons: Callable[..., subprocess.Popen[bytes]], agents: Callable[[Path], AgentProcess], tmp_path: Path
) -> None:
    site = write_config(
        tmp_path / "sites",
        "laptop",
        tmp_path / "agentdb.db",
        tmp_path / "hub.db",
        backbone="busy_timeout_ms = 200\n",
        sync="retry_max_wait = 1\n",
    )
    agent = agents(site.agentdb)
    for i in range(5):
        agent.store(episode(i))
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: status_json(site.config)[1]["health"] == "ok", timeout=90, interval=0.3, what="status ok")
    assert len(hub_episodes(site.hub, "laptop")) == 5

    blocker = sqlite3.connect(site.hub, isolation_level=None, timeout=30)
    try:
        blocker.execute("BEGIN EXCLUSIVE")
        locked_at = time.monotonic()
        for i in range(5, 25):
            agent.store(episode(i))
        seen: dict[str, Any] = {}

        def outage_reported() -> bool:
            nonlocal seen
            seen = status_json(site.config)[1]
            # (the hub's path names the test, which names the backbone: leave it out)
            error = str(seen.get("lastError") or "").replace(str(site.hub), "<hub>")
            return "backbone" in error.lower()

        try:
            wait_for(outage_reported, timeout=60, interval=0.3, what="status to report the backbone error")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; last status: {json.dumps(seen)[:2000]}") from None
        assert seen["health"] != "ok", seen
        assert proc.poll() is None, "the daemon died while the backbone was locked"
        # On purpose: the lock is held four seconds in all, to show that nothing gets through it meanwhile.
        time.sleep(max(0.0, 4.0 - (time.monotonic() - locked_at)))
        # Nothing got through the lock.
        assert blocker.execute("SELECT count(*) FROM episodes").fetchone()[0] == 5
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()

    def recovered() -> bool:
        assert proc.poll() is None, "the daemon died after the outage"
        report = status_json(site.config)[1]
        return report["health"] == "ok" and len(hub_episodes(site.hub, "laptop")) >= 25

    wait_for(recovered, timeout=90, interval=0.3, what="everything delivered and status ok again")
    report = status_json(site.config)[1]
    assert report["lastError"] is None
    assert report["backbone"]["reachable"] is True
    assert stop_daemon(proc, timeout=60) == 0
    agent.close()
    episodes = assert_exactly_once(site.hub, "laptop", site.agentdb)
    assert len(episodes) == 25
    assert_nothing_left(site)
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    # The outage is logged once when it starts and once when it ends, not once per retry.
    outage = [e for e in events if e.get("event") == "problem" and e.get("kind") == "backbone"]
    assert len(outage) == 1, outage
    assert "unavailable, retrying" in outage[0]["detail"]
    assert [e for e in events if e.get("event") == "recovered" and e.get("kind") == "backbone"]


# -- SIGTERM in the middle of a backfill ------------------------------------------------------------
@pytest.mark.slow
def test_sigterm_during_a_large_backfill_exits_0_and_resumes_exactly_once(
    make_agentdb: Callable[..., Path],
    site_files: Callable[..., SiteFiles],
    daemons: Callable[..., subprocess.Popen[bytes]],
    tmp_path: Path,
) -> None:
    site = site_files("bigsite", make_agentdb(20000))
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_for(lambda: sidecar_cursor(site.state) > 0, timeout=120, interval=0.02, what="the backfill to start")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0, log.read_text(errors="replace")[-3000:]
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert events[-1].get("event") == "stopped", events[-3:]

    # The sidecar never runs ahead of the hub: every id at or below its cursor is in the hub.
    cursor = sidecar_cursor(site.state)
    print(f"stopped with the cursor at {cursor} of 20000")
    # SIGTERM lets the batch in flight finish and be recorded: the hub holds exactly the rows up to
    # the cursor, and the sidecar a record of each.
    in_hub = [int(e["sourceId"]) for e in hub_episodes(site.hub, "bigsite")]
    assert len(in_hub) == len(set(in_hub))
    missing = set(range(1, cursor + 1)) - set(in_hub)
    assert not missing, f"the cursor passed {len(missing)} rows the hub does not have"
    ahead = sorted(set(in_hub) - set(range(1, cursor + 1)))
    assert not ahead, f"{len(ahead)} rows delivered past the cursor were not recorded: {ahead[:10]}"
    assert status_json(site.config)[1]["synced"] == cursor

    proc = daemons(site.config, log)

    def caught_up() -> bool:
        assert proc.poll() is None, "the restarted daemon died"
        return sidecar_cursor(site.state) == 20000 and len(hub_episodes(site.hub, "bigsite")) >= 20000

    wait_for(caught_up, timeout=240, interval=0.5, what="the backfill to finish after the restart")
    assert stop_daemon(proc, timeout=60) == 0
    episodes = assert_exactly_once(site.hub, "bigsite", site.agentdb)
    assert len(episodes) == 20000
    assert_nothing_left(site)
