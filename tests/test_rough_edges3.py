"""Tier: e2e.

The smaller rough edges issue 28's newcomer met, each as they met it, through the real CLI in child
processes: a heartbeat whose state path is unusable, a forgotten -c, --site with a name no site
has, `memsync jobs` on an 80-column terminal, and status's counts after a forget."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from conftest import SiteFiles, memsync

from sync.errors import EX_CONFIG


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in done.stderr, done.stderr
    (line,) = [line for line in done.stderr.splitlines() if line.strip()]
    return line


def test_a_heartbeat_whose_state_path_is_unusable_says_why(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path], tmp_path: Path
) -> None:
    site = site_files(agentdb=make_agentdb(2))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    site.config.write_text(site.config.read_text().replace(str(site.state), str(blocker / "laptop.state.db")))
    done = memsync("heartbeat", "--agent", "coder", "--config", str(site.config))
    assert done.returncode == EX_CONFIG, done.stderr
    line = one_line(done)
    assert f"{blocker} (state.path)" in line, line
    assert "it is a file, not a folder" in line, line


def test_a_forgotten_config_file_is_named_as_such(tmp_path: Path) -> None:
    for command in (["status"], ["sync"], ["heartbeat", "--agent", "coder"]):
        done = memsync(*command, env={"MEMSYNC_CONFIG": ""}, cwd=tmp_path)
        assert done.returncode == EX_CONFIG, done.stderr
        line = one_line(done)
        assert "no config file given: pass the site's config with -c FILE, or set MEMSYNC_CONFIG" in line, line
        assert "missing key" not in line
