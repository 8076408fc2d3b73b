"""The warm layer as a user meets it: a running daemon indexes what its agent writes, `memsync search`
finds it through the daemon (which owns the embedded store) or in-process when no daemon runs,
a collection built with another model is refused until `memsync reindex`, and an exhausted
embedding quota shows in `status` while syncing carries on.

Real parts throughout: the agentdb package writes, the daemon runs as a process, the local
MiniLM embeds, qdrant-edge stores; Gemini is a real HTTP server on 127.0.0.1 speaking its API."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import AgentProcess, SiteFiles, episode, memsync, status_json, stop_daemon, wait_for, wait_started
from fake_providers import KEY, FakeProvider, gemini_respond, google_error, serve

Daemons = Callable[..., subprocess.Popen[bytes]]


def warm_site(
    site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path, warm: str = "", catch_up: float = 0.5
) -> SiteFiles:
    settings = f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "laptop.sock"}"\ncatch_up_interval = {catch_up}\n'
    return site_files(warm=settings + warm)


TLS_TASK = "rotate the TLS certificate on the edge proxy"


def run_indexed(site: SiteFiles, daemons: Daemons, log: Path) -> subprocess.Popen[bytes]:
    """Start the site's daemon; return once its agent's episode with TLS_TASK is searchable."""
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: found(site, "TLS certificate", TLS_TASK), what="first index")
    return proc


def search(site: SiteFiles, *args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    done = memsync("search", *args, "--json", "--config", str(site.config), env=env)
    try:
        return done.returncode, json.loads(done.stdout), done.stderr
    except json.JSONDecodeError:
        return done.returncode, {}, done.stderr


def found(site: SiteFiles, query: str, task: str, env: dict[str, str] | None = None) -> bool:
    code, reply, _ = search(site, query, env=env)
    return code == 0 and any(r["task"] == task for r in reply.get("results", []))


def test_a_running_daemon_indexes_what_its_agent_writes_and_serves_search(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Daemons,
) -> None:
    site = warm_site(site_files, short_dir, tmp_path)
    agent = agents(site.agentdb)
    agent.store(episode(1, task=TLS_TASK, tags=["ops"]))
    agent.store(episode(2, task="write unit tests for parse_retry_after"))
    proc = run_indexed(site, daemons, tmp_path / "daemon.log")

    # Written while the daemon runs: searchable through it within seconds.
    task = "nightly backup job timing out, ticket OPS-2291"
    agent.store(episode(3, task=task, output="raised the timeout to 2h"))
    wait_for(lambda: found(site, "OPS-2291", task), timeout=60, what="the new episode to be searchable")
    code, reply, _ = search(site, "OPS-2291", "--limit", "1")
    assert code == 0
    assert reply["via"] == "daemon"
    (top,) = reply["results"]
    assert (top["sourceSite"], top["sourceId"], top["task"]) == ("laptop", "3", task)
    assert "raised the timeout to 2h" in top["text"]

    _, tagged, _ = search(site, "certificate", "--tag", "ops")
    assert [r["sourceId"] for r in tagged["results"]] == ["1"]
    _, elsewhere, _ = search(site, "certificate", "--site", "laptop", "--agent", "nobody")
    assert elsewhere["results"] == []
    code, _, said = search(site, "certificate", "--site", "vm")  # no site of that name
    assert (code, said) == (2, "memsync: search: no site named 'vm' (sites: laptop)\n")

    code, report = status_json(site.config)
    assert report["warm"]["state"] == "ok"
    assert report["warm"]["model"].startswith("all-MiniLM-L6-v2")
    assert report["warm"]["problem"] is None
    assert code == 0, report["reasons"]

    no_key = memsync("search", "certificate", "--rerank", "--config", str(site.config))
    assert no_key.returncode == 2
    assert "--rerank needs a Voyage API key" in no_key.stderr

    human = memsync("search", "parse_retry_after", "--config", str(site.config))
    assert human.returncode == 0
    assert "laptop#2" in human.stdout

    # Without a daemon, the command opens the store itself.
    assert stop_daemon(proc) == 0
    code, offline, _ = search(site, "OPS-2291", "--limit", "1")
    assert code == 0
    assert offline["via"] == "this process"
    assert offline["results"][0]["sourceId"] == "3"


def test_another_sites_episode_is_searchable_as_soon_as_it_reaches_the_hub(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Daemons,
) -> None:
    """On the embedded hub a change to the hub file wakes the warm layer: with a catch-up interval of
    ten minutes, the vm's episode is still searchable on the laptop within seconds."""
    laptop = warm_site(site_files, short_dir, tmp_path, catch_up=600)
    vm = site_files("vm", agentdb=tmp_path / "vm-agentdb.db")
    agents(laptop.agentdb).store(episode(1, task=TLS_TASK))
    run_indexed(laptop, daemons, tmp_path / "laptop.log")

    task = "vm: nightly ledger reconcile job failed with SQLSTATE 40001"
    agents(vm.agentdb).store(episode(1, task=task))
    vm_log = tmp_path / "vm.log"
    wait_started(vm, daemons(vm.config, vm_log), vm_log)
    wait_for(lambda: found(laptop, "SQLSTATE 40001", task), timeout=60, what="the vm's episode on the laptop")
    _, reply, _ = search(laptop, "SQLSTATE 40001", "--limit", "1")
    assert (reply["results"][0]["sourceSite"], reply["results"][0]["sourceId"]) == ("vm", "1")


