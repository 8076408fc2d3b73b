"""The server's duties (``daemon.duties``), picked by the factory for each backbone: on the embedded
hub the site does them (its sweeps, press polling, the digest through its outbox); on Convex it asks
the deployment (one ``digest:send`` call) or leaves the work to it, calling nothing. A real hub file;
Convex's HTTP API faked at its transport."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import closing
from typing import Any

import httpx
import pytest
from conftest import SiteFiles

from daemon.alerts.store import AlertStore
from daemon.site import duties_of, open_backbone
from sync.backbone.convex import ConvexBackbone
from sync.backbone.hub import HubBackbone


def test_the_hub_site_does_its_servers_work(site_files: Callable[..., SiteFiles]) -> None:
    settings = site_files("laptop").settings()
    with closing(open_backbone(settings)) as hub:
        assert isinstance(hub, HubBackbone)
        duties = duties_of(settings, hub)
        assert duties.sweeps is hub
        assert duties.announce_approval("1", new=True) is None  # Telegram is off: nothing to announce
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
        assert duties.sweeps is None
        assert duties.announce_approval("1", new=True) is None
        assert duties.announce_approval("1", new=False) is None
        with closing(AlertStore(settings.alerts_path)) as store:
            assert duties.presses(store, lambda: pytest.fail("no client: the webhook receives presses")) is None
        assert calls == []  # the deployment announces its approvals itself
        said = duties.send_digest("2026-11-25", {"sites": []})
    assert said == "digest for 2026-11-24 queued by the deployment for Telegram"  # the day it sent
    assert calls == [{"url": "https://deployment.example/api/mutation", "path": "digest:send"}]
    assert duties.digest_builder().startswith("Convex's crons build")
