"""The hub as ``Coordination``: the agent registry, job slots, approvals and forgetting, for the
site the hub was opened for; and the periodic sweeps over every site that Convex runs as crons
(``mark_stale``, ``expire_approvals``), which here whoever runs the periodic jobs calls.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from sync.backbone.base import APPROVAL_PRIORITIES, AgentState, Approval
from sync.backbone.hub.connection import HubConnection, current_ms
from sync.backbone.hub.schema import change_seq, set_change_seq
from sync.errors import BackboneConflict, BackboneNotFound, BackboneRejected

# An agent silent this long is offline (the same rule as the Convex functions).
STALE_AFTER_MS = 3 * 60 * 1000


class HubCoordination(HubConnection):
    # -- the agent registry ---------------------------------------------------------------------
    def heartbeat(self, agent_name: str, platform: str) -> None:
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO agents VALUES (?, ?, ?, 'online', ?) ON CONFLICT (site, agent_name) DO UPDATE SET"
                " platform = excluded.platform, status = 'online', last_heartbeat = excluded.last_heartbeat",
                (self.site, agent_name, platform, current_ms()),
            )
        )

    def agents(self) -> list[AgentState]:
        rows = self._read(
            "SELECT agent_name, platform, status, last_heartbeat FROM agents WHERE site = ? ORDER BY agent_name",
            (self.site,),
        )
        return [AgentState(*row) for row in rows]

    def mark_stale(self, now_ms: int | None = None) -> int:
        """Online agents of every site silent for STALE_AFTER_MS go offline (Convex's
        mark-stale-agents cron)."""
        cutoff = (current_ms() if now_ms is None else now_ms) - STALE_AFTER_MS
        cursor = self._run(
            lambda conn: conn.execute(
                "UPDATE agents SET status = 'offline' WHERE status = 'online' AND last_heartbeat < ?", (cutoff,)
            )
        )
        return int(cursor.rowcount)

    # -- job slots ------------------------------------------------------------------------------
    def claim_slot(self, job: str, slot: str) -> bool:
        def claim(conn: sqlite3.Connection) -> bool:
            conn.execute("INSERT OR IGNORE INTO job_claims VALUES (?, ?, ?, ?)", (job, slot, self.site, current_ms()))
            (claimant,) = conn.execute(
                "SELECT claimant FROM job_claims WHERE job = ? AND slot = ?", (job, slot)
            ).fetchone()
            return bool(claimant == self.site)

        return self._run(claim)

    # -- approvals ------------------------------------------------------------------------------
    def create_approval(
        self,
        *,
        agent_name: str,
        action_type: str,
        priority: str,
        reviewers: Sequence[str],
        expires_at: int,
    ) -> str:
        if priority not in APPROVAL_PRIORITIES:
            raise BackboneRejected(f"priority must be one of {', '.join(APPROVAL_PRIORITIES)}, not {priority!r}")
        cursor = self._run(
            lambda conn: conn.execute(
                "INSERT INTO approvals (site, agent_name, action_type, status, priority, reviewers, expires_at,"
                " created_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?)",
                (self.site, agent_name, action_type, priority, json.dumps(list(reviewers)), expires_at, current_ms()),
            )
        )
        return str(cursor.lastrowid)

    def resolve_approval(self, approval_id: str, status: str, by: str) -> str:
        if status not in ("approved", "rejected"):
            raise BackboneRejected(f"an approval is resolved as approved or rejected, not {status!r}")

        def resolve(conn: sqlite3.Connection) -> str:
            now = current_ms()
            row = conn.execute(
                "SELECT status, expires_at FROM approvals WHERE id = ? AND site = ?",
                (int(approval_id) if approval_id.isdigit() else -1, self.site),
            ).fetchone()
            if row is None:
                raise BackboneNotFound(f"no approval {approval_id!r} for site {self.site!r}")
            if row[0] != "pending" or now >= row[1]:
                raise BackboneConflict(f"approval {approval_id} is {row[0] if row[0] != 'pending' else 'expired'}")
            conn.execute(
                "UPDATE approvals SET status = ?, resolved_at = ?, resolved_by = ? WHERE id = ?",
                (status, now, by, int(approval_id)),
            )
            return status

        return self._run(resolve)

    def approvals(self, status: str | None = None) -> list[Approval]:
        rows = self._read(
            "SELECT id, agent_name, action_type, status, priority, reviewers, expires_at, resolved_by FROM approvals"
            " WHERE site = ? AND (? IS NULL OR status = ?) ORDER BY id",
            (self.site, status, status),
        )
        return [Approval(str(r[0]), r[1], r[2], r[3], r[4], tuple(json.loads(r[5])), r[6], r[7]) for r in rows]

    def expire_approvals(self, now_ms: int | None = None) -> int:
        """Pending approvals of every site past their deadline expire (Convex's
        expire-pending-approvals cron)."""
        now = current_ms() if now_ms is None else now_ms
        cursor = self._run(
            lambda conn: conn.execute(
                "UPDATE approvals SET status = 'expired', resolved_at = ? WHERE status = 'pending' AND expires_at <= ?",
                (now, now),
            )
        )
        return int(cursor.rowcount)

    # -- forgetting -----------------------------------------------------------------------------
    def forget(self, source_id: str) -> bool:
        def forget(conn: sqlite3.Connection) -> bool:
            deleted = conn.execute(
                "DELETE FROM episodes WHERE source_site = ? AND source_id = ?", (self.site, source_id)
            ).rowcount
            if not conn.execute(
                "SELECT 1 FROM tombstones WHERE source_site = ? AND source_id = ?", (self.site, source_id)
            ).fetchone():
                seq = change_seq(conn) + 1
                conn.execute(
                    "INSERT INTO tombstones (source_site, source_id, deleted_at, change_seq) VALUES (?, ?, ?, ?)",
                    (self.site, source_id, current_ms(), seq),
                )
                set_change_seq(conn, seq)
            return bool(deleted)

        return self._run(forget)