def test_an_idle_daemon_lets_the_model_go_and_a_search_loads_it_again(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Daemons,
) -> None:
    site = warm_site(site_files, short_dir, tmp_path, warm="unload_after = 1\n")
    agents(site.agentdb).store(episode(1, task=TLS_TASK))
    log = tmp_path / "daemon.log"
    proc = run_indexed(site, daemons, log)

    wait_for(lambda: status_json(site.config)[1]["warm"]["modelLoaded"] is False, what="the idle model let go")
    assert "embedding model let go while idle" in log.read_text(encoding="utf-8")
    # The embedding stack lived in the warm layer's own process, which has exited: the daemon
    # never loaded it (it used to keep onnxruntime, numpy and qdrant-edge for its whole life).
    wait_for(lambda: not children(proc.pid), what="the warm layer's process to exit")
    assert not heavy_libraries(proc.pid)
    human = memsync("status", "--config", str(site.config))
    assert "(model let go while idle)" in " ".join(human.stdout.split())  # however the table wraps
    code, reply, _ = search(site, "certificate", "--limit", "1")
    assert code == 0
    assert reply["via"] == "daemon"
    assert reply["results"][0]["sourceId"] == "1"
    # The search loaded the model again, in a warm layer process of its own: with a one-second
    # idle limit that process may already have let it go by the time we look (a loaded machine),
    # so the proof is the second "let go" in the log, which only a second load can write.
    wait_for(
        lambda: log.read_text(encoding="utf-8").count("embedding model let go while idle") >= 2,
        what="the model the search loaded let go again",
    )
    assert not heavy_libraries(proc.pid)


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found.extend(int(child) for child in text.split())
    return found


def heavy_libraries(pid: int) -> set[str]:
    """The embedding stack's native libraries mapped into a process."""
    maps = Path(f"/proc/{pid}/maps").read_text()
    return {name for name in ("onnxruntime", "qdrant_edge", "tokenizers", "numpy") if name in maps}


def test_bad_search_input_is_named(site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path) -> None:
    site = warm_site(site_files, short_dir, tmp_path)
    done = memsync("search", "x", "--since", "last tuesday", "--config", str(site.config))
    assert done.returncode == 2
    assert "--since 'last tuesday'" in done.stderr
    done = memsync("search", "   ", "--config", str(site.config))
    assert done.returncode == 2
    assert "the query is empty" in done.stderr


@pytest.fixture
def gemini() -> Iterator[FakeProvider]:
    yield from serve(gemini_respond)


