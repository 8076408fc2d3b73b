"""Tier: e2e.

A typo in agentdb.path: with even the file's folder missing, no agent is likely ever to write
there, so a running daemon's status is degraded at once, naming the folder, and its log says so as
a warning; a missing file in a folder that exists is an agent that has not written yet (ok)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SiteFiles, status_json, wait_for, wait_started
from harness import logged

Daemons = Callable[..., subprocess.Popen[bytes]]


@pytest.mark.parametrize(
    ("folder", "level", "health"),
    [
        pytest.param("agnet", "warning", "degraded", id="a typo: the folder is missing too"),
        pytest.param(".", "info", "ok", id="an agent that has not written yet"),
    ],
)
def test_a_missing_agentdb_file_is_degraded_only_when_its_folder_is_missing_too(
    site_files: Callable[..., SiteFiles], daemons: Daemons, tmp_path: Path, folder: str, level: str, health: str
) -> None:
    agentdb = tmp_path / folder / "agentdb.db"
    site = site_files(agentdb=agentdb)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    wait_for(lambda: bool(logged(log, "waiting for the AgentDB file to be created")), what="the wait said")
    (said,) = logged(log, "waiting for the AgentDB file to be created")
    assert said["level"] == level, said
    code, report = status_json(site.config)
    assert report["health"] == health, report
    if health == "ok":
        assert (code, report["reasons"]) == (0, []), report
    else:
        assert code == 1
        assert any(f"folder {agentdb.parent} does not exist" in r for r in report["reasons"]), report
