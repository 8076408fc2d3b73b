"""``memsync jobs [run NAME]`` and ``memsync digest``: the periodic jobs, where they run, their
last and next runs; running one now; the stored daily digest."""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, console, fail, handled, load, say
from daemon.counts import counted
from daemon.fleet import iso_ms
from sync.errors import EX_CONFIG, BackboneRejected

if TYPE_CHECKING:
    from daemon.duties import ServerDuties
    from sync.backbone.base import Reports


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


def jobs_report(settings: Any, backbone: Any, now: float) -> list[dict[str, Any]]:
    from daemon.job_table import where
    from daemon.schedule import plan

    moment = datetime.fromtimestamp(now, UTC)
    kind, store = settings.backbone.kind, settings.warm.store
    rows = []
    for spec in settings.jobs.specs():
        runs = backbone.job_runs(spec.name, 1)
        last = runs[0] if runs else None
        rows.append(
            {
                "job": spec.name,
                "schedule": f"every {spec.every_s:g}s" if spec.every_s is not None else f"cron {spec.cron} UTC",
                "where": str(where(spec, backbone=kind, store=store)),
                "enabled": spec.enabled,
                "next": plan.next_fire(spec, moment).strftime("%Y-%m-%dT%H:%M:%SZ") if spec.enabled else None,
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
        )
    return rows


def list_main(args: argparse.Namespace) -> int:
    from daemon.site import opened_backbone

    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            rows = jobs_report(settings, backbone, time.time())
    if args.as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return 0
    from rich.table import Table

    table = Table("job", "schedule", "runs on", "last run", "next (UTC)")
    for row in rows:
        last = row["last"]
        shown = (
            "never"
            if last is None
            else f"{last['outcome']} by {last['site']} at {last['startedAt']}: {last['summary']}"
        )
        table.add_row(row["job"], row["schedule"], row["where"], shown, row["next"] or "disabled")
    console().print(table)
    failed = [r for r in rows if r["last"] is not None and r["last"]["outcome"] == "failed"]
    return 1 if failed else 0


def run_main(args: argparse.Namespace) -> int:
    from daemon.job_table import JOB_NAMES, Where, where
    from daemon.schedule.worker import index_catch_up, run_job_now
    from daemon.site import duties_of, opened_backbone

    with handled():
        settings = load(args)
        spec = next((s for s in settings.jobs.specs() if s.name == args.name), None)
        if spec is None:
            fail(f"no job named {args.name!r} (jobs: {', '.join(JOB_NAMES)})", EX_USAGE)
        kind, store = settings.backbone.kind, settings.warm.store
        if where(spec, backbone=kind, store=store) is Where.CONVEX:
            fail(f"{spec.name} runs in Convex's crons, not on a site: see its runs in `memsync jobs`", 1)
        from daemon.alerts.store import AlertStore
        from daemon.alerts.watch import Alerts

        with opened_backbone(settings) as backbone:
            outbox = AlertStore(settings.alerts_path) if settings.alerts.enabled or settings.telegram.enabled else None
            try:
                # With the alerts' store, as the daemon runs it: the digest and the alerts job queue
                # their messages, which the daemons' alert threads send.
                done = run_job_now(
                    spec,
                    settings,
                    backbone,
                    duties_of(settings, backbone).sweeps,
                    now=time.time(),
                    # Through the daemon's warm worker, as the scheduler does it (without the index on,
                    # the job says so).
                    index_catch_up=(lambda: index_catch_up(settings, backbone)) if settings.warm.enabled else None,
                    alerts=None if outbox is None else Alerts(settings, outbox),
                )
            finally:
                if outbox is not None:
                    outbox.close()
        if not done.ran:  # nothing was done: never a success
            say(f"{spec.name}: {done.summary}")
            return 1
        say(f"{spec.name}, slot {done.slot}: {done.outcome}: {done.summary}")
        return 0 if done.outcome == "ok" else 1


def _latest(backbone: Reports, newest: datetime, days: int = 7) -> tuple[str, dict[str, Any] | None]:
    """The newest stored digest of the ``days`` days up to ``newest``."""
    for back in range(days):
        day = (newest - timedelta(days=back)).strftime("%Y-%m-%d")
        found = backbone.digest(day)
        if found is not None:
            return day, found
    return newest.strftime("%Y-%m-%d"), None


def _stored_or_built(backbone: Reports, day: str, today: str) -> dict[str, Any] | None:
    """The stored digest of ``day``; for today, built now ("today so far": the episodes created
    since 00:00 UTC, and every site's figures as they are now; stored under today's date until
    the next 06:00 run builds the whole day in its place)."""
    if day != today:
        return backbone.digest(day)
    try:
        return backbone.build_today_digest(day)
    except ValueError as exc:  # midnight passed between our clock and the backbone's
        raise BackboneRejected(str(exc)) from exc


def digest_main(args: argparse.Namespace) -> int:
    from daemon.site import duties_of, opened_backbone

    with handled():
        settings = load(args, log_level="error")
        now = time.time()
        today = datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")
        day = args.date or (datetime.fromtimestamp(now, UTC) - timedelta(days=1)).strftime("%Y-%m-%d")
        try:
            datetime.strptime(day, "%Y-%m-%d")
        except ValueError:
            fail(f"--date {day!r}: use YYYY-MM-DD", EX_USAGE)
        if args.send and not settings.telegram.enabled:
            fail(
                "--send needs Telegram: set MEMSYNC_TELEGRAM__BOT_TOKEN (environment or .env) and telegram.chat_id",
                EX_CONFIG,
            )
        with opened_backbone(settings, create=False) as backbone:
            duties = duties_of(settings, backbone)
            if args.send and args.date is None:
                # The latest whole day: a "today so far" built on demand is sent only when asked by date.
                day, digest = _latest(backbone, datetime.fromtimestamp(now, UTC) - timedelta(days=1))
            else:
                digest = _stored_or_built(backbone, day, today)
            if args.send and digest is not None:
                say(duties.send_digest(day, digest))
                return 0
        if digest is None:
            fail(_no_digest(duties, day, today), 1)
    if args.as_json:
        sys.stdout.write(json.dumps(digest, indent=2) + "\n")
        return 0
    out = console()
    out.print(f"[bold]digest for {day}[/]")
    for site in digest.get("sites", []):
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
    approvals = digest.get("approvals") or {}
    out.print(f"approvals: {approvals.get('pending', 0)} pending, {approvals.get('expired', 0)} expired")
    return 0


def _no_digest(duties: ServerDuties, day: str, today: str) -> str:
    if day > today:
        return f"no digest for {day}: that UTC day has not begun (today is {today})"
    return f"no digest for {day}: {duties.digest_builder()}"
