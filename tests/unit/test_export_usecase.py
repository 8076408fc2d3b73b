"""Tier: unit. The export use case (``daemon.usecases.memory.export``) in this process, against a real
embedded hub file in a tmp dir: the episodes in the order they reached the hub, the archived ones
after the hot ones, ``since_ms``, ``limit`` and ``site`` cutting it down, a hub never created, a
site with none, and the backbone let go when the reader stops early."""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import SiteFiles
from harness.hub import push_episode

from daemon.site import NeverSynced
from daemon.usecases.memory.export import export
from sync.backbone.hub import HubBackbone
from sync.errors import BackboneNotFound

DAY_MS = 86_400_000
NOW_TS = 1_790_000_000_000
OLD_TS = 1_735_689_600_000  # archived below


def push(hub: HubBackbone, source_id: str, ts: int) -> None:
    push_episode(hub, source_id, task=f"task {source_id}", ts=ts)


def keys(episodes: list[dict[str, Any]]) -> list[str]:
    return [f"{e['sourceSite']}:{e['sourceId']}" + (" (archived)" if e.get("archived") else "") for e in episodes]


@pytest.fixture
def site(site_files: Callable[..., SiteFiles]) -> SiteFiles:
    """laptop: 1 old (archived), 2 a day ago, 3 now; vm: 1 two days ago."""
    site = site_files()
    with closing(HubBackbone(site.hub, "laptop")) as laptop:
        push(laptop, "1", OLD_TS)
        push(laptop, "2", NOW_TS - DAY_MS)
        push(laptop, "3", NOW_TS)
        assert laptop.archive_older_than(1_750_000_000_000, 100) == 1
    with closing(HubBackbone(site.hub, "vm")) as vm:
        push(vm, "1", NOW_TS - 2 * DAY_MS)
    return site


def test_every_episode_the_archived_after_the_hot(site: SiteFiles) -> None:
    settings = site.settings()
    assert keys(list(export(settings))) == ["laptop:2", "laptop:3", "vm:1"]
    assert keys(list(export(settings, archived=True))) == ["laptop:2", "laptop:3", "vm:1", "laptop:1 (archived)"]
    assert keys(list(export(settings, site="laptop", archived=True))) == [
        "laptop:2",
        "laptop:3",
        "laptop:1 (archived)",
    ]


def test_since_and_limit_cut_it_down(site: SiteFiles) -> None:
    settings = site.settings()
    since = NOW_TS - DAY_MS - 1
    assert keys(list(export(settings, since_ms=since, archived=True))) == ["laptop:2", "laptop:3"]
    assert keys(list(export(settings, since_ms=OLD_TS, archived=True)))[-1] == "laptop:1 (archived)"
    assert keys(list(export(settings, limit=2))) == ["laptop:2", "laptop:3"]
    assert list(export(settings, site="laptop", limit=0)) == []  # asked for none: not "no such site"


def test_a_site_with_no_episodes_is_named(site: SiteFiles) -> None:
    with pytest.raises(BackboneNotFound, match="no episodes from site 'desk' in "):
        list(export(site.settings(), site="desk"))
    # Cut down to nothing by a date is an empty export, not an error.
    assert list(export(site.settings(), site="vm", since_ms=NOW_TS)) == []


def test_a_hub_never_created_is_said_and_not_created(site_files: Callable[..., SiteFiles]) -> None:
    site = site_files()
    with pytest.raises(NeverSynced) as raised:
        list(export(site.settings()))
    assert raised.value.hub == site.hub
    assert not site.hub.exists()


def open_files(path: Path) -> int:
    """How many of this process's descriptors are open on ``path`` or its -wal and -shm."""
    names = {str(path), f"{path}-wal", f"{path}-shm"}
    fds = Path("/proc/self/fd")
    return sum(1 for fd in fds.iterdir() if os.path.realpath(fd) in names)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads the process's descriptors from /proc")
def test_the_backbone_is_held_while_read_and_let_go_when_the_reader_stops_early(site: SiteFiles) -> None:
    settings = site.settings()
    hub = site.hub.resolve()
    episodes = export(settings)
    assert open_files(hub) == 0  # nothing opened before the first episode is asked for
    assert next(episodes)["sourceId"] == "2"
    assert open_files(hub) > 0
    episodes.close()
    assert open_files(hub) == 0
