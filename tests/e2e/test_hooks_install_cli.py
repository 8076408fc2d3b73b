"""Tier: e2e. `memsync hooks` through the CLI in a child process: install, dry run, uninstall,
status and the refusals, against a home folder of the test's own."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import memsync
from test_hooks_install import CODEX_TOML, GEMINI_SETTINGS

from daemon.hooks.plan import (
    BLOCK_BEGIN,
)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def seams(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """HOME and a project of the test's own; the site's config in MEMSYNC_CONFIG, which install names
    in every hook (the file need only exist for that)."""
    home, project = tmp_path / "home", tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    config = tmp_path / "site.toml"
    config.write_text("", encoding="utf-8")
    env = {"HOME": str(home), "MEMSYNC_CONFIG": str(config), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    return home, project, env


def test_cli_install_backs_up_and_uninstall_restores_byte_for_byte(seams: tuple[Path, Path, dict[str, str]]) -> None:
    home, project, env = seams
    (home / ".gemini").mkdir()
    original = GEMINI_SETTINGS.encode()
    (home / ".gemini/settings.json").write_bytes(original)
    (home / ".gemini/settings.json").chmod(0o600)
    done = memsync("hooks", "install", "gemini", "--per-prompt", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "updated" in done.stdout
    assert "backup" in done.stdout
    written = json.loads((home / ".gemini/settings.json").read_text())
    config = env["MEMSYNC_CONFIG"]
    assert written["mcpServers"]["memsync"] == {"command": "memsync", "args": ["mcp", "--config", config]}
    assert (home / ".gemini/settings.json").stat().st_mode & 0o777 == 0o600
    backups = list((home / ".gemini").glob("settings.json.memsync-backup-*"))
    assert [b.read_bytes() for b in backups] == [original]

    again = memsync("hooks", "install", "gemini", "--per-prompt", env=env, cwd=project)
    assert again.returncode == 0
    assert "nothing to change" in again.stdout
    assert len(list((home / ".gemini").glob("settings.json.memsync-backup-*"))) == 1

    status = memsync("hooks", "status", "gemini", env={**env, "PATH": str(home)}, cwd=project)
    assert "gemini (user): 3 hook(s), MCP server yes" in status.stdout
    assert "BeforeAgent: memsync context --for gemini" in status.stdout
    assert "gemini (project): not installed" in status.stdout
    assert "memsync on PATH: not found" in status.stdout
    assert status.returncode == 1

    gone = memsync("hooks", "uninstall", "gemini", env=env, cwd=project)
    assert gone.returncode == 0, gone.stderr
    assert (home / ".gemini/settings.json").read_bytes() == original


def test_cli_project_scope_writes_at_the_git_top_level(seams: tuple[Path, Path, dict[str, str]]) -> None:
    home, project, env = seams
    (project / "src/deep").mkdir(parents=True)
    done = memsync("hooks", "install", "claude-code", "--scope", "project", env=env, cwd=project / "src/deep")
    assert done.returncode == 0, done.stderr
    assert set(tree(project)) == {".claude/settings.json", ".mcp.json"}
    assert tree(home) == {}
    gone = memsync("hooks", "uninstall", "claude-code", "--scope", "project", env=env, cwd=project)
    assert gone.returncode == 0, gone.stderr
    assert not (project / ".mcp.json").exists()
    assert not (project / ".claude/settings.json").exists()


def test_cli_config_outside_the_default_is_in_every_command(
    seams: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    home, project, env = seams
    config = tmp_path / "my site.toml"
    config.write_text("", encoding="utf-8")
    done = memsync("hooks", "install", "codex", "-c", str(config), env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    hooks = json.loads((home / ".codex/hooks.json").read_text())
    assert (
        hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"] == f"memsync context --for codex --config '{config}'"
    )
    assert f'args = ["mcp", "--config", "{config}"]' in (home / ".codex/config.toml").read_text()
    missing = memsync("hooks", "install", "codex", "-c", str(tmp_path / "nope.toml"), env=env, cwd=project)
    assert missing.returncode == 78
    assert missing.stderr.count("\n") == 1
    assert "nope.toml does not exist" in missing.stderr


def test_cli_dry_run_prints_the_diff_and_writes_nothing(seams: tuple[Path, Path, dict[str, str]]) -> None:
    home, project, env = seams
    (home / ".codex").mkdir()
    (home / ".codex/config.toml").write_text(CODEX_TOML, encoding="utf-8")
    before = tree(home)
    done = memsync("hooks", "install", "codex", "--capture", "--dry-run", env=env, cwd=project)
    assert done.returncode == 0, done.stderr
    assert tree(home) == before
    assert f"+++ {home / '.codex/config.toml'}" in done.stdout
    assert f"+{BLOCK_BEGIN}" in done.stdout
    assert "+++ " + str(home / ".codex/hooks.json") in done.stdout
    assert "nothing was written" in done.stderr

    memsync("hooks", "install", "codex", env=env, cwd=project)
    installed_tree = tree(home)
    dry = memsync("hooks", "uninstall", "codex", "--dry-run", env=env, cwd=project)
    assert dry.returncode == 0
    assert f"-{BLOCK_BEGIN}" in dry.stdout
    assert tree(home) == installed_tree


@pytest.mark.parametrize(
    ("name", "text"),
    [(".claude/settings.json", '{"hooks": {,}}'), (".claude.json", '{"mcpServers": []}'), (".claude.json", "\xff")],
)
def test_cli_malformed_file_exits_78_and_writes_nothing(
    seams: tuple[Path, Path, dict[str, str]], name: str, text: str
) -> None:
    home, project, env = seams
    path = home / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("latin-1"))
    before = tree(home)
    done = memsync("hooks", "install", "claude-code", env=env, cwd=project)
    assert done.returncode == 78
    assert done.stderr.count("\n") == 1, done.stderr
    assert str(path) in done.stderr
    assert "nothing was written" in done.stderr
    assert "Traceback" not in done.stderr
    assert tree(home) == before


def test_cli_status_runs_the_memsync_on_path(seams: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    """status resolves the memsync the hooks will run (here this checkout's, through PATH) and tries a
    context hook with it; with no daemon the hook still answers (or says it does not exist yet)."""
    _home, project, env = seams
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "memsync"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m daemon "$@"\n', encoding="utf-8")
    launcher.chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    config = tmp_path / "site.toml"
    config.write_text(
        f'data_dir = "{tmp_path / "data"}"\n[site]\nname = "s"\n[agentdb]\npath = "{tmp_path / "a.db"}"\n'
        f'[backbone]\nkind = "local"\npath = "{tmp_path / "hub"}"\n',
        encoding="utf-8",
    )
    done = memsync("hooks", "status", "claude-code", "-c", str(config), env={**env, "PATH": path}, cwd=project)
    assert f"memsync on PATH: {launcher}" in done.stdout, done.stdout + done.stderr
    assert f"daemon: not running (nothing answers on {tmp_path / 'data'}" in done.stdout
    assert "context check: " in done.stdout
