"""Is a site healthy? Pure: facts in, a level and the reasons out. ``status`` exits with the level.

- ok (0): the daemon runs, both ends are reachable, nothing is quarantined, lag is under the limit.
- degraded (1): still syncing, but someone should look (quarantined rows, lag, retries, no daemon,
  the AgentDB file's time ahead of this machine's clock, or its folder missing).
- down (2): nothing can be synced until someone acts (backbone or AgentDB file unreachable, another
  source feeds the site, or no daemon while episodes wait longer than the lag limit).
Conflicts (reused ids) are shown but do not degrade health: both episodes were kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from daemon.counts import counted


class Level(IntEnum):
    OK = 0
    DEGRADED = 1
    DOWN = 2

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True, slots=True)
class Facts:
    daemon_running: bool
    backbone_error: str | None
    source_error: str | None
    last_error: str | None
    backlog: int | None
    lag_seconds: float | None
    lag_warning: float
    quarantined: int
    conflicts: int
    warm_problem: str | None = None  # the search index is paused, waits for a reindex, or fails
    path_problem: str | None = None  # a file or folder memsync needs cannot be used
    source_refused: str | None = None  # another source feeds the site: this one is refused (exit 78)
    clock_ahead: str | None = None  # the AgentDB file's time is ahead of this machine's clock
    agentdb_folder: str | None = None  # the AgentDB file and its folder are missing (a typo in agentdb.path?)


def assess(f: Facts) -> tuple[Level, list[str]]:
    down = [
        reason
        for problem, reason in (
            (f.backbone_error, f"backbone unreachable: {f.backbone_error}"),
            (f.source_error, f"AgentDB unreadable: {f.source_error}"),
            (f.path_problem, str(f.path_problem)),
            (f.source_refused, f"refused: {f.source_refused}"),
        )
        if problem
    ]
    degraded: list[str] = []
    lagging = f.lag_seconds is not None and f.lag_seconds > f.lag_warning
    if not f.daemon_running:
        if f.backlog and lagging:
            down.append(f"no daemon running and {counted(f.backlog, 'episode')} waiting for {f.lag_seconds:.0f}s")
        else:
            degraded.append("no daemon running for this site")
    elif lagging:
        degraded.append(f"lag {f.lag_seconds:.0f}s is over the {f.lag_warning:.0f}s limit ({f.backlog} waiting)")
    if f.quarantined:
        degraded.append(f"{counted(f.quarantined, 'episode')} quarantined (see `memsync quarantine list`)")
    if f.warm_problem:
        degraded.append(f"search index: {f.warm_problem}")
    if f.clock_ahead:
        degraded.append(f.clock_ahead)
    if f.agentdb_folder:
        degraded.append(f.agentdb_folder)
    if f.last_error and not down:
        degraded.append(f"last error: {f.last_error}")
    if down:
        return Level.DOWN, down + degraded
    if degraded:
        return Level.DEGRADED, degraded
    return Level.OK, []


def lag_seconds(
    now: float, backlog: int | None, caught_up_at: float | None, oldest_pending: float | None
) -> float | None:
    """How long the oldest waiting episode has waited: not before it was written, and not before
    the last moment the site had nothing waiting."""
    if backlog is None:
        return None
    if backlog == 0:
        return 0.0
    since = max(v for v in (caught_up_at, oldest_pending, 0.0) if v is not None)
    return max(0.0, now - since) if since > 0 else None
