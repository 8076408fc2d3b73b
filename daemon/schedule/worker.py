"""The scheduler inside the daemon: APScheduler 3's BackgroundScheduler, in UTC, firing the jobs
``plan`` says run here, and the registry heartbeat.

Thin on purpose: when a job fires, ``run_job`` works out its slot (``plan.slot_key``), takes the
slot's lease when the job is global (``JobLeases.claim_job``: one site per slot), runs the body
and records the run (``finish_job`` / ``record_run``). APScheduler only decides *when*: coalesce (a
laptop that slept through several fires runs once), one instance of a job at a time, and a grace
per job within which a missed fire still runs. Shutdown does not wait for a job in flight: every
body is idempotent, and a slot whose holder stops half-way is taken over once its lease expires.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import structlog

from daemon.alerts.watch import Alerts
from daemon.config import Settings
from daemon.hubserver.alerts import FleetView
from daemon.hubserver.scheduled import BODIES, JobContext
from daemon.schedule.policy import job_table, plan
from sync.backbone.base import ChangeFeed, JobLeases, JobRun, Sweeps
from sync.policy.leases import Claim
from sync.resilience.problems import ProblemLog

log = structlog.get_logger("memsync.jobs")


class LeasesAndFleet(JobLeases, FleetView, Protocol):
    """What running a job takes: its lease and run record, and the fleet the alerts job reads."""


@dataclass(frozen=True, slots=True)
class Outcome:
    job: str
    slot: str
    ran: bool  # False: another site holds or finished the slot, its grace passed, or (manual) another manual run is on
    outcome: str  # "ok" | "failed" | "skipped" | "busy"
    summary: str


def run_job(
    spec: job_table.JobSpec,
    settings: Settings,
    coordination: LeasesAndFleet,
    sweeps: Sweeps | None,
    *,
    now: float,
    index_catch_up: Callable[[], str] | None = None,
    stopping: Callable[[], bool] = lambda: False,
    alerts: Alerts | None = None,
    clock: Callable[[], float] = time.time,
    dream: Callable[[int, str], str] | None = None,
) -> Outcome:
    """One fire of ``spec`` at ``now``: its slot, its lease if global, its body, its record."""
    moment = datetime.fromtimestamp(now, UTC)
    slot = plan.slot_key(spec, moment)
    backbone, store = settings.backbone.kind, settings.warm.store
    leased = job_table.needs_lease(spec, backbone=backbone, store=store)
    started = int(now * 1000)
    if not plan.late_but_in_grace(spec, moment):
        return Outcome(spec.name, slot, False, "skipped", "the slot's grace has passed; the next slot runs")
    if leased:
        claim = coordination.claim_job(spec.name, slot, int(spec.lease_s * 1000))
        if claim is Claim.SKIP:
            return Outcome(spec.name, slot, False, "skipped", "another site holds or finished this slot")
        if claim is Claim.TAKE_OVER:
            log.info("took over a slot whose holder did not finish", job=spec.name, slot=slot)
    ctx = JobContext(
        settings,
        sweeps,
        plan.slot_start(spec, moment),
        started,
        index_catch_up,
        stopping,
        coordination,
        alerts,
        dream=dream,
    )
    outcome, summary = _body(spec, ctx)
    if leased:
        coordination.finish_job(spec.name, slot, outcome, summary)
    else:
        coordination.record_run(spec.name, slot, outcome, summary, started, int(clock() * 1000))
    return Outcome(spec.name, slot, True, outcome, summary)


def _body(spec: job_table.JobSpec, ctx: JobContext) -> tuple[str, str]:
    try:
        return "ok", BODIES[spec.name](ctx)
    except Exception as exc:  # noqa: BLE001 - a failed run is recorded with its reason, and the next slot tries again
        return "failed", f"{type(exc).__name__}: {exc}"


def run_job_now(
    spec: job_table.JobSpec,
    settings: Settings,
    coordination: LeasesAndFleet,
    sweeps: Sweeps | None,
    *,
    now: float,
    index_catch_up: Callable[[], str] | None = None,
    alerts: Alerts | None = None,
    dream: Callable[[int, str], str] | None = None,
) -> Outcome:
    """``memsync jobs run NAME``: the job's body now, whatever the day, as a manual run
    (``plan.manual_slot``): recorded under a slot of its own, so that it takes no scheduled slot
    and no grace applies. Two manual runs of one job never run at once: each holds a short lease
    of its own slot and gives way to a live manual run that began first (``plan.manual_blocker``);
    the one that gives way says so (``ran`` False, outcome "busy") and does no work.

    The body works as if fired now for the schedule's current slot, but for the daily digest: it
    builds yesterday, the day ``memsync digest`` shows, at every hour (``plan.last_whole_day``),
    without queueing it for Telegram (the scheduled slot's run does, once across sites; ``memsync
    digest --send`` on demand)."""
    moment = datetime.fromtimestamp(now, UTC)
    slot, site, lease_ms = plan.manual_slot(moment), settings.site.name, int(spec.lease_s * 1000)
    started = int(now * 1000)
    earlier = plan.manual_blocker(coordination.job_runs(spec.name, 50), lease_ms, started)
    if earlier is not None:
        return _busy(spec, slot, earlier)
    if coordination.claim_job(spec.name, slot, lease_ms) is Claim.SKIP:  # the same site, the same millisecond
        return Outcome(spec.name, slot, False, "busy", f"a manual run of {spec.name} began at this instant: try again")
    earlier = plan.manual_blocker(coordination.job_runs(spec.name, 50), lease_ms, started, mine=(slot, site))
    if earlier is not None:  # another began between our look and our record: the first goes on
        coordination.finish_job(
            spec.name, slot, "failed", f"gave way to the manual run {earlier.slot} of {earlier.site}"
        )
        return _busy(spec, slot, earlier)
    ctx = JobContext(
        settings,
        sweeps,
        plan.slot_start(spec, moment),
        started,
        index_catch_up,
        coordination=coordination,
        alerts=alerts,
        manual=True,
        dream=dream,
    )
    outcome, summary = _body(spec, ctx)
    coordination.finish_job(spec.name, slot, outcome, summary)
    return Outcome(spec.name, slot, True, outcome, summary)


def _busy(spec: job_table.JobSpec, slot: str, earlier: JobRun) -> Outcome:
    began = datetime.fromtimestamp(earlier.started_at / 1000, UTC).strftime("%H:%M:%S UTC")
    return Outcome(
        spec.name,
        slot,
        False,
        "busy",
        f"another manual run of {spec.name} (site {earlier.site}, begun {began}) is still running: "
        f"wait for it to end, or {spec.lease_s:g} s after it began if its process died",
    )


def _without_missed_fires(record: logging.LogRecord) -> bool:
    """APScheduler's "Run time of job ... was missed by ...": a fire past its grace is only skipped,
    and ``run_job`` says what becomes of a late slot in memsync's own words."""
    return "was missed by" not in record.getMessage()


