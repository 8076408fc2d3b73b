"""``memsync hooks install|uninstall|status``: wire memsync into Claude Code, Codex CLI or Gemini CLI.

The files' new text comes from ``daemon.hooks.plan`` (pure); this module reads them, backs them up,
writes them atomically and says what it did. ``HOME`` and the working directory are the seams:
the user scope's files are under ``Path.home()``, the project scope's under the project root.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Final, cast

from daemon.cli.common import Commands, add_config, fail
from daemon.hooks.plan import (
    SCOPES,
    TOOLS,
    Malformed,
    Options,
    Scope,
    Tool,
    installed,
    plan_install,
    plan_uninstall,
    settings_files,
)
from sync.errors import EX_CONFIG

BACKUP_INFIX: Final = ".memsync-backup-"
CONTEXT_CHECK_TIMEOUT_S: Final = 20.0


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "hooks",
        help="give Claude Code, Codex or Gemini CLI the memory: context hooks, a sync hook, the MCP server",
        description="Write memsync's hooks (context at session start and optionally on each prompt, sync --wait "
        "when the agent stops) and its MCP server into an agent tool's own settings, merged with what is there.",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)

    install = actions.add_parser("install", help="add memsync's hooks and MCP server (idempotent; backs files up)")
    _common(install)
    install.add_argument("--per-prompt", action="store_true", help="also add context on every prompt")
    install.add_argument(
        "--capture",
        action="store_true",
        help="also store each session as an AgentDB episode (for agents with no AgentDB writer of their own)",
    )
    add_config(install)
    install.set_defaults(run=lambda args: run_install(args, time.time))

    uninstall = actions.add_parser("uninstall", help="remove exactly what install added")
    _common(uninstall)
    uninstall.set_defaults(run=lambda args: run_uninstall(args, time.time))

    status = actions.add_parser("status", help="what is installed where, and whether it works")
    status.add_argument("tool", nargs="?", choices=TOOLS, help="one tool (default: all three)")
    status.add_argument("--project", type=Path, metavar="DIR", help="the project (default: the git top-level here)")
    add_config(status)
    status.set_defaults(run=run_status)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", choices=TOOLS)
    parser.add_argument("--scope", choices=SCOPES, default="user", help="user (default) or project")
    parser.add_argument("--project", type=Path, metavar="DIR", help="the project (default: the git top-level here)")
    parser.add_argument("--dry-run", action="store_true", help="print the change, write nothing")


def project_root(start: Path) -> Path:
    """The git top-level above ``start``, else ``start``: a project's settings live at its root."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / ".git").exists():
            return folder
    return start


def _project(args: argparse.Namespace) -> Path:
    return project_root(args.project if args.project is not None else Path.cwd())


def read_files(paths: Sequence[Path]) -> dict[Path, str | None]:
    current: dict[Path, str | None] = {}
    for path in paths:
        try:
            current[path] = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            current[path] = None
        except UnicodeDecodeError:
            raise Malformed(f"{path} is not UTF-8 text; fix it (or move it away) and run this again") from None
    return current


def backup_name(path: Path, now: float) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
    candidate = path.with_name(f"{path.name}{BACKUP_INFIX}{stamp}")
    n = 0
    while candidate.exists():
        n += 1
        candidate = path.with_name(f"{path.name}{BACKUP_INFIX}{stamp}-{n}")
    return candidate


def backups_of(path: Path) -> list[str]:
    """The file's backups' texts, newest first."""
    # By name: the stamp in it is when the backup was taken (copy2 keeps the file's own mtime).
    found = sorted(path.parent.glob(f"{path.name}{BACKUP_INFIX}*"), reverse=True)
    texts = []
    for backup in found:
        try:
            texts.append(backup.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError):
            continue
    return texts


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.memsync-{os.getpid()}")
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o600 if path.name == ".claude.json" else 0o644
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
        out.flush()
        os.fsync(out.fileno())
    os.chmod(temporary, mode)
    temporary.replace(path)


def apply(current: Mapping[Path, str | None], planned: Mapping[Path, str | None], *, dry_run: bool, now: float) -> int:
    """Write the planned files (a backup of each existing one first) or, dry, print the diff; how many change."""
    changed = 0
    for path, new in planned.items():
        old = current.get(path)
        if new == old:
            continue
        changed += 1
        if dry_run:
            sys.stdout.writelines(
                difflib.unified_diff(
                    (old or "").splitlines(keepends=True),
                    (new or "").splitlines(keepends=True),
                    fromfile=str(path) if old is not None else "/dev/null",
                    tofile=str(path) if new is not None else "/dev/null",
                )
            )
            continue
        backup = None
        if old is not None:
            backup = backup_name(path, now)
            shutil.copy2(path, backup)
        if new is None:
            path.unlink()
            print(f"removed {path}" + (f" (backup: {backup})" if backup else ""))
        else:
            write_atomically(path, new)
            print(f"{'updated' if old is not None else 'created'} {path}" + (f" (backup: {backup})" if backup else ""))
    return changed


