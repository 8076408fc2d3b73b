"""``memsync heartbeat --agent NAME``: an agent's hook says it is alive.

Cheap, because a hook may call it often: with a daemon running it writes one small file into the
site's heartbeat spool (``<state file>.heartbeats/<agent>.json``, standard library only) and the
daemon forwards it with its own next heartbeat; with none, it heartbeats the backbone itself.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

from daemon.cli.common import EX_USAGE, Commands, add_config, fail, handled, load, parse_or_none

AGENT_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._@:/-]{0,127}$")


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "heartbeat",
        help="an agent says it is alive (for its hooks): cheap, through the daemon when one runs",
        description="Record that an agent is alive in the registry (memsync agents). Through the running daemon "
        "(forwarded with its next heartbeat), or straight to the backbone when no daemon runs.",
    )
    add_heartbeat_arguments(parser)
    parser.set_defaults(run=main)


def add_heartbeat_arguments(parser: argparse.ArgumentParser) -> None:
    add_config(parser)
    parser.add_argument("--agent", required=True, metavar="NAME", help="the agent's name")
    parser.add_argument("--platform", default="unknown", metavar="P", help="e.g. claude-code (default: unknown)")
    parser.add_argument("--interface", metavar="I", help="e.g. cli, ide, api")


def spool(state: Path, agent: str, platform: str, interface: str | None, at: float) -> None:
    """One file per agent, replaced atomically: the latest beat is all that matters."""
    from daemon.config_paths import heartbeat_spool_for

    folder = heartbeat_spool_for(state)
    folder.mkdir(mode=0o700, exist_ok=True)
    name = re.sub(r"[^A-Za-z0-9._-]", "_", agent)[:100] + ".json"
    temporary = folder / f".{name}.{os.getpid()}"
    temporary.write_text(
        json.dumps({"agent": agent, "platform": platform, "interface": interface, "at": at}), encoding="utf-8"
    )
    temporary.replace(folder / name)


def fast_heartbeat(argv: Sequence[str]) -> int | None:
    """Into the spool of a running daemon; None when the full path must answer."""
    from daemon.cli.locate import quick_paths
    from daemon.control.lock import DAEMON, lock_holder

    args = parse_or_none("memsync heartbeat", add_heartbeat_arguments, argv)
    if args is None or not AGENT_NAME.match(args.agent):
        return None
    paths = quick_paths(args.config, os.environ)
    if paths is None:
        return None
    try:
        holder = lock_holder(paths.lock)
    except OSError:
        return None  # the full path says what is wrong with the lock's path
    if holder is None or holder.role != DAEMON:
        return None
    try:
        spool(paths.state, args.agent, args.platform, args.interface, time.time())
    except OSError:
        return None
    return 0


def main(args: argparse.Namespace) -> int:
    from daemon.control.lock import DAEMON, lock_holder
    from daemon.paths import writable_problem
    from daemon.site import opened_backbone
    from sync.errors import PathProblem

    with handled():
        if not AGENT_NAME.match(args.agent):
            fail(f"--agent {args.agent!r}: use letters, digits, spaces and ._@:/- (at most 128)", EX_USAGE)
        settings = load(args, log_level="error")
        # The state file's folder holds the lock and the spool: one it cannot use is said (78),
        # not passed over by a beat that goes to the backbone anyway.
        problem = writable_problem(settings, create=False)
        if problem is not None:
            raise PathProblem(problem)
        holder = lock_holder(settings.lock_path)
        if holder is not None and holder.role == DAEMON:
            spool(settings.state_path, args.agent, args.platform, args.interface, time.time())
            return 0
        with opened_backbone(settings) as backbone:
            backbone.heartbeat(args.agent, args.platform, args.interface, None)
        return 0
