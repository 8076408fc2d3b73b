"""Tier: e2e.

Through the real CLI, whatever the hour: the day `memsync jobs run daily-digest` builds is the day
`memsync digest` then shows (yesterday), never "no digest" for it. The hours before the 06:00 slot,
where they once disagreed, are each checked in tests/test_digest_day.py with an injected clock."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from conftest import SiteFiles, memsync


def yesterday() -> str:
    return (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%d")


def test_the_day_a_manual_digest_run_builds_is_the_day_digest_shows(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    site = site_files(agentdb=make_agentdb(4))
    config = str(site.config)
    assert memsync("sync", "--config", config).returncode == 0
    for _ in range(2):  # once more if the UTC day turned between the two commands
        before = yesterday()
        ran = memsync("jobs", "run", "daily-digest", "--config", config)
        assert ran.returncode == 0, ran.stderr
        built = re.findall(r"digest for (\d{4}-\d{2}-\d{2})", ran.stderr)
        shown = memsync("digest", "--json", "--config", config)
        if yesterday() == before:
            break
    assert built == [before], ran.stderr
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["day"] == before
