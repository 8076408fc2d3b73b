"""Tier: e2e. The light CLI paths against a running daemon: search and sync import nothing heavy."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from conftest import SiteFiles, wait_for, wait_started, warm_section

HEAVY = ("pydantic", "pydantic_settings", "rich", "structlog", "numpy", "httpx", "onnxruntime", "tenacity")


def imported(*args: str, cwd: Path | None = None) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "daemon", *args],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
    )
    modules = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done, modules


def test_search_and_sync_through_a_daemon_import_nothing_heavy(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    short_dir: Path,
    tmp_path: Path,
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    warm = warm_section(tmp_path, short_dir)
    site = site_files("laptop", make_agentdb(20), warm=warm)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)

    def searchable() -> bool:
        done = subprocess.run(
            [sys.executable, "-m", "daemon", "search", "anything", "--floor", "0", "--json", "-c", str(site.config)],
            capture_output=True,
            text=True,
            check=False,
        )
        return done.returncode == 0 and len(json.loads(done.stdout)["results"]) > 0

    wait_for(searchable, timeout=60, what="the index")
    done, modules = imported("search", "anything", "--json", "-c", str(site.config))
    assert done.returncode == 0
    assert json.loads(done.stdout.splitlines()[-1])["via"] == "daemon"
    assert not {m for m in modules if m.split(".")[0] in HEAVY}, "the light search path imported heavy modules"
    assert "daemon.cli.app" not in modules

    done, modules = imported("sync", "--wait", "-c", str(site.config))
    assert done.returncode == 0, done.stderr
    assert "synced by the daemon" in done.stderr
    assert not {m for m in modules if m.split(".")[0] in HEAVY}, "the light sync path imported heavy modules"

    # A hook runs in the agent's project: that project's .env is not memsync's, and costs nothing.
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("MEMSYNC_SINK__X=1\nMEMSYNC_SITE__NAME=other\nAPI_KEY=x\n", encoding="utf-8")
    done, modules = imported("search", "anything", "--json", "-c", str(site.config), cwd=project)
    assert done.returncode == 0, done.stderr
    assert not {m for m in modules if m.split(".")[0] in HEAVY}, "a project's .env sent search to the full path"

    # The light paths take only a config that validates: a typo is refused now, not at the next restart.
    good = site.config.read_text(encoding="utf-8")
    hooks = {
        "search": ["search", "anything", "--json"],
        "sync": ["sync"],
        "sync --wait": ["sync", "--wait"],
        "heartbeat": ["heartbeat", "--agent", "a", "--platform", "claude-code"],
    }
    for broken, named in (
        (good + "[sink]\nx = 1\n", "'sink'"),
        (good.replace("[sync]\n", "[sync]\nbatch_size = 0\n"), "sync.batch_size"),
        (good.replace('kind = "local"', 'kind = "ftp"'), "backbone.kind"),
    ):
        assert broken != good
        site.config.write_text(broken, encoding="utf-8")
        for hook, argv in hooks.items():
            done, _ = imported(*argv, "-c", str(site.config))
            assert done.returncode == 78, f"{hook} took {named}: exit {done.returncode} {done.stderr}"
            assert named in done.stderr, f"{hook}: {done.stderr}"
    site.config.write_text(good, encoding="utf-8")
    imported("sync", "-c", str(site.config))  # the full path validates it again and remembers it
    done, modules = imported("sync", "--wait", "-c", str(site.config))
    assert done.returncode == 0, done.stderr
    assert not {m for m in modules if m.split(".")[0] in HEAVY}, "a fixed config did not make the light path light"

    # Without a daemon answering, the same command still works, through the full path.
    proc.terminate()
    proc.wait(30)
    done, modules = imported("search", "anything", "--json", "-c", str(site.config))
    assert done.returncode == 0
    assert "daemon.cli.app" in modules
