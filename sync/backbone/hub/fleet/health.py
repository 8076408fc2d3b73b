"""The hub's sync health: the sync-health sweep judges each site "up" or "down" by how long ago it
last synced (its cursor row's last_synced_at), and records a transition only when a judgement
changes, so that an alert is sent once when a site goes silent and once when it is back.
"""

from __future__ import annotations

import sqlite3

from sync.backbone.base import HealthTransition
from sync.backbone.hub.connection import HubConnection


class HubHealth(HubConnection):
    def sync_health(self, now_ms: int, silent_after_ms: int) -> list[HealthTransition]:
        def judge(conn: sqlite3.Connection) -> list[HealthTransition]:
            previous = dict(conn.execute("SELECT site, state FROM health_states").fetchall())
            transitions: list[HealthTransition] = []
            for site, last_synced_at in conn.execute(
                "SELECT site, last_synced_at FROM sync_cursors ORDER BY site"
            ).fetchall():
                silent_ms = max(0, now_ms - last_synced_at)
                state = "down" if silent_ms >= silent_after_ms else "up"
                before = previous.get(site)
                if before == state:
                    continue
                conn.execute("INSERT OR REPLACE INTO health_states VALUES (?, ?, ?)", (site, state, now_ms))
                # A site first judged healthy is no news; first judged silent is.
                if before is None and state == "up":
                    continue
                transition = HealthTransition(site, state, now_ms, silent_ms / 1000)
                conn.execute(
                    "INSERT INTO health_transitions (site, state, at, silent_for_s) VALUES (?, ?, ?, ?)",
                    (site, state, now_ms, transition.silent_for_s),
                )
                transitions.append(transition)
            return transitions

        return self._run(judge)

    def health_transitions(self, since_ms: int) -> list[HealthTransition]:
        rows = self._read(
            "SELECT site, state, at, silent_for_s FROM health_transitions WHERE at >= ? ORDER BY at, id LIMIT 1000",
            (since_ms,),
        )
        return [HealthTransition(*row) for row in rows]
