"""``memsync hooks install|uninstall|status``: the planner's merge against real settings files that
already hold the user's own hooks, servers and comments, and the CLI in a child process with HOME and
the project directory in tmp_path (never the real ~)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from daemon.hooks.plan import (
    BLOCK_BEGIN,
    Malformed,
    Options,
    Scope,
    Tool,
    installed,
    plan_install,
    plan_uninstall,
    settings_files,
)

HOME = Path("/home/someone")
PROJECT = Path("/work/project")

CLAUDE_SETTINGS = """{
  "permissions": {"allow": ["Bash(npm test:*)"]},
  "hooks": {
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "audit-bash", "timeout": 5}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "env": {"FOO": "bar"}
}
"""
CLAUDE_JSON = """{
    "numStartups": 12,
    "mcpServers": {
        "github": {"command": "gh-mcp", "args": ["--stdio"]}
    },
    "projects": {"/work/project": {"allowedTools": []}}
}
"""
MCP_JSON = '{"mcpServers": {"db": {"command": "db-mcp", "args": []}}}'
CODEX_HOOKS = """{
  "hooks": {
    "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi", "timeout": 3}]}],
    "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}]
  }
}
"""
CODEX_TOML = """# my codex settings
model = "gpt-5-codex"  # the default model

[features]
codex_hooks = true

[mcp_servers.docs]
command = "docs-mcp"
args = ["serve"]  # keep
"""
GEMINI_SETTINGS = """{
\t"theme": "GitHub",
\t"hooks": {
\t\t"BeforeTool": [{"matcher": "run_shell_command", "hooks": [{"type": "command", "command": "chk", "timeout": 9}]}],
\t\t"AfterAgent": [{"hooks": [{"type": "command", "command": "log-turn"}]}]
\t},
\t"mcpServers": {"search": {"command": "search-mcp"}}
}"""

EXISTING: dict[tuple[Tool, Scope], dict[Path, str]] = {
    ("claude-code", "user"): {HOME / ".claude/settings.json": CLAUDE_SETTINGS, HOME / ".claude.json": CLAUDE_JSON},
    ("claude-code", "project"): {PROJECT / ".claude/settings.json": CLAUDE_SETTINGS, PROJECT / ".mcp.json": MCP_JSON},
    ("codex", "user"): {HOME / ".codex/hooks.json": CODEX_HOOKS, HOME / ".codex/config.toml": CODEX_TOML},
    ("codex", "project"): {PROJECT / ".codex/hooks.json": CODEX_HOOKS, PROJECT / ".codex/config.toml": CODEX_TOML},
    ("gemini", "user"): {HOME / ".gemini/settings.json": GEMINI_SETTINGS},
    ("gemini", "project"): {PROJECT / ".gemini/settings.json": GEMINI_SETTINGS},
}
CASES = [(tool, scope, empty) for (tool, scope) in EXISTING for empty in (False, True)]
EVENTS = {  # (session start, per prompt, stop, capture), as each tool names them
    "claude-code": ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"),
    "codex": ("SessionStart", "UserPromptSubmit", "Stop", "Stop"),
    "gemini": ("SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd"),
}


def start(tool: Tool, scope: Scope, empty: bool) -> dict[Path, str | None]:
    files = EXISTING[(tool, scope)]
    return {path: None if empty else text for path, text in files.items()}


def install(tool: Tool, scope: Scope, current: dict[Path, str | None], **options: Any) -> dict[Path, str | None]:
    return plan_install(tool, scope, Options(**options), current, HOME, PROJECT)


def uninstall(tool: Tool, scope: Scope, current: dict[Path, str | None], **kw: Any) -> dict[Path, str | None]:
    return plan_uninstall(tool, scope, current, HOME, PROJECT, **kw)


def ours(text: str | None) -> list[tuple[str, dict[str, Any]]]:
    """memsync's handlers in a hooks file, as (event, handler)."""
    data = json.loads(text or "{}")
    return [
        (event, handler)
        for event, groups in data.get("hooks", {}).items()
        if isinstance(groups, list)
        for group in groups
        for handler in group["hooks"]
        if handler["command"].startswith("memsync ")
    ]


