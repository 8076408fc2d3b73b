"""Tier: e2e.

`memsync hooks install` writes hooks that can work, and `hooks status` checks what was installed:
without a config to name, install refuses (78, one sentence, nothing written); status runs each
installed session-start hook as the agent would (its command through the shell, the config written
into it, `memsync` from PATH), against a real daemon and its index, and says when one adds nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from conftest import SiteFiles, memsync, wait_for, wait_started, warm_section


def launcher_on_path(folder: Path) -> str:
    """PATH with a `memsync` that runs this checkout, as an installed one would."""
    folder.mkdir(parents=True, exist_ok=True)
    launcher = folder / "memsync"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m daemon "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def test_install_without_a_config_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    env = {"HOME": str(home), "MEMSYNC_CONFIG": "", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for tool in ("claude-code", "codex", "gemini"):
        done = memsync("hooks", "install", tool, env=env, cwd=project)
        assert done.returncode == 78, done.stdout + done.stderr
        assert "Traceback" not in done.stderr
        (line,) = done.stderr.splitlines()
        assert "no config file given: pass the site's config with -c FILE (or set MEMSYNC_CONFIG)" in line
        assert "nothing was written" in line
    assert list(home.rglob("*")) == []


def test_status_runs_the_hooks_as_installed(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    short_dir: Path,
    tmp_path: Path,
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    site = site_files("laptop", make_agentdb(20), warm=warm_section(tmp_path, short_dir))
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    (project / ".git").mkdir(parents=True)
    env = {
        "HOME": str(home),
        "MEMSYNC_CONFIG": "",
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "PATH": launcher_on_path(tmp_path / "bin"),
    }
    installed = memsync("hooks", "install", "claude-code", "-c", str(site.config), env=env, cwd=project)
    assert installed.returncode == 0, installed.stderr
    # A hook an older memsync wrote with no config: it cannot find the site.
    (home / ".gemini").mkdir()
    bare = {"type": "command", "name": "memsync", "command": "memsync context --for gemini", "timeout": 10000}
    (home / ".gemini/settings.json").write_text(json.dumps({"hooks": {"SessionStart": [{"hooks": [bare]}]}}))

    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)
    searched = ["search", "anything", "--json", "-c", str(site.config)]
    wait_for(lambda: memsync(*searched).returncode == 0, timeout=90, what="the index")

    status = memsync("hooks", "status", env=env, cwd=project)  # no -c: the hooks carry their config
    lines = status.stdout.splitlines()
    (claude,) = [line for line in lines if line.startswith("context check (claude-code, user): ")]
    assert claude.startswith("context check (claude-code, user): ok ("), status.stdout
    assert not claude.startswith("context check (claude-code, user): ok (0 characters"), claude
    (gemini,) = [line for line in lines if line.startswith("context check (gemini, user): ")]
    assert gemini.startswith("context check (gemini, user): the hook adds no context: "), gemini
    assert "no memories this time" in gemini
    assert status.returncode == 1, status.stdout
