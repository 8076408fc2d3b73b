"""Tier: e2e.

`memsync hooks install|uninstall` keep one backup a settings file: the user's own text, the last
one memsync did not write into, which uninstall restores byte for byte. Installs that change
memsync's own entries, and uninstalls, add none. Through the real CLI, HOME in tmp_path."""

from __future__ import annotations

from pathlib import Path

from conftest import memsync

SETTINGS = '{\n  "theme": "GitHub",\n  "mcpServers": {"other": {"command": "other-server"}}\n}\n'


def backups(folder: Path) -> list[bytes]:
    return [p.read_bytes() for p in sorted(folder.glob("settings.json.memsync-backup-*"))]


def test_install_reinstall_and_uninstall_leave_one_backup_of_the_users_file(tmp_path: Path) -> None:
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (home / ".gemini").mkdir(parents=True)
    config = tmp_path / "site.toml"
    config.write_text("", encoding="utf-8")
    settings = home / ".gemini" / "settings.json"
    settings.write_text(SETTINGS, encoding="utf-8")
    env = {"HOME": str(home), "MEMSYNC_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}

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
