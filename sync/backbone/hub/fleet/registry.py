"""The hub's registry: the sites' daemons and their agents, each online while it shows signs of
life, the mark-stale sweep that sets the silent ones offline and the pruning of agents silent past
the retention. Every site reads the whole fleet (``sites``, ``agents(all_sites=True)``); a site
writes only its own rows.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from sync.backbone.base import AgentBeat, AgentState, SiteBeat, SiteState
from sync.backbone.hub.connection import HubConnection

_AGENT_COLUMNS = "agent_name, platform, status, last_heartbeat, site, interface, last_episode_at"


class HubRegistry(HubConnection):
    def heartbeat(
        self, agent_name: str, platform: str, interface: str | None = None, last_episode_at: int | None = None
    ) -> None:
        # A beat without interface or last episode (an agent's hook) keeps what the episodes told.
        self._run(
            lambda conn: conn.execute(
                f"INSERT INTO agents ({_AGENT_COLUMNS}) VALUES (?, ?, 'online', ?, ?, ?, ?)"
                " ON CONFLICT (site, agent_name) DO UPDATE SET platform = excluded.platform, status = 'online',"
                " last_heartbeat = excluded.last_heartbeat, interface = coalesce(excluded.interface, interface),"
                " last_episode_at = max(coalesce(excluded.last_episode_at, last_episode_at),"
                " coalesce(last_episode_at, excluded.last_episode_at))",
                (agent_name, platform, self.clock(), self.site, interface, last_episode_at),
            )
        )

    def heartbeat_site(self, beat: SiteBeat, agents: Sequence[AgentBeat] = ()) -> None:
        now = self.clock()

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO site_states (site, status, last_heartbeat, version, host, pid, lag_s, backlog,"
                " index_state, quarantined, conflicts, redacted) VALUES (?, 'online', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.site,
                    now,
                    beat.version,
                    beat.host,
                    beat.pid,
                    beat.lag_s,
                    beat.backlog,
                    beat.index_state,
                    beat.quarantined,
                    beat.conflicts,
                    beat.redacted,
                ),
            )
            # An agent seen earlier than the stored time (an old episode arriving late) moves nothing.
            conn.executemany(
                f"INSERT INTO agents ({_AGENT_COLUMNS}) VALUES (?, ?, 'online', ?, ?, ?, ?)"
                " ON CONFLICT (site, agent_name) DO UPDATE SET platform = excluded.platform,"
                " status = CASE WHEN excluded.last_heartbeat > last_heartbeat THEN 'online' ELSE status END,"
                " last_heartbeat = max(last_heartbeat, excluded.last_heartbeat),"
                " interface = coalesce(excluded.interface, interface),"
                " last_episode_at = max(coalesce(excluded.last_episode_at, last_episode_at),"
                " coalesce(last_episode_at, excluded.last_episode_at))",
                [
                    (a.agent_name, a.platform, min(a.seen_at, now), self.site, a.interface, a.last_episode_at)
                    for a in agents
                ],
            )

        self._run(write)

    def agents(self, all_sites: bool = False) -> list[AgentState]:
        if all_sites:
            rows = self._read(f"SELECT {_AGENT_COLUMNS} FROM agents ORDER BY site, agent_name", ())
        else:
            rows = self._read(f"SELECT {_AGENT_COLUMNS} FROM agents WHERE site = ? ORDER BY agent_name", (self.site,))
        return [AgentState(*row) for row in rows]

    def sites(self) -> list[SiteState]:
        """Every site that ever heartbeated or synced: the hub has no list of sites of its own."""
        rows = self._read(
            """SELECT names.site, s.last_heartbeat, s.status, s.version, s.host, s.pid, s.lag_s, s.backlog,
                      s.index_state, c.last_synced_id, c.last_synced_at, s.quarantined, s.conflicts, h.state,
                      c.total_synced, s.redacted
               FROM (SELECT site FROM site_states UNION SELECT site FROM sync_cursors) AS names
               LEFT JOIN site_states AS s ON s.site = names.site
               LEFT JOIN sync_cursors AS c ON c.site = names.site
               LEFT JOIN health_states AS h ON h.site = names.site
               ORDER BY names.site""",
            (),
        )
        return [
            SiteState(
                site,
                last_heartbeat,
                status == "online",
                version,
                host,
                pid,
                lag_s,
                backlog,
                index_state,
                cursor,
                last_sync_at,
                quarantined or 0,
                conflicts or 0,
                health,
                total_synced,
                redacted or 0,
            )
            for (
                site,
                last_heartbeat,
                status,
                version,
                host,
                pid,
                lag_s,
                backlog,
                index_state,
                cursor,
                last_sync_at,
                quarantined,
                conflicts,
                health,
                total_synced,
                redacted,
            ) in rows
        ]

    def mark_stale(self, now_ms: int, stale_after_ms: int) -> int:
        """Online agents and sites of every site silent for ``stale_after_ms`` go offline (Convex's
        mark-stale-agents cron)."""
        cutoff = now_ms - stale_after_ms

        def sweep(conn: sqlite3.Connection) -> int:
            gone = 0
            for table in ("agents", "site_states"):
                gone += conn.execute(
                    f"UPDATE {table} SET status = 'offline' WHERE status = 'online' AND last_heartbeat < ?", (cutoff,)
                ).rowcount
            return gone

        return self._run(sweep)

    def prune_agents(self, now_ms: int, retention_ms: int) -> int:
        return self._run(
            lambda conn: conn.execute("DELETE FROM agents WHERE last_heartbeat < ?", (now_ms - retention_ms,)).rowcount
        )
