"""Tier: e2e. The settings contract through the CLI in a child process: a Convex site refuses what
Convex cannot honour, and the hub's tables reach a daemon's own jobs (the tables: tests/contracts/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import SiteFiles, memsync, write_config
from test_settings_contract import REFUSED


def convex_site(tmp_path: Path, extra: str) -> SiteFiles:
    return write_config(
        tmp_path / "sites",
        "laptop",
        tmp_path / "agentdb.db",
        tmp_path / "unused-hub.db",
        kind="convex",
        backbone='url = "https://happy-otter-123.convex.cloud"\n',
        extra=extra,
    )


@pytest.mark.parametrize("entry", REFUSED, ids=lambda s: s["key"])
def test_on_convex_memsync_refuses_what_convex_cannot_honour(entry: dict[str, Any], tmp_path: Path) -> None:
    site = convex_site(tmp_path, entry["example"]["toml"])
    env = {"MEMSYNC_BACKBONE__SITE_SECRET": "s3cret-of-the-site"}
    for command in (["run"], ["jobs"], ["status"]):
        done = memsync(*command, "--config", str(site.config), env=env, timeout=60)
        assert done.returncode == 78, f"{command}: exit {done.returncode}: {done.stdout} {done.stderr}"
        assert "Traceback" not in done.stderr
        assert "s3cret-of-the-site" not in done.stderr
        told = " ".join(done.stderr.split())
        assert f"{entry['example']['refused']} in {site.config} cannot apply on Convex" in told, told
        assert "remove [jobs.daily-digest] or change crons.ts and deploy it" in told, told


def test_the_same_tables_apply_on_the_hub_and_to_a_daemons_own_jobs(tmp_path: Path) -> None:
    refused = REFUSED[0]["example"]["toml"]
    hub = write_config(tmp_path / "hub", "laptop", tmp_path / "agentdb.db", tmp_path / "hub.db", extra=refused)
    assert hub.settings().jobs.schedules["daily-digest"].cron == "0 7 * * *"
    # A job each daemon runs itself (the search index's, on the edge store) keeps its table on Convex.
    site = convex_site(tmp_path, "[jobs.qdrant-episode-sync]\nevery = 60\n")
    done = memsync("jobs", "--json", "--config", str(site.config), env={"MEMSYNC_BACKBONE__SITE_SECRET": "s"})
    assert "cannot apply on Convex" not in done.stderr, done.stderr
