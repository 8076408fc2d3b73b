"""The server's duties (``daemon.duties``), picked by the factory for each backbone: on the embedded
hub the site does them (its sweeps, press polling, the digest through its outbox); on Convex it asks
the deployment (one ``digest:send`` call) or leaves the work to it, calling nothing. Another site's
episode: the hub's site forgets it in the shared file; a Convex site only with the operator's deploy
key. A real hub file; Convex's HTTP API faked at its transport."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import SiteFiles, hub_episodes

from daemon.alerts.store import AlertStore
from daemon.duties import OPERATOR_KEY_ENV, OperatorRefused
from daemon.site import duties_of, open_backbone
from sync.backbone.base import Forgotten, PushItem
from sync.backbone.convex import ConvexBackbone
from sync.backbone.hub import HubBackbone
from sync.episode import canonical_json


def test_the_hub_site_does_its_servers_work(site_files: Callable[..., SiteFiles]) -> None:
    settings = site_files("laptop").settings()
    with closing(open_backbone(settings)) as hub:
        assert isinstance(hub, HubBackbone)
        duties = duties_of(settings, hub)
        assert duties.where == "the hub file"
        assert duties.sweeps is hub
        note = duties.announce_approval("1", new=True)  # Telegram is off: nothing sent, a person told how
        assert note is not None
        assert "Telegram is off" in note
        assert "`memsync approvals approve 1`" in note
        assert "`memsync jobs run daily-digest`" in duties.digest_builder()
        with closing(AlertStore(settings.alerts_path)) as store:
            presses = duties.presses(store, lambda: open_backbone(settings))  # a client of its own
            assert presses is not None
            assert presses.reconcile() == 0  # no approval message to keep true yet
            presses.close()


def test_convex_asks_the_deployment_or_leaves_the_work_to_it(
    site_files: Callable[..., SiteFiles], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSYNC_BACKBONE__SITE_SECRET", "site-secret")
    files = site_files("laptop", kind="convex", backbone='url = "https://deployment.example"\n')
    settings = files.settings()
    calls: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls.append({"url": str(request.url), "path": body["path"]})
        return httpx.Response(200, json={"status": "success", "value": {"day": "2026-11-24"}})

    with closing(open_backbone(settings, create=False, transport=httpx.MockTransport(answer))) as convex:
        assert isinstance(convex, ConvexBackbone)
        duties = duties_of(settings, convex)
        assert duties.where == "the Convex deployment"
        assert duties.sweeps is None
        assert duties.empty_forgotten() is None  # no file of ours holds the deployment's text
        assert duties.announce_approval("1", new=True) is None
        assert duties.announce_approval("1", new=False) is None
        with closing(AlertStore(settings.alerts_path)) as store:
            assert duties.presses(store, lambda: pytest.fail("no client: the webhook receives presses")) is None
        assert calls == []  # the deployment announces its approvals itself
        said = duties.send_digest("2026-11-25", {"sites": []})
    assert said == "digest for 2026-11-24 queued by the deployment for Telegram"  # the day it sent
    assert calls == [{"url": "https://deployment.example/api/mutation", "path": "digest:send"}]
    assert duties.digest_builder().startswith("Convex's crons build")


def test_the_hub_site_forgets_another_sites_episode_in_the_shared_file(
    site_files: Callable[..., SiteFiles],
) -> None:
    settings = site_files("laptop").settings()
    body = {"sessionId": "s", "task": "t", "ts": 1000, "createdAt": 1000, "output": "the vm's text"}
    with closing(HubBackbone(settings.hub_path, "vm")) as vm:
        vm.push([PushItem("1", 1, "identity-1", "c1", body, canonical_json(body))], cursor=1)
    with closing(open_backbone(settings)) as hub:
        duties = duties_of(settings, hub)
        assert duties.forget_elsewhere("vm", "1") == Forgotten(deleted=True)
        assert duties.forget_elsewhere("vm", "1") == Forgotten(deleted=False)  # gone already
        assert duties.forget_elsewhere("vm", "2") == Forgotten(deleted=False)  # never there
    assert hub_episodes(settings.hub_path) == []


def test_after_a_forget_the_hub_site_empties_the_hubs_wal_or_names_it(site_files: Callable[..., SiteFiles]) -> None:
    settings = site_files("laptop").settings()
    with closing(open_backbone(settings)) as hub:
        duties = duties_of(settings, hub)
        assert Path(f"{settings.hub_path}-wal").stat().st_size > 0  # the schema's frames
        with closing(sqlite3.connect(settings.hub_path, isolation_level=None)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM episodes").fetchall()  # another process's read, left open
            assert duties.empty_forgotten() == f"{settings.hub_path}-wal"
            reader.execute("COMMIT")
        assert duties.empty_forgotten() is None
        assert Path(f"{settings.hub_path}-wal").stat().st_size == 0


def test_convex_forgets_another_sites_episode_only_with_the_deploy_key(
    site_files: Callable[..., SiteFiles], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSYNC_BACKBONE__SITE_SECRET", "site-secret")
    monkeypatch.delenv(OPERATOR_KEY_ENV, raising=False)
    files = site_files("laptop", kind="convex", backbone='url = "https://deployment.example"\n')
    settings = files.settings()
    calls: list[dict[str, Any]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        calls.append({"url": str(request.url), "auth": request.headers.get("authorization"), **body})
        if request.headers.get("authorization") != "Convex the-deploy-key":
            return httpx.Response(401, json={"code": "Unauthorized"})
        return httpx.Response(200, json={"status": "success", "value": {"deleted": True, "archiveWeek": "2026-W47"}})

    with closing(open_backbone(settings, create=False, transport=httpx.MockTransport(answer))) as convex:
        duties = duties_of(settings, convex)
        assert duties.forget_elsewhere("vm", "1") is None  # this site's secret reaches only its own
        assert calls == []

        monkeypatch.setenv(OPERATOR_KEY_ENV, " the-deploy-key\n")
        assert duties.forget_elsewhere("vm", "1") == Forgotten(deleted=True, archive_week="2026-W47")
        assert calls == [
            {
                "url": "https://deployment.example/api/action",
                "auth": "Convex the-deploy-key",
                "path": "episodes:forgetAny",
                "args": {"sourceSite": "vm", "sourceId": "1"},
                "format": "json",
            }
        ]

        monkeypatch.setenv(OPERATOR_KEY_ENV, "a-stale-key")
        with pytest.raises(OperatorRefused) as refused:
            duties.forget_elsewhere("vm", "1")
    assert str(refused.value) == (
        "the deployment https://deployment.example refused the deploy key in CONVEX_DEPLOY_KEY: copy a current "
        "one from the Convex dashboard (Settings, Deploy keys) for this deployment"
    )
    assert "a-stale-key" not in str(refused.value)
