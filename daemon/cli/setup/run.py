"""``memsync run``: the daemon."""

from __future__ import annotations

import argparse

from daemon.cli.common import Commands, add_config, add_take_over, handled, load


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "run",
        help="the daemon: sync every episode until stopped",
        description="Tail the AgentDB file and sync every episode until stopped (SIGTERM/SIGINT finish the "
        "batch in flight). Under systemd it reports readiness, status and watchdog pings (Type=notify).",
    )
    add_config(parser)
    add_take_over(parser)
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.loop.runner import Daemon

    with handled():
        settings = load(args, daemon=True)
        return Daemon(settings, take_over=args.take_over).run()
