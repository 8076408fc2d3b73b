"""Tier: e2e. Two site processes (multiprocessing, spawned) share one hub file."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from test_hub import item

from sync.backbone.hub import HubBackbone


def _push_many(path: str, site: str, count: int) -> None:
    hub = HubBackbone(Path(path), site, busy_timeout_ms=30_000)
    for start in range(0, count, 50):
        hub.push([item(str(i)) for i in range(start + 1, start + 51)], cursor=start + 50)
    hub.close()


def test_two_site_processes_share_one_hub_file(tmp_path: Path) -> None:
    path = str(tmp_path / "hub.db")
    HubBackbone(Path(path), "laptop").close()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_push_many, args=(path, site, 1000)) for site in ("laptop", "vm")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    hub = HubBackbone(Path(path), "laptop")
    episodes = list(hub.episodes())
    assert len(episodes) == 2000
    assert {(e["sourceSite"], e["sourceId"]) for e in episodes} == {
        (site, str(i)) for site in ("laptop", "vm") for i in range(1, 1001)
    }
    hub.close()
    for site in ("laptop", "vm"):
        hub = HubBackbone(Path(path), site)
        cursor = hub.site_cursor()
        hub.close()
        assert cursor is not None
        assert (cursor.last_synced_id, cursor.total_synced) == (1000, 1000)
