"""Convex's daily digest (``digest.ts``): the stored digest of a day, today's built so far, and the
deployment sending its latest to Telegram."""

from __future__ import annotations

from typing import Any

from sync.backbone.convex.connection import ConvexConnection


class ConvexDigest(ConvexConnection):
    def digest(self, day: str) -> dict[str, Any] | None:
        value = self.call("query", "digest:get", {"day": day})
        return None if value is None else dict(value)

    def build_today_digest(self, day: str) -> dict[str, Any]:
        # The deployment's clock decides what today is; another day is refused (BackboneRejected).
        return dict(self.call("mutation", "digest:buildToday", {"day": day}))

    def send_digest(self) -> str:
        """Have the deployment send its latest stored digest to Telegram now; the day it covers."""
        return str(self.call("mutation", "digest:send", {})["day"])
