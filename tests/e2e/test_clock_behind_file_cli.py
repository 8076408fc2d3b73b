"""Tier: e2e.

`memsync sync` and `status` on an AgentDB file whose time is days ahead of this machine's clock (a
clock stepped back): the sync neither waits the difference out nor fails, and both name the skew.
The file's time is set with os.utime; nothing sleeps."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

from conftest import SiteFiles, hub_episodes, memsync, status_json

DAY_NS = 86_400 * 10**9


def test_a_file_days_ahead_is_synced_at_once_and_the_skew_named(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    site = site_files(agentdb=make_agentdb(12), log_format=None)
    ahead = time.time_ns() + 3 * DAY_NS
    os.utime(site.agentdb, ns=(ahead, ahead))

    synced = memsync("sync", "--config", str(site.config), timeout=120)  # main waited the 3 days out
    assert synced.returncode == 0, synced.stderr
    assert "Invalid argument" not in synced.stderr
    assert "clock behind the AgentDB file" in synced.stderr, synced.stderr
    assert "s ahead of this machine's clock" in " ".join(synced.stderr.split()), synced.stderr
    assert len(hub_episodes(site.hub, site.name)) == 12

    _code, report = status_json(site.config)
    assert report["agentdb"]["aheadOfClock"] > 86_400 * 2
    (said,) = [r for r in report["reasons"] if "ahead of this machine's clock" in r]
    assert said.startswith("the AgentDB file's time is "), said