def test_another_model_is_refused_until_reindex_which_works_through_the_daemon(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Daemons,
    gemini: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMSYNC_WARM__API_KEY", KEY)  # the daemons inherit it, as from a unit's environment
    site = warm_site(site_files, short_dir, tmp_path)
    agent = agents(site.agentdb)
    for i, task in enumerate(["deploy billing to staging", "fix E11000 duplicate key on users.email"], 1):
        agent.store(episode(i, task=task))
    assert memsync("sync", "--once", "--config", str(site.config)).returncode == 0
    built = memsync("reindex", "--config", str(site.config))
    assert built.returncode == 0, built.stderr
    # `sync` indexed both; with the same model, the rebuild copies their vectors rather than embed.
    assert "0 embedded" in built.stderr
    assert found(site, "E11000", "fix E11000 duplicate key on users.email")

    # The same site, now configured for Gemini: the MiniLM collection must not take its vectors.
    gemini_site = warm_site(site_files, short_dir, tmp_path, warm=f'embedder = "gemini"\nbase_url = "{gemini.url}"\n')
    env = {"MEMSYNC_WARM__API_KEY": KEY}
    refused = memsync("search", "E11000", "--config", str(gemini_site.config), env=env)
    assert refused.returncode == 78
    assert "all-MiniLM-L6-v2" in refused.stderr
    assert "gemini/gemini-embedding-001" in refused.stderr
    assert KEY not in refused.stderr

    log = tmp_path / "gemini-daemon.log"
    proc = daemons(gemini_site.config, log)
    wait_started(gemini_site, proc, log)
    agent.store(episode(3, task="rotate the TLS certificate"))

    def needs_reindex() -> bool:
        _, report = status_json(gemini_site.config, env=env)
        return bool(report["warm"]["state"] == "needs-reindex" and report["synced"] == 3)

    wait_for(needs_reindex, what="the daemon to report the mismatch while it keeps syncing")
    code, report = status_json(gemini_site.config, env=env)
    assert code == 1
    assert any("memsync reindex" in reason for reason in report["reasons"])

    rebuilt = memsync("reindex", "--config", str(gemini_site.config), env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert "reindexed (daemon): 3 embedded" in rebuilt.stderr
    wait_for(lambda: found(gemini_site, "TLS certificate", "rotate the TLS certificate", env=env), what="gemini search")
    code, reply, _ = search(gemini_site, "E11000", env=env)
    assert reply["via"] == "daemon"
    assert len(gemini.requests) >= 2
    _, report = status_json(gemini_site.config, env=env)
    assert report["warm"]["model"] == "gemini/gemini-embedding-001"
    assert report["warm"]["state"] == "ok"
    # Only the new collection remains.
    collections = [p.name for p in (tmp_path / "warm" / "qdrant").iterdir()]
    assert len(collections) == 1
    assert collections[0].startswith("agent_memory_hybrid-")
    assert KEY not in log.read_text()
    assert stop_daemon(proc) == 0


def _exhausted(path: str, body: Any) -> tuple[int, dict[str, str], Any]:
    daily = [
        {
            "@type": "type.googleapis.com/google.rpc.QuotaFailure",
            "violations": [{"quotaId": "EmbedContentRequestsPerDayPerProjectPerModel-FreeTier"}],
        }
    ]
    return 429, {}, google_error(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota", daily)


@pytest.fixture
def exhausted_gemini() -> Iterator[FakeProvider]:
    yield from serve(_exhausted)


def test_an_exhausted_quota_pauses_indexing_shows_in_status_and_syncing_goes_on(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Daemons,
    exhausted_gemini: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMSYNC_WARM__API_KEY", KEY)
    site = warm_site(
        site_files, short_dir, tmp_path, warm=f'embedder = "gemini"\nbase_url = "{exhausted_gemini.url}"\n'
    )
    agent = agents(site.agentdb)
    agent.store(episode(1, task="deploy billing to staging"))
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: status_json(site.config)[1]["warm"]["state"] == "paused", what="indexing to pause")
    agent.store(episode(2, task="rotate the TLS certificate"))
    wait_for(lambda: status_json(site.config)[1]["synced"] == 2, what="syncing to go on")
    code, report = status_json(site.config)
    assert code == 1
    assert report["warm"]["pausedUntil"] is not None
    assert any("indexing paused until" in r and "quota" in r for r in report["reasons"])
    assert len(exhausted_gemini.requests) <= 2  # paused, not failing in a loop
    human = memsync("status", "--config", str(site.config))
    assert "indexing paused until" in human.stdout
    assert stop_daemon(proc) == 0
    assert KEY not in log.read_text()
