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
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
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
    has_comments,
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

    install = actions.add_parser(
        "install",
        help="add memsync's hooks and MCP server (idempotent; backs up the user's files)",
        description="Add memsync's hooks and MCP server, each command naming the site's config (-c FILE or "
        "MEMSYNC_CONFIG, required unless MEMSYNC_ variables alone configure a site). Each file changed keeps "
        "one backup, the user's own text, which uninstall restores byte for byte.",
    )
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


def apply(
    current: Mapping[Path, str | None],
    planned: Mapping[Path, str | None],
    *,
    dry_run: bool,
    now: float,
    pristine: Collection[Path] = (),
) -> int:
    """Write the planned files or, dry, print the diff; how many change. A file in ``pristine``
    (it holds none of memsync's entries: the user's own) is backed up first, in place of any
    earlier backup: one a file, the last text memsync did not write into, which uninstall restores
    byte for byte. A file memsync already wrote into gets none: its backup is still that one."""
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
        if old is not None and path in pristine:
            for earlier in path.parent.glob(f"{path.name}{BACKUP_INFIX}*"):
                earlier.unlink()
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


def _found_without_a_config() -> None:
    """Fail (78) unless the environment alone configures a site. The hooks run in the agent's
    environment, with no -c: a config must be written into them, or bare commands find no site."""
    from daemon.config import load_settings
    from sync.errors import MemsyncError

    try:
        load_settings(None)
    except (MemsyncError, OSError, ValueError):
        fail(
            "no config file given: pass the site's config with -c FILE (or set MEMSYNC_CONFIG) for the hooks "
            "to name, else they find no site; nothing was written",
            EX_CONFIG,
        )


def run_install(args: argparse.Namespace, now: Callable[[], float]) -> int:
    tool, scope = cast(Tool, args.tool), cast(Scope, args.scope)
    home, project = Path.home(), _project(args)
    config = _config(args)
    if config is None:
        _found_without_a_config()
    options = Options(per_prompt=args.per_prompt, capture=args.capture, config=config)
    files = [f.path for f in settings_files(tool, scope, home, project)]
    try:
        current = read_files(files)
        planned = plan_install(tool, scope, options, current, home, project)
        pristine = _pristine(tool, scope, current, home, project)
    except Malformed as exc:
        fail(f"{exc} (nothing was written)", EX_CONFIG)
    _say_lost_comments(current, planned, pristine, dry_run=args.dry_run)
    changed = apply(current, planned, dry_run=args.dry_run, now=now(), pristine=pristine)
    if not changed:
        print(f"memsync is already installed for {tool} ({scope}); nothing to change")
    elif args.dry_run:
        print(f"dry run: {changed} file(s) would change; nothing was written", file=sys.stderr)
    return 0


def _say_lost_comments(
    current: Mapping[Path, str | None], planned: Mapping[Path, str | None], pristine: Collection[Path], *, dry_run: bool
) -> None:
    """A JSONC file (Gemini CLI's settings) written back as JSON loses its comments: say so, and
    where they are kept, before it happens."""
    for path, new in planned.items():
        old = current.get(path)
        if new is None or new == old or not has_comments(old) or has_comments(new):
            continue
        kept = (
            "its backup beside it keeps them (`memsync hooks uninstall` restores it)"
            if path in pristine
            else "copy them back by hand if you need them"
        )
        verb = "would drop" if dry_run else "drops"
        print(f"note: {path} has comments, which JSON cannot hold: writing it {verb} them; {kept}", file=sys.stderr)


def _pristine(tool: Tool, scope: Scope, current: Mapping[Path, str | None], home: Path, project: Path) -> set[Path]:
    """The files that exist and hold none of memsync's entries: the user's own text."""
    found = set()
    for path, text in current.items():
        mine = installed(tool, scope, {path: text}, home, project)
        if text is not None and not mine.events and not mine.server:
            found.add(path)
    return found


def run_uninstall(args: argparse.Namespace, now: Callable[[], float]) -> int:
    tool, scope = cast(Tool, args.tool), cast(Scope, args.scope)
    home, project = Path.home(), _project(args)
    files = [f.path for f in settings_files(tool, scope, home, project)]
    try:
        current = read_files(files)
        planned = plan_uninstall(tool, scope, current, home, project, {p: backups_of(p) for p in files})
    except Malformed as exc:
        fail(f"{exc} (nothing was written)", EX_CONFIG)
    _say_lost_comments(current, planned, set(), dry_run=args.dry_run)
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
    starts: list[tuple[str, str]] = []  # (where, the installed session-start command)
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
            if found.start_command is not None:
                starts.append((f"{tool}, {scope}", found.start_command))
    executable = shutil.which("memsync")
    if executable is None:
        print("memsync on PATH: not found; the hooks will fail: put memsync's directory on the agents' PATH")
        problems += 1
    else:
        print(f"memsync on PATH: {executable}")
    print(f"daemon: {_daemon_state(args)}")
    # What is installed is what the agents run: each session-start hook as written, config and all.
    for where, command in starts:
        ok, sentence = _context_check(command, project)
        print(f"context check ({where}): {sentence}")
        problems += not ok
    if not starts and executable is not None:  # nothing installed: what `hooks install` would write
        command = shlex.join([executable, "context", "--for", "claude-code", *_config_args(args.config)])
        ok, sentence = _context_check(command, project)
        print(f"context check: {sentence}")
        problems += not ok
    return 1 if problems else 0


def _config_args(config: Path | None) -> list[str]:
    return ["--config", str(config)] if config else []


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


def _context_check(command: str, project: Path) -> tuple[bool, str]:
    """Run a session-start hook's command as the agent tools do (through the shell, in the project,
    the session's JSON on stdin), with a made-up session. The environment is this one without
    MEMSYNC_CONFIG, which an agent's need not have: the hook must name its config itself."""
    event = {"session_id": "memsync-hooks-status", "cwd": str(project), "hook_event_name": "SessionStart"}
    event |= {"source": "startup", "transcript_path": ""}
    environ = {k: v for k, v in os.environ.items() if k != "MEMSYNC_CONFIG"}
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            input=json.dumps(event),
            capture_output=True,
            text=True,
            timeout=CONTEXT_CHECK_TIMEOUT_S,
            check=False,
            cwd=project,
            env=environ,
        )
    except subprocess.TimeoutExpired:
        return False, f"the hook did not answer within {CONTEXT_CHECK_TIMEOUT_S:g}s: {command}"
    except OSError as exc:
        return False, f"could not run the hook {command}: {exc.strerror or exc}"
    why = (done.stderr.strip().splitlines() or ["no message"])[-1]
    if done.returncode == 2 and "invalid choice" in done.stderr:
        return True, "this memsync has no `memsync context` yet: the context hooks will add nothing"
    if done.returncode != 0:
        return False, f"the hook exited {done.returncode}: {why}"
    if done.stderr.strip():  # the hook answers nothing rather than fail, and says why
        return False, f"the hook adds no context: {why}"
    return True, f"ok ({_context_chars(done.stdout)} characters of context for a new session here)"


def _context_chars(answer: str) -> int:
    """The context a hook's answer carries (its ``additionalContext``), in characters."""
    try:
        data = json.loads(answer) if answer.strip() else {}
    except json.JSONDecodeError:
        return len(answer)
    output = data.get("hookSpecificOutput") if isinstance(data, dict) else None
    context = output.get("additionalContext") if isinstance(output, dict) else None
    return len(context) if isinstance(context, str) else 0


__all__ = ["register"]
