"""The light paths of ``memsync search`` and ``memsync sync`` (what hooks call on every prompt and
every episode): they find the daemon's files exactly where the full settings would, and they do
not import the heavy parts of the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import SiteFiles, wait_for, wait_started, warm_section

from daemon.cli.locate import quick_paths, remember, stamps
from daemon.config import load_settings

HEAVY = ("pydantic", "pydantic_settings", "rich", "structlog", "numpy", "httpx", "onnxruntime", "tenacity")


@pytest.mark.parametrize(
    ("toml", "environ"),
    [
        pytest.param('[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n', {}, id="defaults"),
        pytest.param('data_dir = "data"\n[site]\nname = "vm"\n[agentdb]\npath = "a.db"\n', {}, id="relative data_dir"),
        pytest.param(
            '[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n'
            '[warm]\nsocket = "~/s.sock"\n[state]\npath = "st/x.db"\n',
            {},
            id="socket and state in the file",
        ),
        pytest.param(
            '[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n',
            {"MEMSYNC_SITE__NAME": "other", "MEMSYNC_DATA_DIR": "/srv/memsync"},
            id="site and data dir from the environment",
        ),
        pytest.param(
            '[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n',
            {"MEMSYNC_WARM__SOCKET": "/run/m.sock", "MEMSYNC_STATE__PATH": "/var/lib/m/s.db"},
            id="socket and state from the environment",
        ),
        pytest.param(
            '[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n',
            {"XDG_DATA_HOME": "/xdg"},
            id="XDG_DATA_HOME",
        ),
        pytest.param(
            '[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n[warm]\nenabled = false\n', {}, id="search index off"
        ),
    ],
)
def test_the_quick_paths_are_the_settings_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, toml: str, environ: dict[str, str]
) -> None:
    config = tmp_path / "conf" / "site.toml"
    config.parent.mkdir()
    config.write_text(toml, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    assert quick_paths(config, dict(os.environ)) is None, "nothing validated these settings yet"
    key = stamps(config, dict(os.environ))
    settings = load_settings(config)
    remember(settings, config, key, dict(os.environ))
    quick = quick_paths(config, dict(os.environ))
    assert quick is not None
    assert quick.site == settings.site.name
    assert quick.state == settings.state_path
    assert quick.lock == settings.lock_path
    assert quick.socket == (settings.socket_path if settings.warm.enabled else None)


def _edit_config(config: Path, environ: dict[str, str]) -> None:
    config.write_text(config.read_text(encoding="utf-8") + "[sync]\nbatch_size = 10\n", encoding="utf-8")


def _dotenv_beside(config: Path, environ: dict[str, str]) -> None:
    (config.parent / ".env").write_text("MEMSYNC_SITE__NAME=other\n", encoding="utf-8")


def _variable(config: Path, environ: dict[str, str]) -> None:
    environ["MEMSYNC_SYNC__BATCH_SIZE"] = "10"


def _replaced(config: Path, environ: dict[str, str]) -> None:
    fresh = config.with_name("fresh.toml")
    fresh.write_text(config.read_text(encoding="utf-8"), encoding="utf-8")
    fresh.replace(config)


@pytest.mark.parametrize(
    "change",
    [_edit_config, _dotenv_beside, _variable, _replaced],
    ids=["config edited", "a .env beside the config", "a MEMSYNC_ variable", "config replaced"],
)
def test_the_light_paths_trust_only_settings_validated_from_the_same_files(
    tmp_path: Path, change: Callable[[Path, dict[str, str]], None]
) -> None:
    config = tmp_path / "conf" / "site.toml"
    config.parent.mkdir()
    config.write_text('[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n', encoding="utf-8")
    environ = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    remember(load_settings(config), config, stamps(config, environ), environ)
    assert quick_paths(config, environ) is not None
    change(config, environ)
    assert quick_paths(config, environ) is None, "a change the entry was not made from"


def test_a_project_dotenv_does_not_touch_the_light_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "conf" / "site.toml"
    config.parent.mkdir()
    config.write_text('[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n', encoding="utf-8")
    environ = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    remember(load_settings(config), config, stamps(config, environ), environ)
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("MEMSYNC_SINK__X=1\nMEMSYNC_SITE__NAME=other\n", encoding="utf-8")
    monkeypatch.chdir(project)
    found = quick_paths(config, environ)
    assert found is not None
    assert found.site == "laptop"


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
            [sys.executable, "-m", "daemon", "search", "anything", "--json", "-c", str(site.config)],
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


def test_a_cache_that_cannot_be_kept_costs_only_the_full_path(tmp_path: Path) -> None:
    config = tmp_path / "site.toml"
    config.write_text('[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n', encoding="utf-8")
    (tmp_path / "not-a-folder").write_text("", encoding="utf-8")
    environ = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "not-a-folder" / "cache")}
    remember(load_settings(config), config, stamps(config, environ), environ)
    assert quick_paths(config, environ) is None
    assert not any(p.name.startswith(".settings-") for p in tmp_path.rglob("*")), "a temporary file left behind"
