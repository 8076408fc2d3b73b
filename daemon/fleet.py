"""The fleet, as any site sees it in the backbone: every site and agent, online or not, and how
each is doing; judged (pure) into one exit code by the worst.

- down (2): a site whose daemon stopped heartbeating (offline) or that the sync-health job found
  silent past ``jobs.silent_after``.
- degraded (1): a site lagging past ``sync.lag_warning``, with quarantined rows, or a job whose last
  run failed.
- ok (0): otherwise. Offline agents are shown but judge nothing: agents come and go.

An agent is online while its latest sign of life (a hook's beat, a new episode) is at most
``jobs.stale_after`` old, judged here as of now (``sync.agents.liveness``); offline ones stay listed
with when they were last seen until the retention prunes them.
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from daemon.health import Level
from sync.agents import liveness
from sync.backbone.base import AgentState, JobRun, SiteState


def iso_ms(ms: int | None) -> str | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def unknown_site(name: str, sites: list[SiteState]) -> str | None:
    """Why ``--site NAME`` can match nothing (no site of that name, and the ones there are), or
    None when the backbone knows the site. Pure."""
    known = [s.site for s in sites]
    if name in known:
        return None
    return f"no site named {name!r} (sites: {', '.join(known) if known else 'none yet'})"


def judge(sites: list[SiteState], failed_runs: list[JobRun], lag_warning: float) -> tuple[Level, list[str]]:
    """The fleet's level and the reasons for it. Pure."""
    down, degraded = [], []
    for s in sites:
        if not s.online:
            down.append(f"site {s.site} is offline (no heartbeat since {iso_ms(s.last_heartbeat) or 'ever'})")
        elif s.health == "down":
            down.append(f"site {s.site} has not synced for longer than the silence limit")
        if s.lag_s is not None and s.lag_s > lag_warning:
            degraded.append(f"site {s.site} lags {s.lag_s:.0f}s")
        if s.quarantined:
            degraded.append(f"site {s.site} has {s.quarantined} quarantined episodes")
    degraded += [f"job {r.job} failed on {r.site} (slot {r.slot}): {r.summary}" for r in failed_runs]
    if down:
        return Level.DOWN, down + degraded
    if degraded:
        return Level.DEGRADED, degraded
    return Level.OK, []


def fleet_report(
    sites: list[SiteState],
    agents: list[AgentState],
    runs: list[JobRun],
    pending_approvals: int,
    lag_warning: float,
    now_ms: int,
    stale_after_ms: int,
) -> dict[str, Any]:
    latest: dict[str, JobRun] = {}
    for run in runs:  # newest first: the first of each job is its last run
        latest.setdefault(run.job, run)
    failed = [r for r in latest.values() if r.outcome == "failed"]
    level, reasons = judge(sites, failed, lag_warning)
    return {
        "health": level.label,
        "exitCode": int(level),
        "reasons": reasons,
        "sites": [
            {
                **asdict(s),
                # The sync-health job's "up" is from before the site went silent: offline is down.
                "health": s.health if s.online else "down",
                "lastHeartbeat": iso_ms(s.last_heartbeat),
                "lastSyncAt": iso_ms(s.last_sync_at),
            }
            for s in sites
        ],
        "agents": [
            {
                **asdict(a),
                "status": liveness(a.last_heartbeat, now_ms, stale_after_ms),
                "lastHeartbeat": iso_ms(a.last_heartbeat),
                "lastSeen": iso_ms(a.last_heartbeat),
            }
            for a in agents
        ],
        "pendingApprovals": pending_approvals,
        "failedJobs": [asdict(r) for r in failed],
    }