class Scheduler:
    """The daemon's scheduler: ``start`` adds the jobs and the heartbeat, ``stop`` ends it. It has a
    backbone client of its own (``coordination``), apart from the run loop's, so that a long job
    never holds the run loop's pushes."""

    def __init__(
        self,
        settings: Settings,
        coordination: LeasesAndFleet,
        sweeps: Sweeps | None,
        *,
        heartbeat: Callable[[], None],
        index_catch_up: Callable[[], str] | None,
        clock: Callable[[], float] = time.time,
        on_stop: Callable[[], None] = lambda: None,
        alerts: Alerts | None = None,
        dream: Callable[[int, str], str] | None = None,
    ) -> None:
        self.settings = settings
        self.coordination = coordination
        self.sweeps = sweeps
        self.heartbeat = heartbeat
        self.index_catch_up = index_catch_up
        self.clock = clock
        self.on_stop = on_stop  # closes the scheduler's own backbone client
        self.alerts = alerts
        self.dream = dream
        self.problems = ProblemLog(log)
        self.stopping = threading.Event()  # long bodies stop between batches once it is set
        self._scheduler: Any = None

    def specs(self) -> list[job_table.JobSpec]:
        kind, store = self.settings.backbone.kind, self.settings.warm.store
        return [
            s
            for s in self.settings.jobs.specs()
            if job_table.runs_here(s, backbone=kind, store=store)
            # No index: nothing to catch up, and no embedder for the dream (whose hiding only a
            # search shows); `memsync dream` still runs it by hand.
            and (s.scope not in (job_table.Scope.INDEX, job_table.Scope.FLEET) or self.settings.warm.enabled)
        ]

    def start(self) -> Scheduler:
        from apscheduler.executors.pool import ThreadPoolExecutor
        from apscheduler.schedulers.background import BackgroundScheduler
        from apscheduler.triggers.interval import IntervalTrigger

        # One worker thread: jobs take turns on this scheduler's own backbone client, and a slow one
        # (a digest, an archive) delays the next instead of piling up beside it.
        scheduler = BackgroundScheduler(
            timezone=UTC,
            executors={"default": ThreadPoolExecutor(1)},
            job_defaults={"coalesce": True, "max_instances": 1},
        )
        epoch = datetime.fromtimestamp(0, UTC)  # intervals aligned to the epoch: every site's slots agree
        started = datetime.fromtimestamp(self.clock(), UTC)  # the start fires and the first beat: now, by our clock
        for spec in self.specs():
            trigger = (
                IntervalTrigger(seconds=spec.every_s, start_date=epoch, timezone=UTC)
                if spec.every_s is not None
                else job_table.trigger(spec)
            )
            scheduler.add_job(
                self.fire, trigger, args=[spec], id=spec.name, name=spec.name, misfire_grace_time=int(spec.grace_s)
            )
            # And once at start, as a job of its own (the trigger's schedule stays aligned): a daemon
            # started after a fire it missed runs that slot now, if within the job's grace and no
            # site has run it.
            # No grace of APScheduler's own (its default is 1 s, shorter than the jobs queued before
            # it on the one worker): run_job judges the slot's grace when it runs.
            scheduler.add_job(
                self.fire,
                "date",
                args=[spec],
                id=f"{spec.name}@start",
                run_date=started,
                misfire_grace_time=None,
            )
        interval = self.settings.jobs.heartbeat_interval
        scheduler.add_job(
            self.beat,
            IntervalTrigger(seconds=interval, timezone=UTC),
            id="heartbeat",
            next_run_time=started,
            misfire_grace_time=int(interval),
        )
        logging.getLogger("apscheduler.executors.default").addFilter(_without_missed_fires)
        scheduler.start()
        self._scheduler = scheduler
        return self

    def fire(self, spec: job_table.JobSpec) -> Outcome | None:
        try:
            done = run_job(
                spec,
                self.settings,
                self.coordination,
                self.sweeps,
                now=self.clock(),
                index_catch_up=self.index_catch_up,
                stopping=self.stopping.is_set,
                alerts=self.alerts,
                clock=self.clock,
                dream=self.dream,
            )
        except Exception as exc:  # noqa: BLE001 - the backbone is unreachable: the next fire tries again
            self.problems.problem(f"job:{spec.name}", f"could not run {spec.name}: {exc}")
            return None
        self.problems.recovered(f"job:{spec.name}")
        if done.ran:
            (log.info if done.outcome == "ok" else log.warning)(
                "job ran", job=done.job, slot=done.slot, outcome=done.outcome, summary=done.summary
            )
        else:
            # Routine (every fire of a global job on every site but one), so at debug: what a person
            # asking why a job did not run here turns on, and what the tests wait on.
            log.debug("job skipped", job=done.job, slot=done.slot, reason=done.summary)
        return done

    def beat(self) -> None:
        try:
            self.heartbeat()
        except Exception as exc:  # noqa: BLE001 - logged once; the next beat tries again
            self.problems.problem("heartbeat", f"could not heartbeat the registry: {exc}")
            return
        self.problems.recovered("heartbeat")

    def next_fire(self, name: str) -> datetime | None:
        job = None if self._scheduler is None else self._scheduler.get_job(name)
        return None if job is None else job.next_run_time

    def stop(self) -> None:
        """Stop firing, and wait for a job in flight: bodies are short or stop between batches
        (``stopping``), and one still running would otherwise outlive its backbone client."""
        self.stopping.set()
        if self._scheduler is not None:
            self._scheduler.shutdown(wait=True)
            self._scheduler = None
            self.on_stop()


def runs_for(coordination: JobLeases, job: str | None = None, limit: int = 50) -> list[JobRun]:
    return coordination.job_runs(job, limit)


def index_catch_up(settings: Settings, feed: ChangeFeed) -> str:
    """The qdrant-episode-sync job's body with the warm layer on: when the index is behind the feed,
    its catch-up pass, asked of the warm worker (started for it). When it is not, nothing: starting
    the worker every five minutes to find nothing would keep the embedding stack in memory for good
    (it exits only after ``warm.unload_after`` idle seconds)."""
    from daemon.control.client import ControlClient
    from daemon.search_worker.files import Collections
    from sync.search.collection.cursor import CursorFile

    cursor = CursorFile(settings.warm_dir / "indexer.json").read(Collections(settings).active())
    end = feed.feed_end()
    if cursor >= end:
        return f"search index up to date (feed position {cursor})"
    reply = ControlClient(settings.socket_path).indexed(end, wait=300, timeout=310)
    state = "caught up" if reply.done else "still behind"
    return f"search index {state}: feed position {reply.cursor} of {reply.through}"
