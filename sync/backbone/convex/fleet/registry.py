"""Convex's registry (``agents.ts``): this site's daemon and agents heartbeat; every site reads the
whole fleet."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sync.backbone.base import AgentBeat, AgentState, SiteBeat, SiteState
from sync.backbone.convex.connection import ConvexConnection
from sync.backbone.convex.wire import float_or_none, int_or_none

# agents:heartbeatSite's MAX_AGENT_BEATS: the agents one beat call carries.
MAX_AGENT_BEATS = 200


class ConvexRegistry(ConvexConnection):
    def heartbeat(
        self, agent_name: str, platform: str, interface: str | None = None, last_episode_at: int | None = None
    ) -> None:
        args: dict[str, Any] = {"agentName": agent_name, "platform": platform}
        if interface is not None:
            args["interface"] = interface
        if last_episode_at is not None:
            args["lastEpisodeAt"] = last_episode_at
        self.call("mutation", "agents:heartbeat", args)

    def heartbeat_site(self, beat: SiteBeat, agents: Sequence[AgentBeat] = ()) -> None:
        """One call a beat; only a beat with more agents than a call carries (a daemon's first beat
        after a start, say) takes more, each repeating the site's figures."""
        site = {
            "version": beat.version,
            "host": beat.host,
            "pid": beat.pid,
            "lagS": beat.lag_s,
            "backlog": beat.backlog,
            "indexState": beat.index_state,
            "quarantined": beat.quarantined,
            "conflicts": beat.conflicts,
            "redacted": beat.redacted,
        }
        start = 0
        while True:
            chunk = [_wire_agent(a) for a in agents[start : start + MAX_AGENT_BEATS]]
            self.call("mutation", "agents:heartbeatSite", {**site, **({"agents": chunk} if chunk else {})})
            start += MAX_AGENT_BEATS
            if start >= len(agents):
                return

    def sites(self) -> list[SiteState]:
        return [
            SiteState(
                r["site"],
                int_or_none(r.get("lastHeartbeat")),
                bool(r["online"]),
                r.get("version"),
                r.get("host"),
                int_or_none(r.get("pid")),
                float_or_none(r.get("lagS")),
                int_or_none(r.get("backlog")),
                r.get("indexState"),
                int_or_none(r.get("cursor")),
                int_or_none(r.get("lastSyncAt")),
                int(r["quarantined"]),
                int(r["conflicts"]),
                r.get("health"),
                int_or_none(r.get("totalSynced")),
                int(r.get("redacted") or 0),
            )
            for r in self.call("query", "agents:sites")
        ]

    def agents(self, all_sites: bool = False) -> list[AgentState]:
        rows = self.call("query", "agents:list", {"allSites": all_sites})
        return sorted(
            (
                AgentState(
                    r["agentName"],
                    r["platform"],
                    r["status"],
                    int(r["lastHeartbeat"]),
                    r["site"],
                    r.get("interface"),
                    int_or_none(r.get("lastEpisodeAt")),
                )
                for r in rows
            ),
            key=lambda a: (a.site, a.agent_name),
        )


def _wire_agent(agent: AgentBeat) -> dict[str, Any]:
    wire: dict[str, Any] = {"agentName": agent.agent_name, "platform": agent.platform, "seenAt": agent.seen_at}
    if agent.interface is not None:
        wire["interface"] = agent.interface
    if agent.last_episode_at is not None:
        wire["lastEpisodeAt"] = agent.last_episode_at
    return wire
