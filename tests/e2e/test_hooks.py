"""Search as agents use it, and hooks that wait: ``sync`` indexes what it synced, a search with no
daemon never answers silently from a stale index, and ``sync --wait [--searchable]`` returns only
once the file's episodes are in the backbone (and the index), with or without a daemon."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

from conftest import AgentProcess, SiteFiles, episode, hub_episodes, memsync, status_json, wait_started

Daemons = Callable[..., subprocess.Popen[bytes]]


def warm_site(
    site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path, agentdb: Path, **options: str
) -> SiteFiles:
    warm = f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "laptop.sock"}"\ncatch_up_interval = 30\n'
    return site_files("laptop", agentdb, warm=warm, **options)


def search(site: SiteFiles, query: str) -> tuple[dict[str, object], str]:
    done = memsync("search", query, "--json", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout), done.stderr


def ids(reply: dict[str, object]) -> list[str]:
    results = reply["results"]
    assert isinstance(results, list)
    return [str(r["sourceId"]) for r in results]


def test_sync_indexes_what_it_synced_so_a_search_right_after_finds_it(
    site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path, agents: Callable[[Path], AgentProcess]
) -> None:
    agentdb = tmp_path / "agentdb.db"
    agent = agents(agentdb)
    local_id = agent.store(episode(1, task="implement_auth for the billing api"))
    site = warm_site(site_files, short_dir, tmp_path, agentdb)
    done = memsync("sync", "--once", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    assert "indexed for search: 1 embedded" in done.stderr
    reply, warning = search(site, "implement_auth")
    assert reply["via"] == "this process"
    assert ids(reply)[0] == str(local_id)
    assert warning == ""
    _, report = status_json(site.config)
    assert report["warm"]["behind"] == 0


def test_a_search_without_daemon_catches_a_little_up_and_says_when_it_cannot(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    make_agentdb: Callable[..., Path],
    agents: Callable[[Path], AgentProcess],
) -> None:
    agentdb = make_agentdb(250)
    site = warm_site(site_files, short_dir, tmp_path, agentdb)
    unindexed = {"MEMSYNC_WARM__ENABLED": "false"}  # synced by a memsync that does not index
    assert memsync("sync", "--config", str(site.config), env=unindexed).returncode == 0
    _code, report = status_json(site.config)
    assert report["warm"]["behind"] == 250
    done = memsync("status", "--config", str(site.config))
    assert "250 episodes behind" in done.stdout
    reply, warning = search(site, "anything")
    assert "the search index is 250 episodes behind and no daemon is running" in warning
    assert "memsync sync" in warning
    assert reply["warning"] == warning.removeprefix("memsync: ").strip()

    # A little behind: the search indexes it first and finds the new episode.
    assert memsync("sync", "--config", str(site.config)).returncode == 0  # indexes the 250
    agent = agents(agentdb)
    new_id = agent.store(episode(999, task="zanzibar_migration of the ledger tables"))
    assert memsync("sync", "--config", str(site.config), env=unindexed).returncode == 0
    reply, warning = search(site, "zanzibar_migration")
    assert warning == ""
    assert ids(reply)[0] == str(new_id)


def test_a_hook_waits_for_its_episode_while_a_daemon_runs_beside_a_live_writer(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Daemons,
) -> None:
    agentdb = tmp_path / "agentdb.db"
    agent = agents(agentdb)
    agent.store(episode(1))
    site = warm_site(site_files, short_dir, tmp_path, agentdb)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)

    background = agents(agentdb.with_name("noise.db"))  # another writer keeps the machine busy
    stop = threading.Event()

    def noise() -> None:
        i = 0
        while not stop.is_set():
            background.store(episode(10_000 + i))
            i += 1

    writer = threading.Thread(target=noise)
    writer.start()
    try:
        for i in range(3):
            local_id = agent.store(episode(100 + i, task=f"hook_episode_{i} quokka"))
            done = memsync("sync", "--once", "--wait", "--config", str(site.config))
            assert done.returncode == 0, done.stderr
            assert "synced by the daemon" in done.stderr
            held = {e["sourceId"] for e in hub_episodes(site.hub, "laptop")}
            assert str(local_id) in held, "the hook returned before its episode was in the backbone"

        local_id = agent.store(episode(200, task="searchable_hook_episode wombat"))
        done = memsync("sync", "--wait", "--searchable", "--config", str(site.config))
        assert done.returncode == 0, done.stderr
        assert "searchable" in done.stderr
        reply, _ = search(site, "searchable_hook_episode")
        assert reply["via"] == "daemon"
        assert ids(reply)[0] == str(local_id)
    finally:
        stop.set()
        writer.join(30)


def test_a_hook_that_cannot_be_served_in_time_gets_75_and_the_reason(
    site_files: Callable[..., SiteFiles], tmp_path: Path, make_agentdb: Callable[..., Path], daemons: Daemons
) -> None:
    site = site_files("laptop", make_agentdb(5), backbone="busy_timeout_ms = 20")
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    holder = sqlite3.connect(site.hub, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # every push waits
    try:
        shutil.copy(make_agentdb(30, seed=3, name="more.db"), site.agentdb)
        # The lock is held throughout: no pass can finish, however long the wait; 6 s leaves a loaded
        # machine time to start the pass and record why it cannot finish.
        done = memsync("sync", "--wait", "--timeout", "6", "--config", str(site.config))
        assert done.returncode == 75
        assert "did not finish a pass within 6s" in done.stderr
        assert "database is locked" in done.stderr
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_without_a_daemon_wait_and_searchable_mean_this_process_does_both(
    site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path, agents: Callable[[Path], AgentProcess]
) -> None:
    agentdb = tmp_path / "agentdb.db"
    local_id = agents(agentdb).store(episode(1, task="platypus_hook ran alone"))
    site = warm_site(site_files, short_dir, tmp_path, agentdb)
    done = memsync("sync", "--wait", "--searchable", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    assert {e["sourceId"] for e in hub_episodes(site.hub, "laptop")} == {str(local_id)}
    reply, _ = search(site, "platypus_hook")
    assert ids(reply) == [str(local_id)]
