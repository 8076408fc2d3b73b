"""The agents a site's episodes name (agentName, platform, interface, the latest episode's time):
the daemon heartbeats each of them into the backbone's registry. Kept in the sidecar as JSON, so a
restarted daemon knows them before its next new episode."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any


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
