"""The agents a site's episodes name (agentName, platform, interface, the latest episode's time),
kept in the sidecar as JSON so that a restarted daemon knows them before its next new episode; and
the registry's rules on them, pure: which agents a beat forwards (``agents_due``: only those that
showed signs of life since the last beat) and whether an agent is online (``liveness``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from sync.backbone.base import AgentBeat

ONLINE, OFFLINE = "online", "offline"


def liveness(last_seen_ms: int | None, now_ms: int, stale_after_ms: int) -> str:
    """Online while the latest sign of life is at most ``stale_after_ms`` old (the mark-stale sweeps'
    rule; ``liveness`` in cloud_functions/agents.ts is the same)."""
    return ONLINE if last_seen_ms is not None and now_ms - last_seen_ms <= stale_after_ms else OFFLINE


def agents_due(
    seen: Mapping[str, Mapping[str, Any]],
    forwarded: Mapping[str, int | None] | None,
    spooled: Sequence[Mapping[str, Any]],
    now_ms: int,
    retention_ms: int,
) -> list[AgentBeat]:
    """The agents a beat forwards, by name: those whose latest episode is newer than the one the
    last beat forwarded (``forwarded``: name to lastEpisodeAt; None on a daemon's first beat, which
    forwards them all) and those whose hooks left a beat in the spool. An agent is seen when its
    episode was written or its hook ran, never later than now; one silent past the retention is
    left out (the registry would only prune it)."""
    due: dict[str, AgentBeat] = {}
    for name, agent in seen.items():
        last = agent.get("lastEpisodeAt")
        last = last if isinstance(last, int) else None
        if forwarded is not None and (last is None or forwarded.get(name, None) == last):
            continue
        if forwarded is None and last is None:
            continue  # an agent whose episodes carry no time: its hook's beats say when it is alive
        at = min(last, now_ms) if last is not None else now_ms
        due[name] = AgentBeat(name, str(agent.get("platform") or "unknown"), at, agent.get("interface"), last)
    for beat in spooled:
        name = str(beat["agent"])
        stamp = beat.get("at")
        at = min(int(stamp * 1000), now_ms) if isinstance(stamp, int | float) else now_ms
        known = due.get(name)
        platform = str(beat.get("platform") or "unknown")
        if known is None:
            episodes = seen.get(name, {})
            platform = platform if platform != "unknown" else str(episodes.get("platform") or "unknown")
            due[name] = AgentBeat(name, platform, at, beat.get("interface") or episodes.get("interface"), None)
        else:
            due[name] = AgentBeat(
                name,
                platform if platform != "unknown" else known.platform,
                max(at, known.seen_at),
                beat.get("interface") or known.interface,
                known.last_episode_at,
            )
    return [b for _, b in sorted(due.items()) if now_ms - b.seen_at <= retention_ms]


class AgentsSeen:
    def __init__(self, agents: dict[str, dict[str, Any]] | None = None) -> None:
        self._agents = agents or {}
        self._changed = False

    @classmethod
    def load(cls, text: str | None) -> AgentsSeen:
        try:
            found = json.loads(text) if text else {}
        except ValueError:
            found = {}  # a damaged record only forgets agents until their next episode
        return cls({k: v for k, v in found.items() if isinstance(v, dict)} if isinstance(found, dict) else {})

    def saw(self, fields: Mapping[str, Any]) -> None:
        """An episode was delivered: note its agent (episodes without one name none)."""
        name = fields.get("agentName")
        if not isinstance(name, str) or not name:
            return
        ts = fields.get("ts") if isinstance(fields.get("ts"), int) else None
        known = self._agents.get(name, {})
        times = [v for v in (ts, known.get("lastEpisodeAt")) if isinstance(v, int)]
        latest = max(times) if times else None
        entry = {
            "platform": fields.get("agentPlatform") or known.get("platform"),
            "interface": fields.get("agentInterface") or known.get("interface"),
            "lastEpisodeAt": latest,
        }
        if entry != known:
            self._agents[name] = entry
            self._changed = True

    def take_changed(self) -> bool:
        """Whether anything changed since the last call (the engine then writes ``dump()``)."""
        changed, self._changed = self._changed, False
        return changed

    def dump(self) -> str:
        return json.dumps(self._agents, sort_keys=True)

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {k: dict(v) for k, v in self._agents.items()}
