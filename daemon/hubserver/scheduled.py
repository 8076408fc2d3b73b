"""The periodic jobs' bodies (``cloud_functions/scheduled.ts`` on Convex), run by the scheduler
(``daemon/schedule``). Each takes what it needs (the backbone's sweeps, the warm layer,
the settings, the time) and returns a one-line summary for the job's run record; each is idempotent,
so a slot run twice (a holder killed mid-run and taken over) does no harm.

The global jobs' sweeps run here only on the embedded hub; on Convex the deployment's crons run the
same logic server-side (``cloud_functions/crons.ts``) and daemons never run them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from daemon.alerts.outbox_keys import digest_key
from daemon.alerts.watch import Alerts, fleet_rules
from daemon.config import Settings
from daemon.hubserver.alerts import FleetView, sweep
from daemon.hubserver.run_summary import (
    ALERTS_OFF,
    alerts_summary,
    archive_summary,
    digest_summary,
    expired_summary,
    health_summary,
    stale_summary,
)
from sync.backbone.base import Sweeps

# Episodes one archiving call takes (a week at a time, each week's file written once per call): a
# week of a busy site fits, and a call never holds more than this in memory.
ARCHIVE_BATCH = 20_000


@dataclass(frozen=True, slots=True)
class JobContext:
    settings: Settings
    sweeps: Sweeps | None  # the hub's global sweeps; None on Convex (its crons run them)
    slot_start: datetime
    now_ms: int
    index_catch_up: Callable[[], str] | None  # the warm layer's catch-up, through its worker
    stopping: Callable[[], bool] = lambda: False  # the daemon is stopping: a long body stops between batches
    coordination: FleetView | None = None  # the registry and approvals, for the alerts job
    alerts: Alerts | None = None  # where alerts are said (the log) and queued (Telegram)
    manual: bool = False  # `memsync jobs run`: no slot of the schedule's
    # The dream cycle's run (daemon/usecases/memory/dream.py), given the time and the run's name: its summary.
    dream: Callable[[int, str], str] | None = None


Body = Callable[[JobContext], str]


def _sweeps(ctx: JobContext) -> Sweeps:
    if ctx.sweeps is None:
        raise RuntimeError("a global job ran on a backbone whose own crons run it")  # job_table.runs_here prevents it
    return ctx.sweeps


def mark_stale_agents(ctx: JobContext) -> str:
    jobs = ctx.settings.jobs
    gone = _sweeps(ctx).mark_stale(ctx.now_ms, int(jobs.stale_after * 1000))
    pruned = _sweeps(ctx).prune_agents(ctx.now_ms, int(jobs.agent_retention_days * 86_400_000))
    return stale_summary(gone, pruned)


def expire_pending_approvals(ctx: JobContext) -> str:
    jobs = ctx.settings.jobs
    timeouts: Mapping[str, int] = {k: int(v * 60_000) for k, v in jobs.approval_timeouts.items()}
    expired = _sweeps(ctx).expire_approvals(ctx.now_ms, timeouts, int(jobs.default_approval_timeout * 60_000))
    return expired_summary(expired)


def sync_health(ctx: JobContext) -> str:
    changed = _sweeps(ctx).sync_health(ctx.now_ms, int(ctx.settings.jobs.silent_after * 1000))
    return health_summary([(t.site, t.state) for t in changed])


def qdrant_episode_sync(ctx: JobContext) -> str:
    if ctx.index_catch_up is None:
        return "the search index is off"
    return ctx.index_catch_up()


def covered_day(slot_start: datetime) -> str:
    """The UTC day a daily-digest slot covers: the day that ended, midnight to midnight UTC."""
    return datetime.fromtimestamp(slot_start.astimezone(UTC).timestamp() - 86400, UTC).strftime("%Y-%m-%d")


def last_whole_day(now: datetime) -> str:
    """The last whole UTC day before ``now``: yesterday, at every hour. The day ``memsync digest``
    shows by default and a manual daily-digest run builds, so that the two always agree. (A
    scheduled slot covers the day before it began: the same day from its 06:00 fire on, and the
    day before that for a fire caught up before 06:00, which is still the previous slot's.)"""
    return (now.astimezone(UTC) - timedelta(days=1)).strftime("%Y-%m-%d")


def daily_digest(ctx: JobContext) -> str:
    # A manual run builds the day `memsync digest` shows (yesterday, at every hour); a slot's
    # run, the day its 06:00 fire covers.
    manual_day = last_whole_day(datetime.fromtimestamp(ctx.now_ms / 1000, UTC))
    covered = manual_day if ctx.manual else covered_day(ctx.slot_start)
    digest = _sweeps(ctx).build_digest(covered, ctx.now_ms)
    sites = digest.get("sites") or []
    episodes = sum(int(s.get("episodes", 0)) for s in sites if isinstance(s, dict))
    # Once per day across sites: the slot's lease runs it once, and the key queues it once. A day
    # before any site existed (a new hub's first run) is not worth a message.
    # A manual run only rebuilds it: each site's outbox is its own, so two sites' manual runs would
    # queue it twice (`memsync digest --send` sends it on demand).
    queued = (
        bool(sites)
        and not ctx.manual
        and ctx.alerts is not None
        and ctx.alerts.queue_digest(digest, digest_key(covered))
    )
    return digest_summary(covered, episodes, len(sites), queued)


def cleanup_old_episodes(ctx: JobContext) -> str:
    cutoff = ctx.now_ms - int(ctx.settings.jobs.archive_after_days * 86400 * 1000)
    total = 0
    while True:  # in batches, so that a stopping daemon stops between them
        done = _sweeps(ctx).archive_older_than(cutoff, ARCHIVE_BATCH)
        total += done
        if done < ARCHIVE_BATCH or ctx.stopping():
            break
    return archive_summary(total, ctx.settings.jobs.archive_after_days)


def alerts(ctx: JobContext) -> str:
    """The fleet's signals (``daemon/alerts/signals``): every site's registry row and every pending
    approval, observed now, each through its machine."""
    if ctx.alerts is None or ctx.coordination is None or not ctx.settings.alerts.enabled:
        return ALERTS_OFF
    observed, said = sweep(ctx.coordination, ctx.alerts, rules=fleet_rules(ctx.settings), now_ms=ctx.now_ms)
    return alerts_summary(observed, [(notice.kind, subject.key) for subject, notice in said])


def dream(ctx: JobContext) -> str:
    """The dream cycle: fold near-duplicates, supersede changed values, never delete; once across
    sites under the backbone's lease, on both backbones (it needs this site's embedder)."""
    if ctx.dream is None:
        return "the dream cycle is not wired on this site"
    slot = "manual" if ctx.manual else ctx.slot_start.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return ctx.dream(ctx.now_ms, f"dream@{slot} on {ctx.settings.site.name}")


BODIES: Mapping[str, Body] = {
    "mark-stale-agents": mark_stale_agents,
    "expire-pending-approvals": expire_pending_approvals,
    "sync-health": sync_health,
    "qdrant-episode-sync": qdrant_episode_sync,
    "daily-digest": daily_digest,
    "cleanup-old-episodes": cleanup_old_episodes,
    "alerts": alerts,
    "dream": dream,
}
