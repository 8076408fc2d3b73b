"""``memsync status``: is this site healthy? Exit 0 ok, 1 degraded, 2 down. The facts and the
verdict are ``daemon.usecases.fleet.status``'s; this module shows them."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from daemon.cli.common import Commands, add_config, add_json, console, handled, load
from daemon.counts import counted
from daemon.health.site import Level

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from daemon.usecases.fleet.status import AgentDBState, JournalState, StatusReport, TelegramState, WarmState


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
    from daemon.usecases.fleet.status import gather

    if args.fleet:
        from daemon.cli.fleet.agents import fleet_main

        return fleet_main(args)

    with handled():
        settings = load(args, log_level="error")
        report = gather(settings)
    if args.as_json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        render(report, console())
    return int(report["exitCode"])


def _behind_text(warm: WarmState) -> str:
    count = warm.get("behind")
    if count is None:
        return "how far behind is unknown (backbone unreachable)"
    if count == 0:
        return "up to date"
    return f"{'more than ' if not warm.get('behindExact') else ''}{counted(count, 'episode')} behind"


def _telegram_line(telegram: TelegramState) -> str:
    if not telegram["enabled"]:
        return "off (alerts go to the log only)"
    waiting = f"{counted(telegram['waiting'], 'message')} waiting" if telegram["waiting"] else "nothing waiting"
    error = f" (last error: {telegram['lastError']})" if telegram["waiting"] and telegram["lastError"] else ""
    last = f"; last sent {telegram['lastSentAt']}" if telegram["lastSentAt"] else ""
    refused = f"; [red]{telegram['tokenRefused']}[/]" if telegram.get("tokenRefused") else ""
    return f"chat {telegram['chat']}: {waiting}{error}{last}{refused}"


def _agentdb_text(adb: AgentDBState) -> str:
    if adb["waiting"]:
        return f"waiting for the AgentDB file at {adb['path']} (not created yet)"
    if adb["readable"]:
        return f"{adb['path']}: {counted(adb['episodes'], 'episode')}, max id {adb['maxId']}"
    return f"{adb['path']}: [red]{adb['error']}[/]"


def print_stripped(table: Table, console: Console) -> None:
    """The table without the spaces rich pads its last column with: a line that ends in spaces
    breaks a diff, a grep for ``$`` and a terminal's copy."""
    from rich.segment import Segment, Segments

    for line in console.render_lines(table, console.options, pad=False):
        while line and not line[-1].control and not line[-1].text.strip():
            line.pop()
        if line and not line[-1].control:
            last = line[-1]
            line[-1] = Segment(last.text.rstrip(), last.style)
        console.print(Segments([*line, Segment.line()]), soft_wrap=True, end="")


_STYLE = {Level.OK: "green", Level.DEGRADED: "yellow", Level.DOWN: "red"}


def _journal_text(journal: JournalState) -> str | None:
    """The saved memories' line (``memsync remember``); None while none was ever saved."""
    if not journal["saved"] and not journal["lastError"]:
        return None
    waiting = "?" if journal["backlog"] is None else str(journal["backlog"])
    problem = f"; [red]{journal['lastError']}[/]" if journal["lastError"] else ""
    return f"{counted(journal['saved'], 'memory', 'memories')} (memsync remember), {waiting} to push{problem}"


def render(report: StatusReport, console: Console) -> None:
    from rich.table import Table

    level = Level(report["exitCode"])
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    table.add_row("site", report["site"])
    table.add_row("health", f"[{_STYLE[level]}]{level.label}[/]")
    daemon = report["daemon"]
    table.add_row("daemon", f"running (pid {daemon['pid']})" if daemon["running"] else "[yellow]not running[/]")
    bb = report["backbone"]
    reach = "[green]reachable[/]" if bb["reachable"] else f"[red]unreachable[/]: {bb['error']}"
    table.add_row("backbone", f"{bb['kind']} ({bb.get('description', '?')}): {reach}")
    if bb.get("source"):
        table.add_row("fed by", bb["source"])
    table.add_row("agentdb", _agentdb_text(report["agentdb"]))
    if (saved := _journal_text(report["journal"])) is not None:
        table.add_row("saved", saved)
    table.add_row("cursor", f"{report['cursor']} ({counted(report['synced'], 'episode')} synced)")
    table.add_row("backlog", "?" if report["backlog"] is None else str(report["backlog"]))
    table.add_row("last sync", report["lastSyncAt"] or "never")
    table.add_row("lag", "?" if report["lagSeconds"] is None else f"{report['lagSeconds']:.1f}s")
    table.add_row("quarantined", str(report["quarantined"]))
    table.add_row("conflicts", f"{report['conflicts']} (reused ids; both episodes kept)")
    table.add_row(
        "redacted",
        f"{counted(report['redacted'], 'episode')} had secrets replaced before they left"
        if report["redaction"]
        else "[yellow]off[/] (privacy.redact = false: secrets in episodes leave the site)",
    )
    archive = bb.get("archive")
    if archive is not None:
        run = archive["lastRun"]
        last = "never run" if run is None else f"last run {run['at']}: {counted(run['archived'], 'episode')} archived"
        table.add_row(
            "archive",
            f"{counted(archive['episodes'], 'episode')} in {counted(archive['files'], 'file')}, "
            f"{archive['bytes']:,} bytes; {last}",
        )
    warm = report["warm"]
    if not warm["enabled"]:
        table.add_row("search index", "off (warm.enabled = false)")
    else:
        where = f"{warm['store']} {warm['collection']}, {warm['model'] or warm['embedder']}"
        shown = warm["problem"] or f"{warm['state']}, {_behind_text(warm)}"
        if warm["modelLoaded"] is False:
            shown += " (model let go while idle)"
        purge = warm.get("purge")
        if purge is not None:
            when = f" {purge['at']}" if purge["at"] else ""
            shown += f"; forgotten episodes' purge: {purge['state']}{when}"
        if warm.get("alias"):
            where += f" (behind alias {warm['alias']})"
        if warm.get("notice"):
            shown += f"; {warm['notice']}"
        table.add_row("search index", f"{where}: {shown}")
    table.add_row("telegram", _telegram_line(report["telegram"]))
    print_stripped(table, console)
    for reason in report["reasons"]:
        console.print(f"[{_STYLE[level]}]- {reason}[/]")
