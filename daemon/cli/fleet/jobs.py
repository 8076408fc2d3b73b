"""``memsync jobs [run NAME]`` and ``memsync digest``: the periodic jobs, where they run, their
last and next runs; running one now; the stored daily digest (``daemon.usecases.fleet.jobs``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, console, fail, handled, load, say
from daemon.counts import counted
from daemon.health.fleet import iso_ms
from sync.errors import EX_CONFIG

if TYPE_CHECKING:
    from daemon.usecases.fleet.jobs import JobView


def register(commands: Commands) -> None:
    parser = commands.add_parser(
        "jobs",
        help="the periodic jobs: schedule, where they run, last and next run; run one now",
        description="Every periodic job: its schedule, where it runs (this site, one site of the hub, or Convex's "
        "crons), its last run (by whom, outcome, summary) and its next.",
    )
    add_config(parser)
    add_json(parser)
    parser.set_defaults(run=list_main)
    actions = parser.add_subparsers(title="actions", metavar="ACTION")
    now = actions.add_parser(
        "run",
        help="run a job now, any day: a manual run, recorded as such; the schedule's slots run as usual",
        description="Runs the job's body now and records the run under a slot of its own (manual:<instant>). "
        "It takes no scheduled slot and needs no grace; two manual runs of one job never run at once. "
        "Exit 0 only when the job ran and ended ok.",
    )
    now.add_argument("name", metavar="NAME", help="the job's name (see `memsync jobs`)")
    add_config(now)
    now.set_defaults(run=run_main)

    digest = commands.add_parser(
        "digest",
        help="the daily digest: per site and agent, episodes, success, reward, top tasks",
        description="The daily digest the daily-digest job stored for a UTC day (default: yesterday). "
        "For today, on the embedded hub, it is built now: today so far, the episodes created since 00:00 UTC.",
    )
    add_config(digest)
    digest.add_argument(
        "--date", metavar="YYYY-MM-DD", help="the UTC day (default: yesterday; today: built now, so far)"
    )
    digest.add_argument(
        "--send", action="store_true", help="send it to Telegram now (default day: the latest digest stored)"
    )
    add_json(digest)
    digest.set_defaults(run=digest_main)


def as_json(view: JobView) -> dict[str, Any]:
    """A job as ``jobs --json`` shows it."""
    last = view.last
    return {
        "job": view.job,
        "schedule": view.schedule,
        "where": view.where,
        "enabled": view.enabled,
        "next": view.next,
        "last": None
        if last is None
        else {
            "slot": last.slot,
            "site": last.site,
            "outcome": last.outcome,
            "summary": last.summary,
            "startedAt": iso_ms(last.started_at),
            "endedAt": iso_ms(last.ended_at),
        },
    }


def list_main(args: argparse.Namespace) -> int:
    from daemon.site import opened_backbone
    from daemon.usecases.fleet.jobs import jobs

    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            rows = [as_json(view) for view in jobs(settings, backbone, time.time())]
    if args.as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    from rich import box
    from rich.table import Table

    # A job's name and its next fire are what a reader looks up: never wrapped or cut, on an
    # 80-column terminal too (no vertical rules, the next fire to the minute); the rest wraps.
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    table.add_column("job", no_wrap=True, min_width=max((len(row["job"]) for row in rows), default=0))
    table.add_column("schedule", overflow="fold")
    table.add_column("runs on", overflow="fold")
    table.add_column("last run", overflow="fold", ratio=1)
    table.add_column("next (UTC)", no_wrap=True, min_width=len("2000-01-01 00:00"))
    for row in rows:
        last = row["last"]
        shown = (
            "never"
            if last is None
            else f"{last['outcome']} by {last['site']} at {last['startedAt']}: {last['summary']}"
        )
        upcoming = row["next"][:16].replace("T", " ") if row["next"] else "disabled"
        table.add_row(row["job"], row["schedule"], row["where"], shown, upcoming)
    console().print(table)
    failed = [r for r in rows if r["last"] is not None and r["last"]["outcome"] == "failed"]
    return 1 if failed else 0


def run_main(args: argparse.Namespace) -> int:
    from daemon.usecases.fleet.jobs import job_named, run_job

    with handled():
        settings = load(args)
        try:
            spec = job_named(settings, args.name)
        except LookupError as exc:
            fail(str(exc), EX_USAGE)
        done = run_job(settings, spec, now=time.time())
        if not done.ran:  # nothing was done: never a success
            say(f"{spec.name}: {done.summary}")
            return 1
        say(f"{spec.name}, slot {done.slot}: {done.outcome}: {done.summary}")
        return 0 if done.outcome == "ok" else 1


def digest_main(args: argparse.Namespace) -> int:
    from daemon.site import duties_of, opened_backbone
    from daemon.usecases.fleet.jobs import digest

    with handled():
        settings = load(args, log_level="error")
        now = time.time()
        if args.date is not None:
            try:
                datetime.strptime(args.date, "%Y-%m-%d")
            except ValueError:
                fail(f"--date {args.date!r}: use YYYY-MM-DD", EX_USAGE)
        if args.send and not settings.telegram.enabled:
            fail(
                "--send needs Telegram: set MEMSYNC_TELEGRAM__BOT_TOKEN (environment or .env) and telegram.chat_id",
                EX_CONFIG,
            )
        with opened_backbone(settings, create=False) as backbone:
            duties = duties_of(settings, backbone)
            found = digest(backbone, duties, day=args.date, latest=args.send and args.date is None, now=now)
            if args.send and found.found is not None:
                say(duties.send_digest(found.day, found.found))
                return 0
        if found.found is None:
            fail(found.missing or f"no digest for {found.day}", 1)
    day, shown = found.day, found.found
    if args.as_json:
        sys.stdout.write(json.dumps(shown, indent=2) + "\n")
        return 0
    out = console()
    out.print(f"[bold]digest for {day}[/]")
    for site in shown.get("sites", []):
        rate = site.get("successRate")
        reward = site.get("meanReward")
        out.print(
            f"{site['site']}: {counted(site.get('episodes', 0), 'episode')}"
            + ("" if rate is None else f", {rate:.0%} success")
            + ("" if reward is None else f", mean reward {reward:.2f}")
            + f", health {site.get('health') or '?'}, {site.get('quarantined', 0)} quarantined, "
            f"{site.get('conflicts', 0)} conflicts"
        )
        for agent in site.get("agents", []):
            tasks = ", ".join(agent.get("topTasks", [])[:3])
            out.print(f"  {agent['agent']}: {counted(agent.get('episodes', 0), 'episode')}, top tasks: {tasks}")
    approvals = shown.get("approvals") or {}
    out.print(f"approvals: {approvals.get('pending', 0)} pending, {approvals.get('expired', 0)} expired")
    dreamt = shown.get("dream")
    if isinstance(dreamt, dict):  # digests built before the dream cycle have none
        out.print(
            f"dream: folded {counted(dreamt.get('folded', 0), 'memory', 'memories')} into {dreamt.get('folds', 0)}, "
            f"superseded {dreamt.get('superseded', 0)}"
        )
    return 0
