"""``memsync status``: is this site healthy? Exit 0 ok, 1 degraded, 2 down."""

from __future__ import annotations

import argparse
import json
import sys

from daemon.cli.common import Commands, add_config, add_json, console, handled, load


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "status",
        help="the site's health: daemon, backbone, backlog, lag, search index",
        description="Site, daemon, backbone, cursor, backlog, last sync, lag, quarantine, conflicts and the "
        "search index. Exit 0 ok, 1 degraded, 2 down.",
    )
    add_config(parser)
    add_json(parser)
    parser.add_argument("--fleet", action="store_true", help="every site and agent in the backbone, not only this site")
    parser.set_defaults(run=main)


def main(args: argparse.Namespace) -> int:
    from daemon.usecases.status import gather, render

    if args.fleet:
        from daemon.cli.fleet import fleet_main

        return fleet_main(args)

    with handled():
        settings = load(args, log_level="error")
        report = gather(settings)
    if args.as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        render(report, console())
    return int(report["exitCode"])
