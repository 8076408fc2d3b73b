"""The hub's daily digest: per site and per agent, the episodes created in one UTC day, their success
rate, mean reward, top tasks and tags; per site its sync health, last sync, quarantined rows and
conflicts (from its last heartbeat) and its approvals. Built by the daily-digest sweep, stored one
per day (building again replaces it) and read back with ``digest(day)``.

``cloud_functions/digest.ts`` computes the same figures from the same episodes, field for field:
the sums run in one order (created_at, then source id) so that even a mean of floats is the same
number on both.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sync.backbone.hub.connection import HubConnection
from sync.errors import BackboneRejected

DAY_MS = 86_400_000
TOP = 5
UNKNOWN_AGENT = "unknown"  # episodes that name no agent


def day_bounds(day: str) -> tuple[int, int]:
    """[since, until) in ms of the UTC day "YYYY-MM-DD"."""
    try:
        start = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise BackboneRejected(f"a digest's day is YYYY-MM-DD, not {day!r}") from None
    since = int(start.timestamp()) * 1000
    return since, since + DAY_MS


@dataclass(frozen=True, slots=True)
class DayEpisode:
    site: str
    source_id: str
    created_at: int
    agent: str
    task: str
    tags: tuple[str, ...]
    success: bool
    reward: float | None


@dataclass(slots=True)
class _Tally:
    episodes: int = 0
    successes: int = 0
    reward_sum: float = 0.0
    rewarded: int = 0
    tasks: Counter[str] = field(default_factory=Counter)
    tags: Counter[str] = field(default_factory=Counter)

    def add(self, episode: DayEpisode) -> None:
        self.episodes += 1
        self.successes += episode.success
        if episode.reward is not None:
            self.reward_sum += episode.reward
            self.rewarded += 1
        self.tasks[episode.task] += 1
        self.tags.update(set(episode.tags))  # an episode counts once for each of its tags

    def figures(self) -> dict[str, Any]:
        return {
            "episodes": self.episodes,
            "successRate": None if self.episodes == 0 else self.successes / self.episodes,
            "meanReward": None if self.rewarded == 0 else self.reward_sum / self.rewarded,
            "topTasks": _top(self.tasks),
            "topTags": _top(self.tags),
        }


def _top(counts: Counter[str]) -> list[str]:
    """The most frequent first; ties by name, so both backbones list the same five."""
    return [name for name, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]]


@dataclass(frozen=True, slots=True)
class SiteFacts:
    """What the digest reports of a site besides its episodes."""

    health: str | None = None
    last_sync_at: int | None = None
    quarantined: int = 0
    conflicts: int = 0
    redacted: int = 0
    pending: int = 0
    expired: int = 0


def build(
    day: str, now_ms: int, episodes: Iterable[DayEpisode], facts: Mapping[str, SiteFacts], truncated: bool = False
) -> dict[str, Any]:
    """The digest of ``day`` from its episodes and every known site's facts. Pure."""
    since, until = day_bounds(day)
    ordered = sorted(episodes, key=lambda e: (e.created_at, e.source_id))
    sites: dict[str, _Tally] = {}
    agents: dict[str, dict[str, _Tally]] = {}
    for episode in ordered:
        sites.setdefault(episode.site, _Tally()).add(episode)
        agents.setdefault(episode.site, {}).setdefault(episode.agent, _Tally()).add(episode)
    entries = []
    for site in sorted(set(sites) | set(facts)):
        fact = facts.get(site, SiteFacts())
        entries.append(
            {
                "site": site,
                **sites.get(site, _Tally()).figures(),
                "agents": [{"agent": name, **tally.figures()} for name, tally in sorted(agents.get(site, {}).items())],
                "health": fact.health,
                "lastSyncAt": fact.last_sync_at,
                "quarantined": fact.quarantined,
                "conflicts": fact.conflicts,
                "redacted": fact.redacted,
                "approvals": {"pending": fact.pending, "expired": fact.expired},
            }
        )
    return {
        "day": day,
        "since": since,
        "until": until,
        "builtAt": now_ms,
        "episodes": sum(tally.episodes for tally in sites.values()),
        "sites": entries,
        "approvals": {
            "pending": sum(e["approvals"]["pending"] for e in entries),
            "expired": sum(e["approvals"]["expired"] for e in entries),
        },
        "truncated": truncated,
    }