def _config(args: argparse.Namespace) -> Path | None:
    if args.config is None:
        return None
    config = Path(args.config).expanduser().resolve()
    if not config.is_file():
        fail(f"config file {config} does not exist; pass the site's config with -c (or none)", EX_CONFIG)
    return config


def run_install(args: argparse.Namespace, now: Callable[[], float]) -> int:
    tool, scope = cast(Tool, args.tool), cast(Scope, args.scope)
    home, project = Path.home(), _project(args)
    options = Options(per_prompt=args.per_prompt, capture=args.capture, config=_config(args))
    files = [f.path for f in settings_files(tool, scope, home, project)]
    try:
        current = read_files(files)
        planned = plan_install(tool, scope, options, current, home, project)
    except Malformed as exc:
        fail(f"{exc} (nothing was written)", EX_CONFIG)
    changed = apply(current, planned, dry_run=args.dry_run, now=now())
    if not changed:
        print(f"memsync is already installed for {tool} ({scope}); nothing to change")
    elif args.dry_run:
        print(f"dry run: {changed} file(s) would change; nothing was written", file=sys.stderr)
    return 0


def run_uninstall(args: argparse.Namespace, now: Callable[[], float]) -> int:
    tool, scope = cast(Tool, args.tool), cast(Scope, args.scope)
    home, project = Path.home(), _project(args)
    files = [f.path for f in settings_files(tool, scope, home, project)]
    try:
        current = read_files(files)
        planned = plan_uninstall(tool, scope, current, home, project, {p: backups_of(p) for p in files})
    except Malformed as exc:
        fail(f"{exc} (nothing was written)", EX_CONFIG)
    changed = apply(current, planned, dry_run=args.dry_run, now=now())
    if not changed:
        print(f"memsync is not installed for {tool} ({scope}); nothing to change")
    elif args.dry_run:
        print(f"dry run: {changed} file(s) would change; nothing was written", file=sys.stderr)
    return 0


def run_status(args: argparse.Namespace) -> int:
    home, project = Path.home(), _project(args)
    tools: tuple[Tool, ...] = (args.tool,) if args.tool else TOOLS
    problems = 0
    for tool in tools:
        for scope in SCOPES:
            files = [f.path for f in settings_files(tool, scope, home, project)]
            try:
                found = installed(tool, scope, read_files(files), home, project)
            except Malformed as exc:
                print(f"{tool} ({scope}): cannot read: {exc}")
                problems += 1
                continue
            if not found.events and not found.server:
                print(f"{tool} ({scope}): not installed")
                continue
            print(f"{tool} ({scope}): {len(found.events)} hook(s), MCP server {'yes' if found.server else 'no'}")
            for event in found.events:
                print(f"  {event}")
    executable = shutil.which("memsync")
    if executable is None:
        print("memsync on PATH: not found; the hooks will fail: put memsync's directory on the agents' PATH")
        problems += 1
    else:
        print(f"memsync on PATH: {executable}")
    print(f"daemon: {_daemon_state(args)}")
    if executable is not None:
        ok, sentence = _context_check(executable, project, args.config)
        print(f"context check: {sentence}")
        problems += not ok
    return 1 if problems else 0


def _daemon_state(args: argparse.Namespace) -> str:
    from daemon.config import load_settings
    from sync.errors import MemsyncError

    try:
        path = load_settings(args.config).socket_path
    except (MemsyncError, OSError, ValueError) as exc:
        return f"cannot tell: the configuration does not load ({exc})"
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(2.0)
    try:
        probe.connect(str(path))
    except OSError:
        return f"not running (nothing answers on {path}): hooks then add no context; start it with memsync run"
    finally:
        probe.close()
    return f"answers on {path}"


def _context_check(executable: str, project: Path, config: Path | None) -> tuple[bool, str]:
    """Run the session-start hook as Claude Code would, with a made-up session."""
    event = {"session_id": "memsync-hooks-status", "cwd": str(project), "hook_event_name": "SessionStart"}
    event |= {"source": "startup", "transcript_path": ""}
    command = [executable, "context", "--for", "claude-code", *(["--config", str(config)] if config else [])]
    try:
        done = subprocess.run(
            command,
            input=json.dumps(event),
            capture_output=True,
            text=True,
            timeout=CONTEXT_CHECK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return False, f"memsync context did not answer within {CONTEXT_CHECK_TIMEOUT_S:g}s"
    except OSError as exc:
        return False, f"could not run {executable}: {exc.strerror or exc}"
    if done.returncode == 2 and "invalid choice" in done.stderr:
        return True, "this memsync has no `memsync context` yet: the context hooks will add nothing"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return False, f"memsync context exited {done.returncode}: {why}"
    return True, f"ok ({len(done.stdout)} characters of context for a new session here)"


__all__ = ["register"]
