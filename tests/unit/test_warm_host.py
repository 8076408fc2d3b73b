"""The daemon's side of the warm layer: when its worker process starts and exits, and what a
request meets when the worker cannot run. The worker is a stand-in command here (the lowest seam:
what the host executes); tests/e2e/test_warm_daemon.py runs the real one inside real daemons."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import SiteFiles

from daemon.config import load_settings
from daemon.search_worker.worker import should_exit


@pytest.mark.parametrize(
    ("unload_after", "loaded", "state", "working", "idle", "leave"),
    [
        (600.0, True, "ok", False, 10_000.0, False),  # the model is loaded: the layer lets it go first
        (600.0, False, "ok", False, 5.0, True),  # let go (or never needed): a few idle seconds more
        (600.0, False, "ok", False, 4.9, False),
        (1.0, False, "ok", False, 1.0, True),  # never lingers past unload_after
        (0.0, False, "ok", False, 10_000.0, False),  # unload_after = 0: keep everything loaded
        (600.0, False, "ok", True, 10_000.0, False),  # an indexing run is under way
        (600.0, False, "paused", False, 10_000.0, False),  # it waits out the quota itself
        (600.0, False, "needs-reindex", False, 10_000.0, False),
        (600.0, False, "retrying", False, 10_000.0, False),
    ],
)
def test_when_the_worker_exits(
    site_files: Callable[..., SiteFiles],
    unload_after: float,
    loaded: bool,
    state: str,
    working: bool,
    idle: float,
    leave: bool,
) -> None:
    settings = load_settings(site_files(warm=f"unload_after = {unload_after}\n").config)
    assert should_exit(settings, loaded, state, working, idle) is leave
