"""Tier: e2e.

The smaller rough edges issue 28's newcomer met, each as they met it, through the real CLI in child
processes: a heartbeat whose state path is unusable, a forgotten -c, --site with a name no site
has, `memsync jobs` on an 80-column terminal, and status's counts after a forget."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from conftest import SiteFiles, hub_episodes, memsync, status_json, warm_section, write_config

from daemon.cli.common import EX_USAGE
from daemon.job_table import JOB_NAMES
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


def test_search_for_a_site_no_one_has_names_the_sites(
    make_agentdb: Callable[..., Path], tmp_path: Path, short_dir: Path
) -> None:
    hub = tmp_path / "hub.db"
    sites = [
        write_config(tmp_path / name, name, make_agentdb(3, seed=seed, name=f"{name}.db"), hub, warm=warm)
        for name, seed, warm in (
            ("laptop", 1, warm_section(tmp_path, short_dir, "laptop")),
            ("vm", 2, None),
        )
    ]
    for site in sites:
        assert memsync("sync", "--config", str(site.config)).returncode == 0
    laptop = str(sites[0].config)
    done = memsync("search", "task", "--site", "lapton", "--config", laptop)
    assert done.returncode == EX_USAGE, done.stdout + done.stderr
    assert one_line(done) == "memsync: search: no site named 'lapton' (sites: laptop, vm)"
    known = memsync("search", "no such words anywhere zzzq", "--site", "vm", "--json", "--config", laptop)
    assert known.returncode == 0, known.stderr


def test_jobs_fit_an_80_column_terminal(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    site = site_files(agentdb=make_agentdb(2))
    assert memsync("sync", "--config", str(site.config)).returncode == 0
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daemon", "jobs", "--config", str(site.config)],
            stdin=follower,
            stdout=follower,
            stderr=follower,
            env={**os.environ, "COLUMNS": "80", "LINES": "50", "TERM": "xterm"},
        )
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed with the process
                break
            if not chunk:
                break
            out += chunk
        proc.wait(60)
    finally:
        os.close(leader)
    text = re.sub(r"\x1b\[[0-9;]*m", "", out.decode("utf-8", "replace"))  # the terminal's bold, not text
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= 80, text
    for job in JOB_NAMES:
        assert any(line.split() and line.split()[0] == job for line in lines), (job, text)
    assert "…" not in text, text


def test_status_counts_follow_a_forget(site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]) -> None:
    site = site_files(agentdb=make_agentdb(6))
    assert memsync("sync", "--config", str(site.config)).returncode == 0
    forgot = memsync("forget", "laptop:2", "laptop:5", "--config", str(site.config))
    assert forgot.returncode == 0, forgot.stderr
    _code, report = status_json(site.config)
    held = len(hub_episodes(site.hub, "laptop"))
    assert held == 4
    assert (report["synced"], report["backbone"]["cursor"]["totalSynced"]) == (held, held), json.dumps(report)
    shown = memsync("status", "--config", str(site.config))
    assert "6 (4 episodes synced)" in " ".join(shown.stdout.split()), shown.stdout
