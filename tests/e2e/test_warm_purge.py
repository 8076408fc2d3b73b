"""Forgetting purges the search index's files, not only its searches: qdrant-edge keeps a deleted
point's payload in its WAL and segments, so the warm layer rebuilds the collection without it
(copying every other point, embedding nothing) and drops the old one. Checked in the bytes of every
file under the warm data dir, with a positive control (another episode's text is there in the
clear), for a daemon that is running, one that was down when the forget happened, and a purge that
is interrupted (the old collection keeps serving; the purge is still owed and done later)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import AgentProcess, SiteFiles, episode, memsync, stop_daemon, wait_for, wait_started, warm_section

from daemon.search_worker.files import read_status
from daemon.search_worker.wiring import WarmLayer
from sync.backbone.base import Change, PointRecord, PushItem
from sync.backbone.hub import HubBackbone
from sync.episode import canonical_json
from sync.errors import BackboneUnavailable
from sync.search.embedders.local import LocalEmbedder
from sync.search.indexing.text import text_hash
from sync.search.request import SearchRequest

SECRET = "the-vault-combination-is-8812"
OTHER_SECRET = "the-backup-passphrase-is-4471"
KEPT = "rotate the TLS certificate on the edge proxy"


def warm_site(site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path, warm: str = "") -> SiteFiles:
    settings = warm_section(tmp_path, short_dir)
    return site_files(warm=settings + warm)


def index_bytes(folder: Path) -> bytes:
    """Every file of the search index, read around memsync: the engine's WAL, segments, indexes."""
    return b"".join(p.read_bytes() for p in folder.rglob("*") if p.is_file())


def found(site: SiteFiles, query: str) -> list[dict[str, Any]]:
    done = memsync("search", query, "--mode", "bm25", "--json", "--config", str(site.config))
    assert done.returncode == 0, done.stderr
    results: list[dict[str, Any]] = json.loads(done.stdout)["results"]
    return results


def purged(site: SiteFiles, after: float = 0.0) -> bool:
    purge = (read_status(site.settings()) or {}).get("purge") or {}
    return purge.get("state") == "purged" and float(purge.get("at") or 0) > after


def test_a_forget_is_purged_from_the_index_files_by_a_running_daemon_and_by_one_that_was_down(
    site_files: Callable[..., SiteFiles],
    short_dir: Path,
    tmp_path: Path,
    agents: Callable[[Path], AgentProcess],
    daemons: Callable[..., Any],
) -> None:
    site = warm_site(site_files, short_dir, tmp_path)
    warm_dir = tmp_path / "warm"
    agent = agents(site.agentdb)
    agent.store(episode(1, task=KEPT))
    agent.store(episode(2, task="open the vault", output=SECRET))
    agent.store(episode(3, task="check the backups", output=OTHER_SECRET))
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: len(found(site, "vault backups TLS")) == 3, timeout=60, what="the first index")
    assert stop_daemon(proc) == 0
    assert SECRET.encode() in index_bytes(warm_dir)  # what the purge must take away

    # Forgotten by another site of the hub while this site's daemon is down: the daemon drops and
    # purges it when it starts. (A site's own forget purges its own index before it returns.)
    vm = site_files("vm", tmp_path / "vm.db", warm="enabled = false\n")
    forgot = memsync("forget", "laptop:2", "--config", str(vm.config))
    assert forgot.returncode == 0, forgot.stderr
    assert SECRET.encode() in index_bytes(warm_dir)
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: purged(site), timeout=60, what="the restarted daemon to purge")
    files = index_bytes(warm_dir)
    assert SECRET.encode() not in files
    assert KEPT.encode() in files  # the index's files hold payload text in the clear
    assert OTHER_SECRET.encode() in files
    status = read_status(site.settings()) or {}
    assert (status["purge"]["copied"], status["purge"]["embedded"]) == (2, 0)  # copied, not embedded again
    assert [r["sourceId"] for r in found(site, "vault")] == []
    assert {r["sourceId"] for r in found(site, "TLS backups")} == {"1", "3"}

    # Forgotten while the daemon runs: purged by it before forget returns, no `memsync reindex`.
    first = float(status["purge"]["at"])
    forgot = memsync("forget", "laptop:3", "--config", str(site.config))
    assert forgot.returncode == 0, forgot.stderr
    assert "search index on laptop: purged" in forgot.stderr
    assert purged(site, after=first)
    files = index_bytes(warm_dir)
    assert OTHER_SECRET.encode() not in files
    assert KEPT.encode() in files
    assert len(list((warm_dir / "qdrant").iterdir())) == 1  # the old collection is gone with its files
    assert [r["sourceId"] for r in found(site, "TLS certificate")] == ["1"]
    assert stop_daemon(proc) == 0


