"""What ``memsync hooks install|uninstall`` writes into an agent tool's settings files: a pure
function of the tool, the scope, the options and the files' current text, returning their new text.

One place decides, for Claude Code, Codex CLI and Gemini CLI: which files hold the hooks and the MCP
server, what the hook entries look like in each tool's dialect (Claude Code and Codex time out in
seconds, Gemini in milliseconds; only Claude Code documents ``"async": true``, so the others run the
stop hook as a shell background job), and how memsync's entries are merged with the user's: other
hooks and servers are untouched, memsync's own are replaced where they stand (installing twice is
installing once), and uninstalling removes exactly them, and the containers left empty by that.

memsync's entries are recognised by their commands (``memsync context --for``, ``memsync sync
--wait``, ``memsync capture --for``) and by the server's name ``memsync``: nothing foreign is added
to a tool's settings, whose schemas may refuse unknown keys. Codex's ``config.toml`` is never parsed
or rewritten: one delimited block is added or removed, so the user's comments and layout stay.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, get_args

Tool = Literal["claude-code", "codex", "gemini"]
Scope = Literal["user", "project"]
Format = Literal["json", "jsonc", "toml"]  # jsonc: JSON with // and /* */ comments (Gemini CLI's)
TOOLS: Final[tuple[Tool, ...]] = get_args(Tool)
SCOPES: Final[tuple[Scope, ...]] = get_args(Scope)

SERVER: Final = "memsync"
BLOCK_BEGIN: Final = "# >>> memsync >>>"
BLOCK_END: Final = "# <<< memsync <<<"
_BLOCK: Final = re.compile(rf"(?:(?<=\n)\n)?^{re.escape(BLOCK_BEGIN)}\n.*?^{re.escape(BLOCK_END)}\n?", re.M | re.S)
# memsync's hook commands, with or without the shell background form the tools without "async" get.
_OURS: Final = re.compile(r"^\s*memsync\s+(context\s+--for|sync\s+--wait|capture\s+--for)\b")

# Seconds the context hook may take before the tool gives up on it (it has its own, shorter, limit
# and returns nothing rather than block), and seconds a stop hook may run in the background.
CONTEXT_TIMEOUT_S: Final = 10
STOP_TIMEOUT_S: Final = 120


class Malformed(ValueError):
    """A settings file memsync cannot merge into: the message is the sentence to show."""


@dataclass(frozen=True, slots=True)
class SettingsFile:
    path: Path
    format: Format
    hooks: bool  # holds the hooks
    mcp: bool  # holds the MCP server's entry


@dataclass(frozen=True, slots=True)
class Options:
    per_prompt: bool = False
    capture: bool = False
    config: Path | None = None  # absolute; appended as --config to every command written


@dataclass(frozen=True, slots=True)
class Dialect:
    """How one tool names its events and writes a command hook."""

    session_start: str
    per_prompt: str
    stop: str
    session_end: str  # where --capture stores the session: once per session where the tool can
    timeout_unit: int  # the timeout field's units per second
    async_flag: bool  # whether the tool documents "async": true for a hook that must not block


DIALECTS: Final[Mapping[Tool, Dialect]] = {
    "claude-code": Dialect("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd", 1, async_flag=True),
    # Codex has no SessionEnd: its capture runs on Stop (each turn; the newest episode is the whole session).
    "codex": Dialect("SessionStart", "UserPromptSubmit", "Stop", "Stop", 1, async_flag=False),
    "gemini": Dialect("SessionStart", "BeforeAgent", "AfterAgent", "SessionEnd", 1000, async_flag=False),
}


def settings_files(tool: Tool, scope: Scope, home: Path, project: Path) -> tuple[SettingsFile, ...]:
    """The files ``tool`` reads its hooks and MCP servers from, in ``scope``."""
    if tool == "claude-code":
        if scope == "user":
            return (
                SettingsFile(home / ".claude" / "settings.json", "json", hooks=True, mcp=False),
                SettingsFile(home / ".claude.json", "json", hooks=False, mcp=True),
            )
        return (
            SettingsFile(project / ".claude" / "settings.json", "json", hooks=True, mcp=False),
            SettingsFile(project / ".mcp.json", "json", hooks=False, mcp=True),
        )
    if tool == "codex":
        base = (home if scope == "user" else project) / ".codex"
        return (
            SettingsFile(base / "hooks.json", "json", hooks=True, mcp=False),
            SettingsFile(base / "config.toml", "toml", hooks=False, mcp=True),
        )
    base = (home if scope == "user" else project) / ".gemini"
    # Gemini CLI reads its settings with comments stripped (strip-json-comments): so do we.
    return (SettingsFile(base / "settings.json", "jsonc", hooks=True, mcp=True),)


def memsync_args(*args: str, config: Path | None) -> list[str]:
    return [*args, "--config", str(config)] if config is not None else list(args)


def command_line(*args: str, config: Path | None) -> str:
    return shlex.join(["memsync", *memsync_args(*args, config=config)])


def wanted_hooks(tool: Tool, options: Options) -> dict[str, list[dict[str, Any]]]:
    """memsync's hook handlers by event, in ``tool``'s dialect."""
    dialect = DIALECTS[tool]
    context = command_line("context", "--for", tool, config=options.config)

    def handler(command: str, seconds: int, *, background: bool = False) -> dict[str, Any]:
        entry: dict[str, Any] = {"type": "command"}
        if tool == "gemini":
            entry["name"] = "memsync"
        if background and not dialect.async_flag:
            # No documented async flag: the shell runs it as a background job and the hook returns at
            # once; nothing on stdout, which Gemini reads as the hook's JSON.
            command = f"{command} >/dev/null 2>&1 &"
        entry["command"] = command
        if background and dialect.async_flag:
            entry["async"] = True
        entry["timeout"] = seconds * dialect.timeout_unit
        return entry

    hooks: dict[str, list[dict[str, Any]]] = {dialect.session_start: [handler(context, CONTEXT_TIMEOUT_S)]}
    if options.per_prompt:
        hooks.setdefault(dialect.per_prompt, []).append(handler(context, CONTEXT_TIMEOUT_S))
    stop = command_line("sync", "--wait", config=options.config)
    hooks.setdefault(dialect.stop, []).append(handler(stop, STOP_TIMEOUT_S, background=True))
    if options.capture:
        capture = command_line("capture", "--for", tool, config=options.config)
        hooks.setdefault(dialect.session_end, []).append(handler(capture, STOP_TIMEOUT_S, background=True))
    return hooks


def wanted_server(options: Options) -> dict[str, Any]:
    return {"command": "memsync", "args": memsync_args("mcp", config=options.config)}


def is_ours(handler: object) -> bool:
    command = handler.get("command") if isinstance(handler, dict) else None
    return isinstance(command, str) and bool(_OURS.match(command))


def plan_install(
    tool: Tool, scope: Scope, options: Options, current: Mapping[Path, str | None], home: Path, project: Path
) -> dict[Path, str | None]:
    """Every settings file's new text (None: the file does not exist and need not)."""
    plan: dict[Path, str | None] = {}
    for file in settings_files(tool, scope, home, project):
        text = current.get(file.path)
        if file.format == "toml":
            plan[file.path] = toml_with_block(text or "", toml_server_block(options))
            continue
        data = parse_json(file.path, text, comments=file.format == "jsonc")
        if file.hooks:
            merge_hooks(file.path, data, tool, wanted_hooks(tool, options))
        if file.mcp:
            servers = _object_at(file.path, data, "mcpServers", create=True)
            assert servers is not None
            servers[SERVER] = wanted_server(options)
        plan[file.path] = dump_json(data, text)
    return plan