def without_ours(document: dict[str, Any]) -> dict[str, Any]:
    """A settings document with memsync's entries (and the containers only they filled) taken out."""
    out = dict(document)
    hooks = {}
    for event, groups in out.pop("hooks", {}).items():
        kept = []
        for group in groups:
            handlers = [h for h in group["hooks"] if not h["command"].startswith("memsync ")]
            if handlers:
                kept.append({**group, "hooks": handlers})
        if kept:
            hooks[event] = kept
    servers = {k: v for k, v in out.pop("mcpServers", {}).items() if k != "memsync"}
    return out | ({"hooks": hooks} if hooks else {}) | ({"mcpServers": servers} if servers else {})


def hooks_file(tool: Tool, scope: Scope) -> Path:
    return next(f.path for f in settings_files(tool, scope, HOME, PROJECT) if f.hooks)


@pytest.mark.parametrize(("tool", "scope", "empty"), CASES)
def test_install_merges_with_what_is_there(tool: Tool, scope: Scope, empty: bool) -> None:
    before = start(tool, scope, empty)
    after = install(tool, scope, before, per_prompt=True)
    session, prompt, stop, _ = EVENTS[tool]
    unit = 1000 if tool == "gemini" else 1
    found = ours(after[hooks_file(tool, scope)])
    stop_command = "memsync sync --wait" if tool == "claude-code" else "memsync sync --wait >/dev/null 2>&1 &"
    assert sorted((e, h["command"]) for e, h in found) == sorted(
        [(session, f"memsync context --for {tool}"), (prompt, f"memsync context --for {tool}"), (stop, stop_command)]
    )
    by_event = dict(found)
    assert by_event[session]["timeout"] == 10 * unit
    assert by_event[stop]["timeout"] == 120 * unit
    assert by_event[stop].get("async") is (True if tool == "claude-code" else None)
    # Everything of the user's is still there, as it was.
    for path, text in before.items():
        if text is not None and path.suffix == ".json":
            assert without_ours(json.loads(after[path] or "")) == json.loads(text)
        elif text is not None:
            assert (after[path] or "").startswith(text)
    assert installed(tool, scope, after, HOME, PROJECT).server


@pytest.mark.parametrize(("tool", "scope", "empty"), CASES)
def test_installing_twice_is_installing_once(tool: Tool, scope: Scope, empty: bool) -> None:
    once = install(tool, scope, start(tool, scope, empty), per_prompt=True, capture=True)
    assert install(tool, scope, once, per_prompt=True, capture=True) == once


@pytest.mark.parametrize(("tool", "scope", "empty"), CASES)
def test_reinstalling_replaces_memsyncs_entries(tool: Tool, scope: Scope, empty: bool) -> None:
    """Other options (no per-prompt hook now, a config file) replace memsync's entries, never add to them."""
    first = install(tool, scope, start(tool, scope, empty), per_prompt=True)
    config = Path("/etc/memsync dir/site.toml")
    second = install(tool, scope, first, config=config)
    assert second == install(tool, scope, start(tool, scope, empty), config=config)
    commands = [h["command"] for _, h in ours(second[hooks_file(tool, scope)])]
    assert len(commands) == 2
    assert all("--config '/etc/memsync dir/site.toml'" in c for c in commands)


@pytest.mark.parametrize(("tool", "scope", "empty"), CASES)
def test_uninstall_restores_the_original(tool: Tool, scope: Scope, empty: bool) -> None:
    before = start(tool, scope, empty)
    after = install(tool, scope, before, per_prompt=True, capture=True)
    backups = {path: [text] for path, text in before.items() if text is not None}
    assert uninstall(tool, scope, after, backups=backups) == before  # byte for byte, files absent stay absent
    # Without the backups: the same documents (JSON re-serialised in the file's own indentation).
    restored = uninstall(tool, scope, after)
    for path, text in before.items():
        if text is None:
            assert restored[path] is None
        elif path.suffix == ".json":
            assert json.loads(restored[path] or "") == json.loads(text)
        else:
            assert restored[path] == text  # the TOML block goes with the blank line install put before it
    assert installed(tool, scope, restored, HOME, PROJECT).events == ()