def _episode(site: str, source_id: str, created_at: int, body: str) -> DayEpisode:
    fields = json.loads(body)
    tags = fields.get("tags")
    reward = fields.get("reward")
    return DayEpisode(
        site,
        source_id,
        created_at,
        fields.get("agentName") or UNKNOWN_AGENT,
        str(fields.get("task") or ""),
        tuple(t for t in tags if isinstance(t, str)) if isinstance(tags, list) else (),
        bool(fields.get("success")),
        None if reward is None else float(reward),
    )


def dream_of_day(steps: list[tuple[str, str]]) -> dict[str, int]:
    """What the day's dream steps that still stand did: memories folded, into how many, and how
    many facts were superseded (cloud_functions/digest.ts counts the same). Pure."""
    folds = [json.loads(members) for kind, members in steps if kind == "consolidates"]
    return {
        "folds": len(folds),
        "folded": sum(len(m) for m in folds),
        "superseded": sum(1 for kind, _ in steps if kind == "supersedes"),
    }


def store_digest(conn: sqlite3.Connection, day: str, now_ms: int) -> dict[str, Any]:
    """Build the digest of ``day`` from the hub's rows and store it (replacing one built before)."""
    since, until = day_bounds(day)
    episodes = [
        _episode(*row)
        for row in conn.execute(
            "SELECT source_site, source_id, created_at, body FROM episodes WHERE created_at >= ? AND created_at < ?",
            (since, until),
        )
    ]
    digest = build(day, now_ms, episodes, _facts(conn, since, until))
    digest["dream"] = dream_of_day(
        conn.execute(
            "SELECT kind, members FROM dream_steps WHERE at >= ? AND at < ? AND undone_at IS NULL", (since, until)
        ).fetchall()
    )
    conn.execute(
        "INSERT OR REPLACE INTO digests (day, built_at, body) VALUES (?, ?, ?)", (day, now_ms, json.dumps(digest))
    )
    return digest


def rebuild_stored_digest(conn: sqlite3.Connection, created_at: int | None, now_ms: int) -> None:
    """A forget took away an episode created at ``created_at``: the stored digest of its day, if
    any, is built again without it (in the forget's transaction), so that its task is in no
    top-tasks list."""
    if created_at is None:
        return
    day = datetime.fromtimestamp(created_at / 1000, UTC).strftime("%Y-%m-%d")
    if conn.execute("SELECT 1 FROM digests WHERE day = ?", (day,)).fetchone():
        store_digest(conn, day, now_ms)


def _facts(conn: sqlite3.Connection, since: int, until: int) -> dict[str, SiteFacts]:
    """Every site the hub knows (heartbeats, cursors, approvals of the day) and what it reports."""
    rows = conn.execute(
        """SELECT names.site, h.state, c.last_synced_at, s.quarantined, s.conflicts, s.redacted,
                  (SELECT count(*) FROM approvals a WHERE a.site = names.site AND a.status = 'pending'
                     AND a.created_at < ?),
                  (SELECT count(*) FROM approvals a WHERE a.site = names.site AND a.status = 'expired'
                     AND a.resolved_at >= ? AND a.resolved_at < ?)
           FROM (SELECT site FROM site_states UNION SELECT site FROM sync_cursors
                 UNION SELECT site FROM approvals WHERE status = 'pending' AND created_at < ?
                 UNION SELECT site FROM approvals WHERE status = 'expired'
                   AND resolved_at >= ? AND resolved_at < ?) AS names
           LEFT JOIN health_states AS h ON h.site = names.site
           LEFT JOIN sync_cursors AS c ON c.site = names.site
           LEFT JOIN site_states AS s ON s.site = names.site""",
        (until, since, until, until, since, until),
    ).fetchall()
    return {
        site: SiteFacts(health, last_sync, quarantined or 0, conflicts or 0, redacted or 0, pending, expired)
        for site, health, last_sync, quarantined, conflicts, redacted, pending, expired in rows
    }


class HubDigest(HubConnection):
    def build_digest(self, day: str, now_ms: int) -> dict[str, Any]:
        day_bounds(day)
        return self._run(lambda conn: store_digest(conn, day, now_ms))

    def build_today_digest(self, day: str) -> dict[str, Any]:
        now_ms = self.clock()
        today = datetime.fromtimestamp(now_ms / 1000, UTC).strftime("%Y-%m-%d")
        day_bounds(day)
        if day != today:
            raise ValueError(f"only today's digest ({today}) is built on demand, not {day}")
        return self.build_digest(day, now_ms)

    def digest(self, day: str) -> dict[str, Any] | None:
        day_bounds(day)
        rows = self._read("SELECT body FROM digests WHERE day = ?", (day,))
        if not rows:
            return None
        found: dict[str, Any] = json.loads(rows[0][0])
        return found
