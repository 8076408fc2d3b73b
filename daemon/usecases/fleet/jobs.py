"""The periodic jobs as they stand (schedule, where each runs, its last and next run), running one
now as a manual run, and the daily digest the daily-digest job stores."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from sync.errors import BackboneRejected, MemsyncError

if TYPE_CHECKING:
    from daemon.config import Settings
    from daemon.duties import ServerDuties
    from daemon.schedule.policy.job_table import JobSpec
    from daemon.schedule.worker import Outcome
    from sync.backbone.base import JobLeases, JobRun, Reports


class NotOnSite(MemsyncError):
    """The job runs in Convex's crons, not on a site: there is nothing to run here."""


@dataclass(frozen=True, slots=True)
class JobView:
    job: str
    schedule: str  # "every 60s" or "cron 0 6 * * * UTC"
    where: str  # where it runs (``daemon.schedule.policy.job_table.Where``)
    enabled: bool
    next: str | None  # the next fire, ISO UTC; None when disabled
    last: JobRun | None  # its latest run, by any site


@dataclass(frozen=True, slots=True)
class Digest:
    """The digest of ``day`` (a UTC day), or why there is none."""

    day: str
    found: dict[str, Any] | None
    missing: str | None = None  # a sentence: why there is none, and how to get one


def jobs(settings: Settings, backbone: JobLeases, now: float) -> list[JobView]:
    """Every configured job, with its latest run and next fire as of ``now``."""
    from daemon.schedule.policy import plan
    from daemon.schedule.policy.job_table import where

    moment = datetime.fromtimestamp(now, UTC)
    kind, store = settings.backbone.kind, settings.warm.store
    views = []
    for spec in settings.jobs.specs():
        runs = backbone.job_runs(spec.name, 1)
        views.append(
            JobView(
                job=spec.name,
                schedule=f"every {spec.every_s:g}s" if spec.every_s is not None else f"cron {spec.cron} UTC",
                where=str(where(spec, backbone=kind, store=store)),
                enabled=spec.enabled,
                next=plan.next_fire(spec, moment).strftime("%Y-%m-%dT%H:%M:%SZ") if spec.enabled else None,
                last=runs[0] if runs else None,
            )
        )
    return views


def job_named(settings: Settings, name: str) -> JobSpec:
    """The configured job of that name; LookupError names the jobs there are."""
    from daemon.schedule.policy.job_table import JOB_NAMES

    spec = next((s for s in settings.jobs.specs() if s.name == name), None)
    if spec is None:
        raise LookupError(f"no job named {name!r} (jobs: {', '.join(JOB_NAMES)})")
    return spec


def run_job(settings: Settings, spec: JobSpec, *, now: float) -> Outcome:
    """The job's body now, as a manual run (``daemon.schedule.worker.run_job_now``), with the
    alerts' store and the index's catch-up as the daemon runs it. Raises ``NotOnSite`` for a job
    that Convex's crons run."""
    from daemon.alerts.store import AlertStore
    from daemon.alerts.watch import Alerts
    from daemon.schedule.policy.job_table import Where, where
    from daemon.schedule.worker import index_catch_up, run_job_now
    from daemon.site import duties_of, opened_backbone
    from daemon.usecases.memory.dream import dream_job

    if where(spec, backbone=settings.backbone.kind, store=settings.warm.store) is Where.CONVEX:
        raise NotOnSite(f"{spec.name} runs in Convex's crons, not on a site: see its runs in `memsync jobs`")
    with opened_backbone(settings) as backbone:
        outbox = AlertStore(settings.alerts_path) if settings.alerts.enabled or settings.telegram.enabled else None
        try:
            # With the alerts' store, as the daemon runs it: the digest and the alerts job queue
            # their messages, which the daemons' alert threads send.
            return run_job_now(
                spec,
                settings,
                backbone,
                duties_of(settings, backbone).sweeps,
                now=now,
                # Through the daemon's warm worker, as the scheduler does it (without the index on,
                # the job says so).
                index_catch_up=(lambda: index_catch_up(settings, backbone)) if settings.warm.enabled else None,
                alerts=None if outbox is None else Alerts(settings, outbox),
                dream=lambda now_ms, run: dream_job(settings, backbone, now_ms, run).summary,
            )
        finally:
            if outbox is not None:
                outbox.close()


def digest(backbone: Reports, duties: ServerDuties, *, day: str | None, latest: bool = False, now: float) -> Digest:
    """The digest of ``day`` (a UTC day, YYYY-MM-DD; None: yesterday, the day a manual run of the
    daily-digest job builds, at every hour) as stored; today's is built now ("today so far": the
    episodes created since 00:00 UTC, and every site's figures as they are now). ``latest``: the
    newest stored of the week up to yesterday instead (what is sent when no day is named: a "today
    so far" is sent only when asked by date)."""
    from daemon.hubserver.scheduled import last_whole_day

    moment = datetime.fromtimestamp(now, UTC)
    today = moment.strftime("%Y-%m-%d")
    if latest:
        day, found = _latest(backbone, moment - timedelta(days=1))
    else:
        day = day or last_whole_day(moment)
        found = _stored_or_built(backbone, day, today)
    if found is not None:
        return Digest(day, found)
    if day > today:
        return Digest(day, None, f"no digest for {day}: that UTC day has not begun (today is {today})")
    return Digest(day, None, f"no digest for {day}: {duties.digest_builder()}")


def _latest(backbone: Reports, newest: datetime, days: int = 7) -> tuple[str, dict[str, Any] | None]:
    """The newest stored digest of the ``days`` days up to ``newest``."""
    for back in range(days):
        day = (newest - timedelta(days=back)).strftime("%Y-%m-%d")
        found = backbone.digest(day)
        if found is not None:
            return day, found
    return newest.strftime("%Y-%m-%d"), None


def _stored_or_built(backbone: Reports, day: str, today: str) -> dict[str, Any] | None:
    """The stored digest of ``day``; for today, built now (stored under today's date until the
    next 06:00 run builds the whole day in its place)."""
    if day != today:
        return backbone.digest(day)
    try:
        return backbone.build_today_digest(day)
    except ValueError as exc:  # midnight passed between our clock and the backbone's
        raise BackboneRejected(str(exc)) from exc
