"""The registry heartbeat, every ``jobs.heartbeat_interval`` seconds: this site (version, host, pid,
lag, backlog, search index, quarantined rows and conflicts) and, in the same backbone call, the
agents that showed signs of life since the last beat: a new episode (the engine keeps the agents
its episodes name in the sidecar) or a beat their hooks left in the spool (``memsync heartbeat``).
An agent that does neither is not beaten for, and goes offline after ``jobs.stale_after``."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from daemon import version
from daemon.config import Settings
from daemon.config_paths import heartbeat_spool_for
from daemon.search_worker.files import read_status
from sync.backbone.base import Registry, SiteBeat
from sync.push.agents import agents_due
from sync.push.sidecar import Sidecar


def _float(value: str | None) -> float | None:
    return None if value is None else float(value)


def site_beat(settings: Settings, now: float) -> tuple[SiteBeat, dict[str, Any]]:
    """This site's beat and the agents its episodes named, from the sidecar and the warm status."""
    with contextlib.closing(Sidecar(settings.state_path, readonly=True)) as sidecar:
        backlog_text, caught_up = sidecar.get("backlog"), _float(sidecar.get("caught_up_at"))
        seen = json.loads(sidecar.get("agents_seen") or "{}")
        quarantined, conflicts = sidecar.quarantine_count(), sidecar.conflict_count()
        redacted = int(sidecar.get_float("redacted_episodes") or 0)
    backlog = None if backlog_text is None else int(float(backlog_text))
    lag = None if backlog is None else (0.0 if backlog == 0 else max(0.0, now - (caught_up or now)))
    index = None
    if settings.warm.enabled:
        index = str((read_status(settings) or {}).get("state") or "never run")
    beat = SiteBeat(version(), socket.gethostname(), os.getpid(), lag, backlog, index, quarantined, conflicts, redacted)
    agents = {k: v for k, v in seen.items() if isinstance(v, dict)} if isinstance(seen, dict) else {}
    return beat, _with_journals_agents(settings, agents)


def _with_journals_agents(settings: Settings, agents: dict[str, Any]) -> dict[str, Any]:
    """The agents the site's saved memories name too (the journal's own sidecar): an agent that
    only saves memories is alive all the same. Of two records of one agent, the later episode's."""
    if not settings.journal_state_path.exists():
        return agents
    try:
        with contextlib.closing(Sidecar(settings.journal_state_path, readonly=True)) as sidecar:
            saved = json.loads(sidecar.get("agents_seen") or "{}")
    except (FileNotFoundError, sqlite3.Error, ValueError):
        return agents
    merged = dict(agents)
    for name, entry in saved.items() if isinstance(saved, dict) else ():
        if not isinstance(entry, dict):
            continue
        known = merged.get(name)
        if known is None or (entry.get("lastEpisodeAt") or 0) > (known.get("lastEpisodeAt") or 0):
            merged[name] = entry
    return merged


def spooled(state: Path) -> list[dict[str, Any]]:
    """The beats hooks left, removed as they are read (a beat lost to a crash is only a beat)."""
    folder = heartbeat_spool_for(state)
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            beat = json.loads(path.read_text(encoding="utf-8"))
            path.unlink()
        except (OSError, ValueError):
            continue
        if isinstance(beat, dict) and isinstance(beat.get("agent"), str):
            found.append(beat)
    return found


class Beats:
    """The heartbeat's body. It remembers which episode of each agent the last beat forwarded, so
    that the next forwards only the agents with a newer one; a daemon's first beat forwards every
    agent of the sidecar (within the retention), in case the registry lost them."""

    def __init__(self, settings: Settings, coordination: Registry, clock: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self.coordination = coordination
        self.clock = clock
        self._forwarded: dict[str, int | None] | None = None

    def beat(self) -> None:
        now = self.clock()
        site, seen = site_beat(self.settings, now)
        jobs = self.settings.jobs
        retention_ms = int(jobs.agent_retention_days * 86_400_000)
        due = agents_due(seen, self._forwarded, spooled(self.settings.state_path), int(now * 1000), retention_ms)
        self.coordination.heartbeat_site(site, due)  # raises when it fails: the next beat sends them again
        self._forwarded = {name: agent.get("lastEpisodeAt") for name, agent in seen.items()}