def test_uninstall_keeps_what_the_user_added_since() -> None:
    after = install("claude-code", "project", start("claude-code", "project", empty=True))
    path = PROJECT / ".claude/settings.json"
    data = json.loads(after[path] or "")
    data["hooks"]["SessionStart"][0]["hooks"].append({"type": "command", "command": "mine"})
    data["model"] = "opus"
    left = uninstall("claude-code", "project", {**after, path: json.dumps(data)})
    assert json.loads(left[path] or "") == {
        "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "mine"}]}]},
        "model": "opus",
    }


def test_uninstall_leaves_a_file_without_memsync_untouched() -> None:
    current: dict[Path, str | None] = {HOME / ".gemini/settings.json": "{ }", HOME / "other": None}
    assert uninstall("gemini", "user", current)[HOME / ".gemini/settings.json"] == "{ }"


def test_codex_block_is_one_delimited_table_at_the_end() -> None:
    after = install("codex", "user", start("codex", "user", empty=False), config=Path("/c/site.toml"))
    toml = after[HOME / ".codex/config.toml"] or ""
    assert toml == CODEX_TOML + (
        f'\n{BLOCK_BEGIN}\n[mcp_servers.memsync]\ncommand = "memsync"\nargs = ["mcp", "--config", "/c/site.toml"]\n'
        "# <<< memsync <<<\n"
    )
    import tomllib

    parsed = tomllib.loads(toml)
    assert parsed["mcp_servers"]["memsync"] == {"command": "memsync", "args": ["mcp", "--config", "/c/site.toml"]}
    assert parsed["mcp_servers"]["docs"] == {"command": "docs-mcp", "args": ["serve"]}


def test_capture_hook_runs_once_per_session_where_the_tool_can() -> None:
    for tool in ("claude-code", "codex", "gemini"):
        after = install(tool, "user", {}, capture=True)
        capture = [(e, h) for e, h in ours(after[hooks_file(tool, "user")]) if "capture" in h["command"]]
        assert [e for e, _ in capture] == [EVENTS[tool][3]]
        assert capture[0][1]["command"].startswith(f"memsync capture --for {tool}")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"hooks": {"Stop": [}', "is not valid JSON (line 1"),
        ("[1, 2]", "does not hold a JSON object"),
        ('{"hooks": []}', "hooks is not a JSON object"),
        ('{"hooks": {"SessionStart": {"hooks": []}}}', "hooks.SessionStart is not a list of matcher groups"),
        ('{"mcpServers": "none"}', "mcpServers is not a JSON object"),
    ],
)
def test_a_malformed_file_is_named(text: str, problem: str) -> None:
    path = HOME / ".gemini/settings.json"
    with pytest.raises(Malformed) as raised:
        install("gemini", "user", {path: text})
    assert str(raised.value).startswith(str(path))
    assert problem in str(raised.value)


def test_the_agents_guide_shows_what_install_writes() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guides" / "agents.md").read_text(encoding="utf-8")
    section = guide[guide.index("## hooks install") :]
    claude = section[section.index("```json\n") + 8 : section.index("\n```", section.index("```json\n"))]
    after = install("claude-code", "user", {}, per_prompt=True)
    assert json.loads(claude) == json.loads(after[HOME / ".claude/settings.json"] or "")
    assert json.loads(after[HOME / ".claude.json"] or "") == {
        "mcpServers": {"memsync": {"command": "memsync", "args": ["mcp"]}}
    }
    toml = section[section.index("```toml\n") + 8 : section.index("```", section.index("```toml\n") + 8)]
    assert install("codex", "user", {})[HOME / ".codex/config.toml"] == toml
