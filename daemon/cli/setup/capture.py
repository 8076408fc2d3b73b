"""``memsync capture --for TOOL``: a stop hook that stores the finished session as one episode, for
agents with no AgentDB writer of their own: into the site's journal (memsync's own file, which the
daemon pushes like the AgentDB file), attributed to the tool and tagged with the project; or, with
``--agentdb CMD``, into the AgentDB file through AgentDB's own CLI (``agentdb reflexion store``,
which takes no tags). What it records is in ``daemon.hooks.capture``; redaction happens before
anything leaves this process."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Final

from daemon.cli.common import Commands, add_config, fail, say
from daemon.hooks.plan import TOOLS
from sync.errors import EX_CONFIG

AGENTDB_TIMEOUT_S: Final = 60.0


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "capture",
        help="(a stop hook) store the agent's session as one episode of the site",
        description="Read a stop hook's JSON on stdin (session_id, transcript_path, cwd) and store the session as "
        "one episode: task = the first prompt, output = the last answer, redacted, attributed to the tool and tagged "
        "project:<name>; into the site's journal, or with --agentdb through `agentdb reflexion store`.",
    )
    parser.add_argument("--for", dest="tool", choices=TOOLS, required=True, help="the tool running the hook")
    parser.add_argument(
        "--agentdb",
        default=os.environ.get("MEMSYNC_AGENTDB_CLI") or None,
        metavar="CMD",
        help="store into the AgentDB file through AgentDB's CLI, run as CMD (default: $MEMSYNC_AGENTDB_CLI; "
        "unset: into the site's journal)",
    )
    add_config(parser)
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.config import load_settings
    from daemon.hooks.capture import capture, project_name, store_arguments, turns
    from sync.errors import ConfigError
    from sync.source.redaction import Redactor

    try:
        event = json.loads(sys.stdin.read() or "{}")
    except json.JSONDecodeError:
        fail("capture: stdin is not the hook's JSON; run it as a stop hook (memsync hooks install --capture)", 1)
    if not isinstance(event, dict):
        fail("capture: stdin is not a JSON object; run it as a stop hook (memsync hooks install --capture)", 1)
    if event.get("stop_hook_active"):
        return 0  # Claude Code runs Stop again after a blocking stop hook: the session is not over
    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        fail(f"capture: configuration error: {exc}", EX_CONFIG)
    transcript = ""
    if isinstance(event.get("transcript_path"), str) and event["transcript_path"]:
        try:
            transcript = Path(event["transcript_path"]).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            say(f"capture: cannot read {event['transcript_path']} ({exc.strerror}); storing what the hook said")
    cwd = Path(event["cwd"]) if isinstance(event.get("cwd"), str) and event["cwd"] else Path.cwd()
    privacy = settings.privacy
    episode = capture(
        event, turns(transcript), args.tool, project_name(cwd), Redactor.configured(privacy.patterns, privacy.allow)
    )
    if episode is None:
        say("capture: the session holds no prompt yet; nothing stored")
        return 0
    if args.agentdb is None:
        import sqlite3
        import time

        from daemon.hooks.capture import journal_entry
        from sync.source.journal.store import Journal

        try:
            with Journal(settings.journal_path) as journal:
                journal.append(journal_entry(episode, args.tool, project_name(cwd), int(time.time() * 1000)))
        except sqlite3.Error as exc:
            fail(f"capture: cannot write the journal {settings.journal_path} ({exc}); the session was not stored", 1)
        return 0
    command = [*shlex.split(args.agentdb), *store_arguments(episode)]
    env = {**os.environ, "AGENTDB_PATH": str(settings.agentdb.path)}
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=AGENTDB_TIMEOUT_S, check=False)
    except FileNotFoundError:
        fail(f"capture: {command[0]} not found; install agentdb (npm) or pass --agentdb CMD", EX_CONFIG)
    except subprocess.TimeoutExpired:
        fail(f"capture: agentdb did not finish within {AGENTDB_TIMEOUT_S:g}s; the session was not stored", 1)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        fail(f"capture: agentdb reflexion store exited {done.returncode} ({why}); the session was not stored", 1)
    return 0
