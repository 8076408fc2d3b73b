"""Convex's sync health (``health.ts``): the transitions its sync-health cron recorded."""

from __future__ import annotations

from sync.backbone.base import HealthTransition
from sync.backbone.convex.connection import ConvexConnection


class ConvexHealth(ConvexConnection):
    def health_transitions(self, since_ms: int) -> list[HealthTransition]:
        return [
            HealthTransition(r["site"], r["state"], int(r["at"]), float(r["silentForS"]))
            for r in self.call("query", "health:transitions", {"sinceMs": since_ms})
        ]