# --- an interrupted purge, in this process -----------------------------------------------------


class FlakyFeed:
    """The hub's change feed, which goes away (as a network does) while ``failing`` for reads in
    the middle of the feed: where a rebuild reads, and the catch-up pass does not."""

    def __init__(self, hub: HubBackbone, fail_between: tuple[int, int]) -> None:
        self.hub = hub
        self.fail_between = fail_between
        self.failing = False
        self.pages = 0

    def changes(self, after: int, limit: int) -> list[Change]:
        low, high = self.fail_between
        if self.failing and low < after < high:
            raise BackboneUnavailable("the backbone went away mid-purge")
        self.pages += 1
        return self.hub.changes(after, limit)

    def feed_end(self) -> int:
        return self.hub.feed_end()

    def record_point_ids(self, records: Sequence[PointRecord]) -> int:
        return self.hub.record_point_ids(records)

    def archived_records(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        return self.hub.archived_records(keys)

    def close(self) -> None:
        self.hub.close()


def push(hub: HubBackbone, source_id: str, task: str, output: str) -> None:
    body = {"sessionId": "s1", "task": task, "output": output, "ts": 1_790_000_000_000, "agentName": "coder"}
    local_id = int(source_id)
    content = text_hash(canonical_json(body).decode())
    item = PushItem(source_id, local_id, f"identity-{source_id}", content, body, canonical_json(body))
    hub.push([item], local_id)


def test_an_interrupted_purge_leaves_the_old_index_serving_and_is_done_after_a_restart(
    site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    site = warm_site(site_files, tmp_path, tmp_path, warm="batch_size = 2\n")
    settings = site.settings()
    hub = HubBackbone(site.hub, "laptop")
    for i in range(1, 7):
        push(hub, str(i), f"task {i}: rotate the certificate of host db-{i}", SECRET if i == 1 else f"done {i}")
    feed = FlakyFeed(hub, fail_between=(0, 4))
    embedder = LocalEmbedder()
    layer = WarmLayer(settings, feed, stop=threading.Event(), embedder=embedder)
    try:
        assert layer.catch_up().embedded == 6
        active = layer.collections.active()
        hub.forget("1")
        feed.failing = True
        with pytest.raises(BackboneUnavailable):
            layer.catch_up()  # the pass deletes the point, then the purge's rebuild fails mid-feed
        assert layer.collections.active() == active  # no switch: the old collection still serves
        assert [p.name for p in (settings.warm_dir / "qdrant").iterdir()] == [active]  # half-built one dropped
        assert layer.cursor_file.purge_owed(active)
        assert (read_status(settings) or {}).get("purge", {}).get("state") == "failed"
        hits = layer.search(SearchRequest("rotate the certificate", limit=10, mode="bm25", collapse=False))
        assert sorted(h.source_id for h in hits) == ["2", "3", "4", "5", "6"]
        assert SECRET.encode() in index_bytes(settings.warm_dir)
    finally:
        layer.close()

    feed.failing = False
    restarted = WarmLayer(settings, feed, stop=threading.Event(), embedder=embedder)
    try:
        report = restarted.catch_up()  # nothing new in the feed; the purge is still owed
        assert report.changes == 0
        assert restarted.collections.active() != active
        assert not restarted.cursor_file.purge_owed(restarted.collections.active())
        files = index_bytes(settings.warm_dir)
        assert SECRET.encode() not in files
        assert b"done 2" in files
        hits = restarted.search(SearchRequest("rotate the certificate", limit=10, mode="bm25", collapse=False))
        assert sorted(h.source_id for h in hits) == ["2", "3", "4", "5", "6"]
    finally:
        restarted.close()
        hub.close()