def plan_uninstall(
    tool: Tool,
    scope: Scope,
    current: Mapping[Path, str | None],
    home: Path,
    project: Path,
    backups: Mapping[Path, Sequence[str]] | None = None,
) -> dict[Path, str | None]:
    """Every settings file's text without memsync's entries; None for a file left with nothing in it.

    ``backups`` (a file's backups, newest first): when one holds exactly what is left, its text is
    the answer, byte for byte: re-serialising JSON cannot know the user's own layout."""
    plan: dict[Path, str | None] = {}
    for file in settings_files(tool, scope, home, project):
        text = current.get(file.path)
        if text is None:
            plan[file.path] = None
            continue
        earlier = (backups or {}).get(file.path, ())
        if file.format == "toml":
            left = toml_with_block(text, None)
            same = next((b for b in earlier if b.rstrip("\n") == left.rstrip("\n")), None)
            plan[file.path] = text if left == text else same if same is not None else left if left.strip() else None
            continue
        data = parse_json(file.path, text, comments=file.format == "jsonc")
        before = json.dumps(data)
        if file.hooks:
            merge_hooks(file.path, data, tool, {})
        if file.mcp:
            servers = _object_at(file.path, data, "mcpServers", create=False)
            if servers is not None and _server_is_ours(servers.get(SERVER)):
                del servers[SERVER]
                if not servers:
                    del data["mcpServers"]
        if json.dumps(data) == before:
            plan[file.path] = text  # nothing of memsync's: the file stays as it is, even an empty {}
            continue
        same = next((b for b in earlier if _json_or_none(b, comments=file.format == "jsonc") == data), None)
        plan[file.path] = same if same is not None else dump_json(data, text) if data else None
    return plan


@dataclass(frozen=True, slots=True)
class Installed:
    """What of memsync's is in one tool's settings, in one scope."""

    events: tuple[str, ...]  # "SessionStart: memsync context --for claude-code", ...
    server: bool
    start_command: str | None = None  # the session start's context hook, as written (what status runs)


def installed(tool: Tool, scope: Scope, current: Mapping[Path, str | None], home: Path, project: Path) -> Installed:
    events: list[str] = []
    server = False
    start: str | None = None
    for file in settings_files(tool, scope, home, project):
        text = current.get(file.path)
        if text is None:
            continue
        if file.format == "toml":
            server = server or bool(_BLOCK.search(text))
            continue
        data = parse_json(file.path, text, comments=file.format == "jsonc")
        if file.hooks:
            hooks = _object_at(file.path, data, "hooks", create=False) or {}
            for event, groups in hooks.items():
                for group in groups if isinstance(groups, list) else ():
                    for handler in group.get("hooks", ()) if isinstance(group, dict) else ():
                        if is_ours(handler):
                            events.append(f"{event}: {handler['command']}")
                            if event == DIALECTS[tool].session_start and " context " in handler["command"]:
                                start = start or handler["command"]
        if file.mcp:
            servers = _object_at(file.path, data, "mcpServers", create=False) or {}
            server = server or _server_is_ours(servers.get(SERVER))
    return Installed(tuple(events), server, start)


