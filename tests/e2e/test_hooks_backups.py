"""Tier: e2e.

`memsync hooks install|uninstall` keep one backup a settings file: the user's own text, the last
one memsync did not write into, which uninstall restores byte for byte. Installs that change
memsync's own entries, and uninstalls, add none. Gemini CLI's settings with comments are taken as
Gemini takes them, and what writing them back loses is said. Through the real CLI, HOME in
tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import memsync

SETTINGS = '{\n  "theme": "GitHub",\n  "mcpServers": {"other": {"command": "other-server"}}\n}\n'


@pytest.fixture
def seams(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """HOME with a ~/.gemini folder, a project, and the environment naming the site's config."""
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (home / ".gemini").mkdir(parents=True)
    config = tmp_path / "site.toml"
    config.write_text("", encoding="utf-8")
    return home, project, {"HOME": str(home), "MEMSYNC_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}


def backups(folder: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(folder.glob("settings.json.memsync-backup-*"))]


def test_install_reinstall_and_uninstall_leave_one_backup_of_the_users_file(
    seams: tuple[Path, Path, dict[str, str]],
) -> None:
    home, project, env = seams
    settings = home / ".gemini" / "settings.json"
    settings.write_text(SETTINGS, encoding="utf-8")

    for options in ([], ["--per-prompt"], ["--capture"]):  # each changes memsync's own entries
        done = memsync("hooks", "install", "gemini", *options, env=env, cwd=project)
        assert done.returncode == 0, done.stderr
        assert backups(home / ".gemini") == [SETTINGS.encode()]
    gone = memsync("hooks", "uninstall", "gemini", env=env, cwd=project)
    assert gone.returncode == 0, gone.stderr
    assert settings.read_text(encoding="utf-8") == SETTINGS
    assert backups(home / ".gemini") == [SETTINGS.encode()]

    settings.write_text(SETTINGS.replace("GitHub", "Dracula"), encoding="utf-8")  # the user's own edit
    assert memsync("hooks", "install", "gemini", env=env, cwd=project).returncode == 0
    assert backups(home / ".gemini") == [SETTINGS.replace("GitHub", "Dracula").encode()]


def test_gemini_settings_with_comments_are_taken_and_what_is_lost_is_said(
    seams: tuple[Path, Path, dict[str, str]],
) -> None:
    home, project, env = seams
    settings = home / ".gemini" / "settings.json"
    commented = '{\n  // my theme\n  "theme": "GitHub"\n}\n'
    settings.write_text(commented, encoding="utf-8")

    done = memsync("hooks", "install", "gemini", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f"note: {settings} has comments, which JSON cannot hold: writing it drops them; its backup beside it "
        "keeps them (`memsync hooks uninstall` restores it)\n"
    )
    written = json.loads(settings.read_text(encoding="utf-8"))
    assert written["theme"] == "GitHub"
    assert "memsync" in written["mcpServers"]
    status = memsync("hooks", "status", "gemini", env=env, cwd=project)
    assert "gemini (user): 2 hook(s), MCP server yes" in status.stdout, status.stdout
    gone = memsync("hooks", "uninstall", "gemini", env=env, cwd=project)
    assert gone.returncode == 0, gone.stderr
    assert settings.read_text(encoding="utf-8") == commented
