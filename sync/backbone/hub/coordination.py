"""The hub as ``Coordination``: approvals and forgetting here, the registry (``registry``), job
leases and runs (``jobs``), sync health (``health``) and the digest (``digest``) beside it; with the
periodic sweeps over every site that Convex runs as crons (``Sweeps``), which here whoever runs the
periodic jobs calls, under a lease.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence

from sync.approvals import APPROVAL_TIMEOUTS_MS, APPROVED_BY_POLICY, DEFAULT_APPROVAL_TIMEOUT_MS, approved_at_creation
from sync.backbone.base import APPROVAL_PRIORITIES, Approval
from sync.backbone.hub.connection import current_ms
from sync.backbone.hub.digest import HubDigest
from sync.backbone.hub.health import HubHealth
from sync.backbone.hub.jobs import HubJobs
from sync.backbone.hub.registry import HubRegistry
from sync.backbone.hub.schema import change_seq, set_change_seq
from sync.errors import BackboneConflict, BackboneNotFound, BackboneRejected


class HubCoordination(HubRegistry, HubJobs, HubHealth, HubDigest):
    # -- approvals ------------------------------------------------------------------------------
    def create_approval(
        self,
        *,
        agent_name: str,
        action_type: str,
        priority: str,
        reviewers: Sequence[str],
        expires_at: int,
        timeout_ms: int | None = None,
        cost_usd: float | None = None,
        tests_passed: bool | None = None,
    ) -> str:
        if priority not in APPROVAL_PRIORITIES:
            raise BackboneRejected(f"priority must be one of {', '.join(APPROVAL_PRIORITIES)}, not {priority!r}")
        timeout = (
            APPROVAL_TIMEOUTS_MS.get(action_type, DEFAULT_APPROVAL_TIMEOUT_MS) if timeout_ms is None else timeout_ms
        )
        if timeout < 0:
            raise BackboneRejected(f"timeout_ms must not be negative, got {timeout}")
        if cost_usd is not None and not (math.isfinite(cost_usd) and cost_usd >= 0):
            raise BackboneRejected(f"cost_usd must be a finite amount, not negative, got {cost_usd}")
        now = current_ms()
        # What never waits for a person (sync.approvals): approved by the policy at once.
        status, resolved_at, resolved_by = (
            ("approved", now, APPROVED_BY_POLICY)
            if approved_at_creation(action_type, timeout, cost_usd, tests_passed)
            else ("pending", None, None)
        )
        cursor = self._run(
            lambda conn: conn.execute(
                "INSERT INTO approvals (site, agent_name, action_type, status, priority, reviewers, expires_at,"
                " created_at, resolved_at, resolved_by, cost_usd, tests_passed)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.site,
                    agent_name,
                    action_type,
                    status,
                    priority,
                    json.dumps(list(reviewers)),
                    expires_at,
                    now,
                    resolved_at,
                    resolved_by,
                    cost_usd,
                    tests_passed,
                ),
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
            "SELECT id, agent_name, action_type, status, priority, reviewers, expires_at, resolved_by, cost_usd,"
            " tests_passed FROM approvals WHERE site = ? AND (? IS NULL OR status = ?) ORDER BY id",
            (self.site, status, status),
        )
        return [
            Approval(
                str(r[0]),
                r[1],
                r[2],
                r[3],
                r[4],
                tuple(json.loads(r[5])),
                r[6],
                r[7],
                r[8],
                None if r[9] is None else bool(r[9]),
            )
            for r in rows
        ]

    def expire_approvals(self, now_ms: int, timeouts_ms: Mapping[str, int], default_ms: int) -> int:
        """Pending approvals of every site past their category's timeout or their own deadline
        expire (Convex's expire-pending-approvals cron)."""

        def expire(conn: sqlite3.Connection) -> int:
            pending = conn.execute(
                "SELECT id, action_type, created_at, expires_at FROM approvals WHERE status = 'pending'"
            ).fetchall()
            due = [
                (now_ms, approval_id)
                for approval_id, category, created_at, expires_at in pending
                if expires_at <= now_ms or now_ms - created_at >= timeouts_ms.get(category, default_ms)
            ]
            conn.executemany("UPDATE approvals SET status = 'expired', resolved_at = ? WHERE id = ?", due)
            return len(due)

        return self._run(expire)

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