def merge_hooks(path: Path, data: dict[str, Any], tool: Tool, wanted: Mapping[str, list[dict[str, Any]]]) -> None:
    """memsync's handlers out of every event, then ``wanted``'s in, each as one matcher group where
    memsync's first group stood (else last); the user's groups and handlers stay as they are."""
    hooks = _object_at(path, data, "hooks", create=bool(wanted))
    if hooks is None:
        return
    dialect = DIALECTS[tool]
    events = {dialect.session_start, dialect.per_prompt, dialect.stop, dialect.session_end, *wanted}
    for event in [e for e in hooks if e in events] + [e for e in wanted if e not in hooks]:
        groups = hooks.get(event, [])
        if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
            raise Malformed(
                f"{path}: hooks.{event} is not a list of matcher groups; fix or remove it, then run this again"
            )
        kept: list[dict[str, Any]] = []
        at: int | None = None
        for group in groups:
            handlers = group.get("hooks")
            if not isinstance(handlers, list):
                kept.append(group)
                continue
            others = [h for h in handlers if not is_ours(h)]
            if len(others) == len(handlers):
                kept.append(group)
                continue
            if at is None:
                at = len(kept)
            if others:
                kept.append({**group, "hooks": others})
        if event in wanted:
            kept.insert(len(kept) if at is None else at, {"hooks": wanted[event]})
        if kept:
            hooks[event] = kept
        elif event in hooks:
            del hooks[event]
    if not hooks:
        del data["hooks"]


def _server_is_ours(entry: object) -> bool:
    return isinstance(entry, dict) and entry.get("command") == "memsync"


def _object_at(path: Path, data: dict[str, Any], key: str, *, create: bool) -> dict[str, Any] | None:
    value = data.get(key)
    if value is None:
        if not create:
            return None
        value = data[key] = {}
    if not isinstance(value, dict):
        raise Malformed(f"{path}: {key} is not a JSON object; fix or remove it, then run this again")
    return value


def _json_or_none(text: str, *, comments: bool = False) -> object:
    try:
        return json.loads(without_comments(text) if comments else text)
    except json.JSONDecodeError:
        return None


def without_comments(text: str) -> str:
    """``text`` with its ``//`` and ``/* */`` comments (outside strings) blanked out, as Gemini CLI
    reads its settings (strip-json-comments): each comment becomes spaces, its newlines kept, so
    that an error's line and column still point into the file as written."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char == '"':  # a string, escapes and all
            end = i + 1
            while end < n and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", text[i:end]))
            i = end
        else:
            out.append(char)
            i += 1
    return "".join(out)


def has_comments(text: str | None) -> bool:
    """Whether a JSONC file's text holds comments (which writing it back as JSON loses)."""
    return text is not None and without_comments(text) != text


def parse_json(path: Path, text: str | None, *, comments: bool = False) -> dict[str, Any]:
    """The file's JSON object; ``comments``: a JSONC file (Gemini CLI's), its comments ignored."""
    if text is None or not text.strip():
        return {}
    try:
        data = json.loads(without_comments(text) if comments else text)
    except json.JSONDecodeError as exc:
        raise Malformed(
            f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "fix it (or move it away) and run this again"
        ) from None
    if not isinstance(data, dict):
        raise Malformed(f"{path} does not hold a JSON object; fix it (or move it away) and run this again")
    return data


def dump_json(data: Mapping[str, Any], original: str | None) -> str:
    """``data`` written the way ``original`` was: its indentation (or one line), its final newline."""
    indent: str | None = "  "
    if original and original.strip():
        body = original.strip()
        if "\n" not in body:
            indent = None
        else:
            found = re.search(r"\n([ \t]+)\S", body)
            indent = found.group(1) if found else "  "
    text = json.dumps(data, indent=indent, ensure_ascii=False)
    newline = original is None or not original.strip() or original.endswith("\n")
    return text + "\n" if newline else text


def toml_server_block(options: Options) -> str:
    args = ", ".join(json.dumps(a) for a in memsync_args("mcp", config=options.config))
    return f'{BLOCK_BEGIN}\n[mcp_servers.{SERVER}]\ncommand = "memsync"\nargs = [{args}]\n{BLOCK_END}\n'


def toml_with_block(text: str, block: str | None) -> str:
    """``text`` without memsync's block (and the blank line install put before it), then ``block``
    at the end: a TOML table placed last cannot capture the user's keys, and none of theirs ours."""
    without = _BLOCK.sub("", text)
    if block is None:
        return without
    if not without:
        return block
    return without + ("\n" if without.endswith("\n") else "\n\n") + block
