"""``memsync quarantine list|retry``: rows that could not be synced, with the reason."""

from __future__ import annotations

import argparse
import json
import sys

from daemon.cli.common import Commands, add_config, add_json, console, handled, load, say


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "quarantine",
        help="rows that could not be synced: list them, retry them",
        description="Episodes that could not be synced, with the reason.",
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    listing = actions.add_parser("list", help="quarantined rows with their reasons")
    add_config(listing)
    add_json(listing)
    listing.set_defaults(run=list_main)
    retry = actions.add_parser("retry", help="try quarantined rows again (all by default)")
    retry.add_argument("ids", nargs="*", type=int, metavar="ID", help="AgentDB ids to retry (default: all)")
    add_config(retry)
    retry.set_defaults(run=retry_main)


def list_main(args: argparse.Namespace) -> int:
    from daemon.site import open_sidecar_readonly

    with handled():
        settings = load(args, log_level="error")
        sidecar = open_sidecar_readonly(settings)
        entries = [] if sidecar is None else sidecar.quarantine()
        if sidecar is not None:
            sidecar.close()
    if args.as_json:
        for e in entries:
            record = {
                "id": e.local_id,
                "stage": e.stage,
                "reason": e.reason,
                "attempts": e.attempts,
                "retryRequested": e.retry_requested,
                "firstSeen": e.first_seen,
                "lastSeen": e.last_seen,
            }
            sys.stdout.write(json.dumps(record) + "\n")
        return 0
    out = console()
    if not entries:
        out.print("nothing quarantined")
        return 0
    from rich.table import Table

    table = Table("id", "stage", "attempts", "reason")
    for e in entries:
        table.add_row(str(e.local_id), e.stage, str(e.attempts), e.reason)
    out.print(table)
    return 0


def retry_main(args: argparse.Namespace) -> int:
    from daemon.cli.oneshot import one_shot, poke_daemon
    from daemon.site import open_sidecar

    with handled():
        settings = load(args)
        sidecar = open_sidecar(settings)
        try:
            marked = sidecar.request_retry(args.ids or None)
        finally:
            sidecar.close()
        if marked == 0:
            say("nothing to retry")
            return 0
        pid = poke_daemon(settings.lock_path)
        if pid is not None:
            say(f"{marked} marked; the daemon (pid {pid}) retries them now")
            return 0
        with one_shot(settings, 60.0) as (site, stop):
            report = site.engine.run_pass(stop)
        remaining = report.quarantined
        say(f"retried {marked}: {report.released} delivered, {remaining} still quarantined")
        return 1 if remaining else 0
