"""The periodic jobs' bodies. Each takes what it needs (the backbone's sweeps, the warm layer,
the settings, the time) and returns a one-line summary for the job's run record; each is idempotent,
so a slot run twice (a holder killed mid-run and taken over) does no harm.

The global jobs' sweeps run here only on the embedded hub; on Convex the deployment's crons run the
same logic server-side (``cloud_functions/crons.ts``) and daemons never run them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from daemon.config import Settings
from sync.backbone.base import Sweeps

ARCHIVE_BATCH = 1000


@dataclass(frozen=True, slots=True)
class JobContext:
    settings: Settings
    sweeps: Sweeps | None  # the hub's global sweeps; None on Convex (its crons run them)
    slot_start: datetime
    now_ms: int
    index_catch_up: Callable[[], str] | None  # the warm layer's catch-up, through its worker
    stopping: Callable[[], bool] = lambda: False  # the daemon is stopping: a long body stops between batches


Body = Callable[[JobContext], str]


def _sweeps(ctx: JobContext) -> Sweeps:
    if ctx.sweeps is None:
        raise RuntimeError("a global job ran on a backbone whose own crons run it")  # plan.runs_here prevents it
    return ctx.sweeps


def mark_stale_agents(ctx: JobContext) -> str:
    gone = _sweeps(ctx).mark_stale(ctx.now_ms, int(ctx.settings.jobs.stale_after * 1000))
    return f"{gone} agents or sites went offline" if gone else "every agent with a recent heartbeat is online"


def expire_pending_approvals(ctx: JobContext) -> str:
    jobs = ctx.settings.jobs
    timeouts: Mapping[str, int] = {k: int(v * 60_000) for k, v in jobs.approval_timeouts.items()}
    expired = _sweeps(ctx).expire_approvals(ctx.now_ms, timeouts, int(jobs.default_approval_timeout * 60_000))
    return f"{expired} pending approvals expired"


def sync_health(ctx: JobContext) -> str:
    changed = _sweeps(ctx).sync_health(ctx.now_ms, int(ctx.settings.jobs.silent_after * 1000))
    if not changed:
        return "no site changed state"
    return "; ".join(f"{t.site} {t.state}" for t in changed)


def qdrant_episode_sync(ctx: JobContext) -> str:
    if ctx.index_catch_up is None:
        return "the search index is off"
    return ctx.index_catch_up()


def daily_digest(ctx: JobContext) -> str:
    day = ctx.slot_start.astimezone(UTC)
    # The 06:00 digest covers the day that ended: yesterday, midnight to midnight UTC.
    covered = datetime.fromtimestamp(day.timestamp() - 86400, UTC).strftime("%Y-%m-%d")
    digest = _sweeps(ctx).build_digest(covered, ctx.now_ms)
    sites = digest.get("sites") or []
    episodes = sum(int(s.get("episodes", 0)) for s in sites if isinstance(s, dict))
    return f"digest for {covered}: {episodes} episodes from {len(sites)} sites"


def cleanup_old_episodes(ctx: JobContext) -> str:
    cutoff = ctx.now_ms - int(ctx.settings.jobs.archive_after_days * 86400 * 1000)
    total = 0
    while True:  # in batches, so that one run never holds the hub's write lock for long
        done = _sweeps(ctx).archive_older_than(cutoff, ARCHIVE_BATCH)
        total += done
        if done < ARCHIVE_BATCH or ctx.stopping():
            break
    return f"{total} episodes older than {ctx.settings.jobs.archive_after_days:g} days archived"


BODIES: Mapping[str, Body] = {
    "mark-stale-agents": mark_stale_agents,
    "expire-pending-approvals": expire_pending_approvals,
    "sync-health": sync_health,
    "qdrant-episode-sync": qdrant_episode_sync,
    "daily-digest": daily_digest,
    "cleanup-old-episodes": cleanup_old_episodes,
}
