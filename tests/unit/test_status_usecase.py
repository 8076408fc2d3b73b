"""Tier: unit. Status's gathering (``daemon.usecases.fleet.status.gather``) in this process, against a
real embedded hub, sidecar, alerts file and qdrant-edge index in a tmp dir, the site lock held by
this process standing for its daemon: every section of the report read from the files that hold
it, and the health judged from them; status creates nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from conftest import SiteFiles
from harness.hub import push_episode

from daemon.alerts.messages import Message
from daemon.alerts.store import AlertStore, Queued
from daemon.control.lock import SiteLock
from daemon.search_worker.wiring import offline_layer
from daemon.usecases.fleet.status import gather
from sync.backbone.hub import HubBackbone
from sync.push.sidecar import Quarantined, Sidecar

NOW_TS = 1_790_000_000_000
OLD_TS = 1_735_689_600_000  # archived below


def push(hub: HubBackbone, source_id: str, ts: int) -> None:
    push_episode(hub, source_id, task=f"task {source_id}", ts=ts)


@pytest.fixture
def site(site_files: Callable[..., SiteFiles], tmp_path: Path) -> SiteFiles:
    """A site with its search index on, whose agent has not written its AgentDB file yet."""
    return site_files(warm=f'path = "{tmp_path / "warm"}"\n')


def test_a_site_never_synced_is_down_for_its_backbone_and_nothing_is_created(site: SiteFiles) -> None:
    report = gather(site.settings(), now=NOW_TS / 1000)
    assert (report["site"], report["health"], report["exitCode"]) == ("laptop", "down", 2)
    assert report["backbone"]["reachable"] is False
    assert report["backbone"]["error"] is not None
    assert report["reasons"][0] == f"backbone unreachable: {report['backbone']['error']}"
    assert "no daemon running for this site" in report["reasons"]
    assert report["daemon"] == {"running": False, "pid": None, "startedAt": None}
    assert report["agentdb"] == {"path": str(site.agentdb), "readable": False, "error": None, "waiting": True}
    assert (report["cursor"], report["synced"], report["backlog"], report["lagSeconds"]) == (0, 0, 0, 0.0)
    assert report["lastSyncAt"] is None
    warm = report["warm"]
    assert (warm["enabled"], warm.get("state"), warm.get("behind"), warm["problem"]) == (
        True,
        "not running",
        None,
        None,
    )
    assert report["telegram"] == {
        "enabled": False,
        "chat": None,
        "waiting": 0,
        "lastError": None,
        "lastSentAt": None,
        "tokenRefused": None,
    }
    assert (report["pathProblem"], report["sourceRefused"]) == (None, None)
    assert not site.hub.exists()
    assert not site.state.exists()


def test_a_synced_site_with_its_daemon_running_reports_each_file(site: SiteFiles) -> None:
    settings = site.settings()
    with closing(HubBackbone(site.hub, "laptop")) as hub:
        push(hub, "1", OLD_TS)
        push(hub, "2", NOW_TS - 60_000)
        push(hub, "3", NOW_TS)
        assert hub.archive_older_than(1_750_000_000_000, 100) == 1
    sidecar = Sidecar(settings.state_path)
    sidecar.record([], [Quarantined(4, "h4", "read", "not JSON", {"task": "broken"})], [], cursor=3)
    synced_at = NOW_TS / 1000 - 30
    sidecar.set_many({"last_success_at": synced_at, "daemon_started_at": synced_at - 600, "redacted_episodes": 2})
    sidecar.close()
    alerts = AlertStore(settings.alerts_path)
    alerts.enqueue(Queued("digest:2026-01-01", Message("top tasks: ordinary work")))
    alerts.close()

    with SiteLock(settings.lock_path, settings.site.name):
        report = gather(settings, now=NOW_TS / 1000)
        assert report["daemon"]["running"] is True
        assert report["daemon"]["pid"] == os.getpid()
        assert report["daemon"]["startedAt"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(synced_at - 600))
        # One quarantined row is all that is wrong: degraded, and it says so.
        assert (report["health"], report["exitCode"]) == ("degraded", 1)
        assert report["reasons"] == ["1 episode quarantined (see `memsync quarantine list`)"]
        assert (report["cursor"], report["quarantined"], report["conflicts"], report["redacted"]) == (3, 1, 0, 2)
        assert report["lastSyncAt"] == time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(synced_at))
        backbone = report["backbone"]
        assert (backbone["kind"], backbone["reachable"], backbone["error"]) == ("local", True, None)
        assert backbone.get("cursor", {}).get("lastSyncedId") == 3
        archive = backbone.get("archive")
        assert archive is not None
        assert (archive["files"], archive["episodes"]) == (1, 1)
        assert report["telegram"]["waiting"] == 1  # the outbox is read even with Telegram off
        behind = report["warm"].get("behind")
        assert behind is not None
        assert behind > 0  # nothing indexed yet

        with closing(HubBackbone(site.hub, "laptop")) as hub, offline_layer(settings, hub, leases=hub) as layer:
            layer.catch_up()
        indexed = gather(settings, now=NOW_TS / 1000)["warm"]
        assert (indexed.get("behind"), indexed.get("behindExact")) == (0, True)

    stopped = gather(settings, now=NOW_TS / 1000)
    assert stopped["daemon"] == {"running": False, "pid": None, "startedAt": report["daemon"]["startedAt"]}
    assert stopped["warm"].get("state") == "not running"
    assert "no daemon running for this site" in stopped["reasons"]
