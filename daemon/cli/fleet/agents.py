"""``memsync agents`` and ``memsync status --fleet``: every site and agent in the backbone
(``daemon.usecases.fleet.status.fleet``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from daemon.cli.common import Commands, add_config, add_json, console, handled, load
from daemon.counts import counted


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "agents",
        help="every agent of every site: online or offline, last seen",
        description="Every agent in the registry, from every site: online (a sign of life within "
        "jobs.stale_after) or offline, platform, interface, when it was last seen and its last episode. "
        "Exit 0 ok, 1 degraded, 2 down (the fleet's worst).",
    )
    add_config(parser)
    add_json(parser)
    parser.set_defaults(run=agents_main)


def _gather(args: argparse.Namespace) -> dict[str, Any]:
    from daemon.usecases.fleet.status import fleet

    return fleet(load(args, log_level="error"), time.time())


def agents_main(args: argparse.Namespace) -> int:
    with handled():
        report = _gather(args)
    if args.as_json:
        sys.stdout.write(json.dumps(report["agents"], indent=2) + "\n")
        return int(report["exitCode"])
    from rich.table import Table

    table = Table("site", "agent", "state", "platform", "interface", "last seen")
    for a in report["agents"]:
        state = "[green]online[/]" if a["status"] == "online" else "[yellow]offline[/]"
        table.add_row(a["site"], a["agent_name"], state, a["platform"], a["interface"] or "", a["lastSeen"] or "")
    console().print(table)
    return int(report["exitCode"])


def fleet_main(args: argparse.Namespace) -> int:
    with handled():
        report = _gather(args)
    if args.as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
        return int(report["exitCode"])
    from rich.table import Table

    out = console()
    table = Table("site", "state", "version", "host", "cursor", "lag", "backlog", "last sync", "index", "health")
    for s in report["sites"]:
        table.add_row(
            s["site"],
            "[green]online[/]" if s["online"] else "[red]offline[/]",
            s["version"] or "",
            s["host"] or "",
            "" if s["cursor"] is None else str(s["cursor"]),
            "" if s["lag_s"] is None else f"{s['lag_s']:.0f}s",
            "" if s["backlog"] is None else str(s["backlog"]),
            s["lastSyncAt"] or "never",
            s["index_state"] or "",
            s["health"] or "",
        )
    out.print(table)
    online = sum(a["status"] == "online" for a in report["agents"])
    out.print(
        f"{counted(len(report['agents']), 'agent')} ({online} online, {len(report['agents']) - online} offline),"
        f" {counted(report['pendingApprovals'], 'approval')} pending"
    )
    for reason in report["reasons"]:
        out.print(f"- {reason}")
    return int(report["exitCode"])
