"""The engine and run loop, in process, against files written live by the real agentdb package."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import (
    GEN,
    V3ALPHA,
    V139,
    AgentProcess,
    FakeClock,
    SiteFiles,
    assert_exactly_once,
    episode,
    hub_episodes,
    read_agentdb_rows,
    require_node_modules,
    wait_for,
    wal_commits,
)
from harness import run_live_agent

from daemon.loop.runner import Daemon
from daemon.site import Site, open_backbone, retry_policy
from sync.backbone.base import PushItem, PushResult
from sync.backbone.hub import HubBackbone
from sync.errors import BackboneRejected
from sync.retry import RetryPolicy

Agents = Callable[[Path], AgentProcess]
Files = Callable[..., SiteFiles]


@pytest.fixture
def open_site() -> Iterator[Callable[..., Site]]:
    opened: list[Site] = []

    def make(
        files: SiteFiles,
        *,
        clock: Callable[[], float] = time.time,
        window: int | None = None,
        full_check_slice: int | None = None,
    ) -> Site:
        settings = files.settings()
        if window is not None:
            settings = settings.model_copy(update={"sync": settings.sync.model_copy(update={"window": window})})
        site = Site(settings, open_backbone(settings), retry=retry_policy(settings), clock=clock)
        if full_check_slice is not None:
            site.engine.full_check_slice = full_check_slice  # not a setting: small slices make the test short
        opened.append(site)
        return site

    yield make
    for site in opened:
        site.close()


def test_a_backfill_delivers_every_episode_once_and_then_nothing(
    make_agentdb: Callable[..., Path], site_files: Files, open_site: Callable[..., Site]
) -> None:
    files = site_files(agentdb=make_agentdb(400, edge_cases=True))
    site = open_site(files)
    report = site.engine.run_pass()
    assert (report.inserted, report.quarantined, report.cursor, report.backlog) == (400, 0, 400, 0)
    assert_exactly_once(files.hub, "laptop", files.agentdb)
    again = site.engine.run_pass()
    assert (again.inserted, again.updated, again.read) == (0, 0, 0)
    cursor = site.backbone.site_cursor()
    assert cursor is not None
    assert (cursor.last_synced_id, cursor.total_synced) == (400, 400)


def test_a_live_writer_syncs_exactly_once_with_identical_content(
    tmp_path: Path, site_files: Files, agents: Agents
) -> None:
    require_node_modules(GEN)
    files = site_files(agentdb=tmp_path / "live.db")
    creator = agents(files.agentdb)
    creator.store(episode(0))  # an agent creates the file, then leaves
    creator.close()
    stop = threading.Event()
    daemon = Daemon(files.settings(), stop=stop, install_signals=False)
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:
        saves = run_live_agent(files.agentdb, 150, interval_ms=5, seed=9, timeout=120)
        assert len(saves) == 150
        wait_for(lambda: len(hub_episodes(files.hub, "laptop")) >= 151, what="all 151 episodes in the hub")
    finally:
        stop.set()
        daemon.wake.set()
        thread.join(20)
    assert not thread.is_alive()
    assert len(assert_exactly_once(files.hub, "laptop", files.agentdb)) == 151


@pytest.mark.parametrize(
    "writer",
    [
        pytest.param(V139, id="agentdb 1.3.9: WAL commits"),
        pytest.param(V3ALPHA, id="agentdb 3.0.0-alpha: temp file and rename"),
    ],
)
def test_other_real_writers_sync_exactly_once_while_they_write(tmp_path: Path, site_files: Files, writer: Path) -> None:
    require_node_modules(writer)
    files = site_files(agentdb=tmp_path / "other.db")
    stop = threading.Event()
    daemon = Daemon(files.settings(), stop=stop, install_signals=False)
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:
        done = subprocess.run(
            ["node", str(writer / "writer.mjs"), str(files.agentdb), "25", "40", "1500"],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        stored = [json.loads(line)["stored"] for line in done.stdout.splitlines() if '"stored"' in line]
        assert stored == list(range(1, 26))
        wait_for(lambda: len(hub_episodes(files.hub, "laptop")) >= 25, what="all 25 episodes in the hub")
    finally:
        stop.set()
        daemon.wake.set()
        thread.join(20)
    assert not thread.is_alive()
    assert len(assert_exactly_once(files.hub, "laptop", files.agentdb)) == 25


def test_a_reused_id_keeps_both_episodes_and_records_the_conflict(
    tmp_path: Path, site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    files = site_files(agentdb=tmp_path / "race.db")
    first = agents(files.agentdb)
    first.store(episode(1, task="first writer, first episode"))
    site = open_site(files)
    site.engine.run_pass()
    second = agents(files.agentdb)
    second.reload()  # holds the file as it is now: it knows only id 1
    reused = first.store(episode(2, task="first writer's episode"))
    assert site.engine.run_pass().inserted == 1
    assert second.store(episode(3, task="second writer's episode")) == reused  # the race: same id
    report = site.engine.run_pass()
    assert (report.reused, report.inserted) == (1, 1)
    by_key = {e["sourceId"]: e["task"] for e in hub_episodes(files.hub, "laptop")}
    assert by_key == {
        "1": "first writer, first episode",
        str(reused): "first writer's episode",
        f"{reused}~1": "second writer's episode",
    }
    (conflict,) = site.sidecar.conflicts()
    assert (conflict.local_id, conflict.kept_source_id, conflict.new_source_id) == (reused, str(reused), f"{reused}~1")
    assert site.engine.run_pass().changed_anything() is False  # settled


def test_edits_update_the_remote_episode_in_place(
    make_agentdb: Callable[..., Path], site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    files = site_files(agentdb=make_agentdb(100))
    clock = FakeClock()
    site = open_site(files, window=10, clock=clock)
    site.engine.run_pass()
    first_synced = {e["sourceId"]: e["syncedAt"] for e in hub_episodes(files.hub, "laptop")}
    agent = agents(files.agentdb)
    agent.update(95, reward=0.99, critique="re-graded")  # inside the window
    agent.update(3, output="rewritten long after")  # far behind the cursor
    clock.now += 1
    recent = site.engine.run_pass()
    assert (recent.updated, recent.full_scan) == (1, False)
    assert site.engine.full_check_due() is False
    clock.now += 61
    assert site.engine.full_check_due() is True  # the daemon runs a pass for this even if the file is quiet
    full = site.engine.run_pass()
    assert (full.updated, full.full_scan) == (1, True)
    hub = {e["sourceId"]: e for e in hub_episodes(files.hub, "laptop")}
    assert (hub["95"]["reward"], hub["95"]["critique"], hub["3"]["output"]) == (
        0.99,
        "re-graded",
        "rewritten long after",
    )
    assert hub["95"]["syncedAt"] == first_synced["95"], "syncedAt is the first receipt"
    assert len(hub) == 100
    assert_exactly_once(files.hub, "laptop", files.agentdb)


def test_the_full_re_check_runs_in_slices_after_new_rows_and_only_when_the_file_changed(
    make_agentdb: Callable[..., Path], site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    files = site_files(agentdb=make_agentdb(100))
    clock = FakeClock()
    site = open_site(files, window=5, full_check_slice=40, clock=clock)
    first = site.engine.run_pass()
    assert (first.inserted, first.full_done) == (100, True)  # nothing was behind the cursor yet
    agent = agents(files.agentdb)
    agent.update(10, critique="edited long after")
    new_id = agent.store(episode(500))
    second = site.engine.run_pass()
    assert (second.inserted, second.updated, second.full_scan) == (1, 0, False)  # too soon for a full check
    assert not site.engine.full_check_due()
    clock.now += 61
    assert site.engine.full_check_due()  # due although the file is quiet now
    slices = []
    while site.engine.full_check_due():
        report = site.engine.run_pass()
        slices.append((report.updated, report.full_done))
    assert slices == [(1, False), (0, False), (0, True)]  # 40 rows a pass; the edit was in the first
    assert site.sidecar.get_float("last_full_at") == clock.now
    clock.now += 61
    assert not site.engine.full_check_due(), "nothing changed since the last full check began"
    agent.update(60, critique="edited again")
    site.engine.run_pass()  # the change is seen...
    clock.now += 61
    assert site.engine.full_check_due()  # ...and owes a full check once the interval has passed
    hub = {e["sourceId"]: e for e in hub_episodes(files.hub, "laptop")}
    assert hub["10"]["critique"] == "edited long after"
    assert str(new_id) in hub


def test_a_lost_sidecar_costs_a_re_push_and_no_duplicates(
    tmp_path: Path, site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    files = site_files(agentdb=tmp_path / "a.db")
    first = agents(files.agentdb)
    for i in range(5):
        first.store(episode(i))
    site = open_site(files)
    site.engine.run_pass()
    site.close()
    second = agents(files.agentdb)
    second.reload()
    first.store(episode(10, task="synced, then overwritten"))
    open_site(files).engine.run_pass()
    second.store(episode(11, task="overwrote id 6"))  # id 6 reused while the sidecar...
    for suffix in ("", "-wal", "-shm"):
        Path(f"{files.state}{suffix}").unlink(missing_ok=True)  # ...is lost
    report = open_site(files).engine.run_pass()
    assert (report.inserted, report.unchanged, report.reused) == (1, 5, 1)
    by_key = {e["sourceId"]: e["task"] for e in hub_episodes(files.hub, "laptop")}
    assert by_key["6"] == "synced, then overwritten"
    assert by_key["6~1"] == "overwrote id 6"
    assert len(by_key) == 7


def _store_bad_rows(agent: AgentProcess) -> dict[str, int]:
    """Rows no real agent should write but real files contain, through the package's own handle."""
    ids: dict[str, int] = {"before": agent.store(episode(1))}
    agent.exec("INSERT INTO episodes (session_id, task, metadata) VALUES ('s', 'bad metadata', '{\"a\": 1,')")
    agent.exec("INSERT INTO episodes (session_id, task, output) VALUES ('s', 'invalid utf-8', CAST(X'C3FF' AS TEXT))")
    agent.exec(
        "INSERT INTO episodes (session_id, task, input, output, critique, reward, success, latency_ms,"
        " tokens_used, tags, metadata) VALUES ('s', 'all nulls', NULL, NULL, NULL, NULL, NULL, NULL, NULL,"
        " NULL, NULL)"
    )
    ids["huge"] = agent.store(episode(5, task="huge output", output="y" * (2 * 1024 * 1024)))
    ids["after"] = agent.store(episode(6, task="after the bad ones"))
    return ids


