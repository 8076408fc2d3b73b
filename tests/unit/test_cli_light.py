"""The light paths of ``memsync search`` and ``memsync sync`` (what hooks call on every prompt and
every episode): they find the daemon's files exactly where the full settings would, and they do
not import the heavy parts of the CLI."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from daemon.cli.locate import quick_paths, remember, stamps
from daemon.config import load_settings


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


def test_a_cache_that_cannot_be_kept_costs_only_the_full_path(tmp_path: Path) -> None:
    config = tmp_path / "site.toml"
    config.write_text('[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n', encoding="utf-8")
    (tmp_path / "not-a-folder").write_text("", encoding="utf-8")
    environ = {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(tmp_path / "not-a-folder" / "cache")}
    remember(load_settings(config), config, stamps(config, environ), environ)
    assert quick_paths(config, environ) is None
    assert not any(p.name.startswith(".settings-") for p in tmp_path.rglob("*")), "a temporary file left behind"