def test_bad_rows_are_quarantined_or_repaired_and_never_block_the_rest(
    tmp_path: Path, site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    files = site_files(agentdb=tmp_path / "bad.db")
    agent = agents(files.agentdb)
    ids = _store_bad_rows(agent)
    site = open_site(files, clock=FakeClock())
    report = site.engine.run_pass()
    assert (report.inserted, report.quarantined, report.cursor) == (5, 1, ids["after"])
    (dead,) = site.sidecar.quarantine()
    assert dead.stage == "read"
    assert "column 'output' is not valid UTF-8" in dead.reason
    hub = {e["task"]: e for e in hub_episodes(files.hub, "laptop")}
    assert hub["huge output"]["output"] == "y" * (2 * 1024 * 1024)
    assert hub["bad metadata"]["metadata"]["_memsync"]["raw"] == {"metadata": '{"a": 1,'}
    assert (hub["all nulls"]["input"], hub["all nulls"]["tags"], hub["all nulls"]["reward"]) == (None, [], None)
    assert hub["after the bad ones"]["sourceId"] == str(ids["after"])
    # The same bad content is not retried on every pass...
    assert site.engine.run_pass().quarantined == 0
    # ...but a fixed row is delivered and leaves the quarantine.
    agent.exec(f"UPDATE episodes SET output = 'fixed' WHERE id = {dead.local_id}")
    site.engine.clock.now += 120  # type: ignore[attr-defined]
    fixed = site.engine.run_pass()
    assert (fixed.inserted, fixed.released) == (1, 1)
    assert site.sidecar.quarantine() == []
    assert_exactly_once(files.hub, "laptop", files.agentdb)


def test_a_retry_request_tries_a_quarantined_row_again(
    tmp_path: Path, site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    files = site_files(agentdb=tmp_path / "q.db")
    agent = agents(files.agentdb)
    agent.exec("INSERT INTO episodes (session_id, task, output) VALUES ('s', 'bad', CAST(X'FF' AS TEXT))")
    site = open_site(files, window=0)
    site.engine.run_pass()
    assert site.sidecar.request_retry() == 1
    retried = site.engine.run_pass()
    assert retried.quarantined == 1  # still bad: back in quarantine, attempts counted
    (entry,) = site.sidecar.quarantine()
    assert (entry.attempts, entry.retry_requested) == (2, False)


class RejectingHub(HubBackbone):
    """The hub, refusing any batch that holds one poison key, as a backbone that validates whole
    requests does (Convex rejects a mutation whose arguments fail validation)."""

    max_batch_rows = 50

    def __init__(self, path: Path, site: str, poison: str) -> None:
        super().__init__(path, site)
        self.poison = poison
        self.calls = 0

    def push(self, items: Sequence[PushItem], cursor: int) -> list[PushResult]:
        self.calls += 1
        if any(i.source_id == self.poison for i in items):
            raise BackboneRejected("ArgumentValidationError: value does not match validator")
        return super().push(items, cursor)


def test_a_batch_refused_as_a_whole_is_split_until_the_poison_row_is_found(
    make_agentdb: Callable[..., Path], site_files: Files
) -> None:
    files = site_files(agentdb=make_agentdb(120))
    backbone = RejectingHub(files.hub, files.name, poison="77")
    settings = files.settings()
    with Site(settings, backbone, retry=retry_policy(settings)) as site:
        report = site.engine.run_pass()
        (dead,) = site.sidecar.quarantine()
    assert (report.inserted, report.quarantined, report.cursor) == (119, 1, 120)
    assert dead.local_id == 77
    assert dead.stage == "backbone"
    assert "ArgumentValidationError" in dead.reason
    assert backbone.calls < 30, "bisection, not one call a row"
    assert "77" not in {e["sourceId"] for e in hub_episodes(files.hub, "laptop")}


def test_an_unavailable_backbone_is_retried_until_it_returns(
    make_agentdb: Callable[..., Path], site_files: Files
) -> None:
    files = site_files(agentdb=make_agentdb(30))
    hub = HubBackbone(files.hub, files.name, busy_timeout_ms=20)
    holder = sqlite3.connect(files.hub, isolation_level=None)
    waits: list[float] = []
    released = threading.Event()

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            state = sqlite3.connect(files.state)
            error = state.execute("SELECT value FROM meta WHERE key = 'last_error'").fetchone()
            state.close()
            assert error is not None
            assert "database is locked" in error[0]
            holder.execute("ROLLBACK")
            released.set()

    with Site(files.settings(), hub, retry=RetryPolicy(initial=0.01, maximum=0.05, sleep=sleep)) as outage:
        holder.execute("BEGIN EXCLUSIVE")  # another process holds the hub
        report = outage.engine.run_pass()
    holder.close()
    assert released.is_set()
    assert len(waits) >= 3
    assert report.inserted == 30
    assert_exactly_once(files.hub, "laptop", files.agentdb)


def test_the_daemon_waits_for_a_missing_file_and_then_syncs_it(
    tmp_path: Path, make_agentdb: Callable[..., Path], site_files: Files
) -> None:
    files = site_files(agentdb=tmp_path / "not-yet" / "agentdb.db")
    stop = threading.Event()
    reports: list[Any] = []
    daemon = Daemon(files.settings(), stop=stop, install_signals=False, on_pass=reports.append)
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:

        def source_error() -> str | None:
            if not files.state.exists():
                return None
            state = sqlite3.connect(files.state)
            try:
                row = state.execute("SELECT value FROM meta WHERE key = 'source_error'").fetchone()
            except sqlite3.OperationalError:  # the daemon made the file but not yet its tables
                return None
            finally:
                state.close()
            return None if row is None else str(row[0])

        wait_for(lambda: (source_error() or "").endswith("does not exist"), what="the missing file reported")
        files.agentdb.parent.mkdir()
        files.agentdb.write_bytes(make_agentdb(20).read_bytes())
        wait_for(lambda: len(hub_episodes(files.hub, "laptop")) == 20, what="the file synced")
        wait_for(lambda: source_error() is None, what="the problem cleared")
    finally:
        stop.set()
        daemon.wake.set()
        thread.join(20)
    assert not thread.is_alive()
    assert sum(r.inserted for r in reports) == 20


def test_attribution_defaults_from_config_fill_the_gaps(
    tmp_path: Path, site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    files = site_files(
        agentdb=tmp_path / "attr.db", extra='\n[site.defaults]\nagent_name = "default-agent"\nllm_provider = "ollama"\n'
    )
    agent = agents(files.agentdb)
    agent.store(episode(1, metadata={"agent_name": "from-metadata"}))
    agent.store(episode(2, metadata=None))
    open_site(files).engine.run_pass()
    rows = {e["sourceId"]: e for e in hub_episodes(files.hub, "laptop")}
    assert (rows["1"]["agentName"], rows["1"]["llmProvider"]) == ("from-metadata", "ollama")
    assert (rows["2"]["agentName"], rows["2"]["llmProvider"]) == ("default-agent", "ollama")
    assert json.dumps(read_agentdb_rows(files.agentdb)[2]["metadata"]) == "null"


def test_a_re_check_converts_only_the_rows_whose_bytes_moved(
    make_agentdb: Callable[..., Path], site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    """The window and the full re-check read every row behind the cursor but convert and hash only
    the ones that changed since they were settled; edits are still caught, in the window and far
    behind it."""
    files = site_files(agentdb=make_agentdb(100))
    clock = FakeClock()
    site = open_site(files, window=50, clock=clock)
    assert site.engine.run_pass().inserted == 100
    agent = agents(files.agentdb)
    new_id = agent.store(episode(500))  # a save rewrites the whole file: every row is read again
    quiet = site.engine.run_pass()
    assert (quiet.inserted, quiet.rechecked) == (1, 0), "nothing behind the cursor moved"
    agent.update(80, reward=0.42)  # in the window
    agent.update(3, output="rewritten long after")  # far behind it: the full re-check's
    edited = site.engine.run_pass()
    assert (edited.updated, edited.rechecked, edited.full_scan) == (1, 1, False)
    clock.now += 61
    full = site.engine.run_pass()
    assert (full.updated, full.rechecked, full.full_done) == (1, 1, True)
    hub = {e["sourceId"]: e for e in hub_episodes(files.hub, "laptop")}
    assert (hub["80"]["reward"], hub["3"]["output"]) == (0.42, "rewritten long after")
    assert str(new_id) in hub
    assert_exactly_once(files.hub, "laptop", files.agentdb)


def test_a_wal_writer_costs_one_pass_per_commit(tmp_path: Path, site_files: Files) -> None:
    """agentdb 1.3.9 commits through better-sqlite3 in WAL mode. The daemon's own reads of the
    database touch -wal and -shm; they must not wake it into passes of its own (they did: about 14
    passes a commit, re-reading and re-hashing the window each time)."""
    require_node_modules(V139)
    files = site_files(agentdb=tmp_path / "wal.db")
    commits = 30
    passes: list[Any] = []
    stop = threading.Event()
    daemon = Daemon(files.settings(), stop=stop, install_signals=False, on_pass=passes.append)
    thread = threading.Thread(target=daemon.run)
    thread.start()
    try:
        wal_commits(files.agentdb, commits)
        wait_for(lambda: len(hub_episodes(files.hub, "laptop")) >= commits, what="every commit in the hub")
    finally:
        stop.set()
        daemon.wake.set()
        thread.join(20)
    assert not thread.is_alive()
    assert_exactly_once(files.hub, "laptop", files.agentdb)
    # One pass per commit, give or take a checkpoint rewriting the main file, the writer's close
    # (which folds the WAL back into it) and the window re-check the burst put off (the old loop ran
    # about 8 per commit here). Counted from the first episode: creating the schema took the writer
    # commits of its own, each rightly worth a pass.
    assert sum(p.inserted for p in passes) == commits
    first = next(i for i, p in enumerate(passes) if p.inserted)
    assert len(passes) - first <= commits + 5, f"{len(passes) - first} passes for {commits} commits"


def test_a_window_re_check_put_off_while_rows_arrive_is_paid_once_they_stop(
    make_agentdb: Callable[..., Path], site_files: Files, agents: Agents, open_site: Callable[..., Site]
) -> None:
    """While an agent appends, the window is re-checked at most once a second; an edit made in the
    middle of a burst is caught by the pass the daemon runs for it once the interval is up."""
    files = site_files(agentdb=make_agentdb(50))
    clock = FakeClock()
    site = open_site(files, window=20, clock=clock)
    site.engine.run_pass()
    agent = agents(files.agentdb)
    agent.update(45, critique="edited mid-burst", save=False)
    agent.store(episode(500))  # the same save brings a new row
    clock.now += 0.5
    busy = site.engine.run_pass()
    assert (busy.inserted, busy.updated) == (1, 0), "put off: rows are arriving"
    assert not site.engine.recheck_due()
    clock.now += 0.6
    assert site.engine.recheck_due(), "the daemon runs a pass for it though the file is quiet"
    owed = site.engine.run_pass()
    assert (owed.inserted, owed.updated) == (0, 1)
    assert not site.engine.recheck_due()
    assert {e["sourceId"]: e for e in hub_episodes(files.hub, "laptop")}["45"]["critique"] == "edited mid-burst"
