"""The hub as ``Coordination``: approvals here (forgetting is the archive's: ``archive``), the
tasks that wait on them (``tasks``: each approval's transaction moves them), the registry
(``registry``), job leases and runs (``jobs``), sync health (``health``) and the digest
(``digest``) beside it; with the periodic sweeps over every site that Convex runs as crons
(``Sweeps``), which here whoever runs the periodic jobs calls, under a lease.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sync.backbone.base import APPROVAL_PRIORITIES, Approval, NewTask
from sync.backbone.hub.fleet.digest import HubDigest
from sync.backbone.hub.fleet.health import HubHealth
from sync.backbone.hub.fleet.jobs import HubJobs
from sync.backbone.hub.fleet.registry import HubRegistry
from sync.backbone.hub.fleet.tasks import HubTasks, checked_title, follow_tasks, insert_task, link_task
from sync.backbone.hub.schema import change_seq, set_change_seq
from sync.errors import BackboneConflict, BackboneNotFound, BackboneRejected
from sync.policy.approvals import (
    APPROVAL_TIMEOUTS_MS,
    APPROVED_BY_POLICY,
    DEFAULT_APPROVAL_TIMEOUT_MS,
    approved_at_creation,
    deferred_expiry,
    effective_expiry,
)

_COLUMNS = (
    "id, site, agent_name, action_type, status, priority, reviewers, expires_at, created_at, resolved_at,"
    " resolved_by, cost_usd, tests_passed, summary, source_site, source_id, defer_count"
)


@dataclass(frozen=True, slots=True)
class _Row:
    id: int
    site: str
    agent_name: str
    action_type: str
    status: str
    priority: str
    reviewers: str
    expires_at: int
    created_at: int
    resolved_at: int | None
    resolved_by: str | None
    cost_usd: float | None
    tests_passed: Any
    summary: str | None
    source_site: str | None
    source_id: str | None
    defer_count: int

    def approval(self) -> Approval:
        return Approval(
            str(self.id),
            self.agent_name,
            self.action_type,
            self.status,
            self.priority,
            tuple(json.loads(self.reviewers)),
            self.expires_at,
            self.resolved_by,
            self.cost_usd,
            None if self.tests_passed is None else bool(self.tests_passed),
            site=self.site,
            summary=self.summary,
            source_id=self.source_id,
            created_at=self.created_at,
            resolved_at=self.resolved_at,
            defer_count=self.defer_count,
        )


def _row_id(approval_id: str) -> int:
    return int(approval_id) if approval_id.isdigit() else -1


def _timeout(action_type: str, timeout_ms: int | None) -> int:
    return APPROVAL_TIMEOUTS_MS.get(action_type, DEFAULT_APPROVAL_TIMEOUT_MS) if timeout_ms is None else timeout_ms


def _has_episode(conn: sqlite3.Connection, site: str, source_id: str) -> bool:
    """An approval is about one of its site's episodes that the hub holds (hot or archived): its
    decision is written to that episode, so an id that names none is refused, never kept dangling."""
    return (
        conn.execute("SELECT 1 FROM episodes WHERE source_site = ? AND source_id = ?", (site, source_id)).fetchone()
        is not None
    )


def _follow(conn: sqlite3.Connection, site: str, source_id: str, status: str) -> None:
    """The episode an approval is about carries its decision. Not a change of its content (the
    site's next push of the episode leaves it), but a change in the feed, so that search indexes
    show the decision too (a payload rewrite, nothing embedded again)."""
    seq = change_seq(conn) + 1
    moved = conn.execute(
        "UPDATE episodes SET approval_status = ?, change_seq = ? WHERE source_site = ? AND source_id = ?"
        " AND approval_status IS NOT ?",
        (status, seq, site, source_id, status),
    ).rowcount
    if moved:
        set_change_seq(conn, seq)


class HubCoordination(HubRegistry, HubJobs, HubHealth, HubDigest, HubTasks):
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
        summary: str | None = None,
        source_id: str | None = None,
        task: NewTask | None = None,
        task_id: str | None = None,
    ) -> str:
        if task is not None and task_id is not None:
            raise BackboneRejected("an approval creates a task or links one, not both")
        if task is not None:
            checked_title(task.title)
        if priority not in APPROVAL_PRIORITIES:
            raise BackboneRejected(f"priority must be one of {', '.join(APPROVAL_PRIORITIES)}, not {priority!r}")
        timeout = _timeout(action_type, timeout_ms)
        if timeout < 0:
            raise BackboneRejected(f"timeout_ms must not be negative, got {timeout}")
        if cost_usd is not None and not (math.isfinite(cost_usd) and cost_usd >= 0):
            raise BackboneRejected(f"cost_usd must be a finite amount, not negative, got {cost_usd}")
        now = self.clock()
        # What never waits for a person (sync.policy.approvals): approved by the policy at once.
        status, resolved_at, resolved_by = (
            ("approved", now, APPROVED_BY_POLICY)
            if approved_at_creation(action_type, timeout, cost_usd, tests_passed)
            else ("pending", None, None)
        )

        def insert(conn: sqlite3.Connection) -> str:
            if source_id is not None and not _has_episode(conn, self.site, source_id):
                raise BackboneNotFound(f"no episode {source_id!r} from site {self.site} in the hub")
            cursor = conn.execute(
                "INSERT INTO approvals (site, agent_name, action_type, status, priority, reviewers, expires_at,"
                " created_at, resolved_at, resolved_by, cost_usd, tests_passed, summary, source_site, source_id)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                    summary,
                    None if source_id is None else self.site,
                    source_id,
                ),
            )
            if source_id is not None:
                _follow(conn, self.site, source_id, status)
            approval_id = cursor.lastrowid
            assert approval_id is not None
            if task is not None:
                insert_task(
                    conn,
                    site=self.site,
                    title=task.title,
                    agent_name=agent_name,
                    assigned_to=task.assigned_to,
                    approval_id=approval_id,
                    approval_status=status,
                    now=now,
                )
            elif task_id is not None:
                link_task(
                    conn, site=self.site, task_id=task_id, approval_id=approval_id, approval_status=status, now=now
                )
            return str(approval_id)

        return self._run(insert)

    def resolve_approval(self, approval_id: str, status: str, by: str) -> str:
        if status not in ("approved", "rejected"):
            raise BackboneRejected(f"an approval is resolved as approved or rejected, not {status!r}")

        def resolve(conn: sqlite3.Connection) -> str:
            now = self.clock()
            row = self._pending(conn, approval_id, now)
            conn.execute(
                "UPDATE approvals SET status = ?, resolved_at = ?, resolved_by = ? WHERE id = ?",
                (status, now, by, row.id),
            )
            if row.source_site is not None and row.source_id is not None:
                _follow(conn, row.source_site, row.source_id, status)
            follow_tasks(conn, row.id, status, now)
            return status

        return self._run(resolve)

    def defer_approval(self, approval_id: str, by: str, timeout_ms: int | None = None) -> Approval:
        def defer(conn: sqlite3.Connection) -> None:
            now = self.clock()
            row = self._pending(conn, approval_id, now)
            timeout = _timeout(row.action_type, timeout_ms)
            until = deferred_expiry(row.created_at, row.expires_at, timeout, row.defer_count, now)
            if until is None:
                raise BackboneConflict(
                    f"approval {approval_id} was deferred {row.defer_count} times already: approve or reject it"
                )
            conn.execute(
                "UPDATE approvals SET expires_at = ?, defer_count = defer_count + 1 WHERE id = ?", (until, row.id)
            )
            follow_tasks(conn, row.id, "deferred", now)

        self._run(defer)
        found = self.approval(approval_id)
        assert found is not None  # it was just deferred, and approvals are never deleted
        return found

    def _pending(self, conn: sqlite3.Connection, approval_id: str, now: int) -> _Row:
        found = conn.execute(f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (_row_id(approval_id),)).fetchone()
        if found is None:
            raise BackboneNotFound(f"no approval {approval_id!r}")
        row = _Row(*found)
        if row.status != "pending":
            by = f" by {row.resolved_by}" if row.resolved_by else ""
            raise BackboneConflict(f"approval {approval_id} is already {row.status}{by}")
        if now >= row.expires_at:
            raise BackboneConflict(f"approval {approval_id} is expired")
        return row

    def approval(self, approval_id: str) -> Approval | None:
        rows = self._read(f"SELECT {_COLUMNS} FROM approvals WHERE id = ?", (_row_id(approval_id),))
        return _Row(*rows[0]).approval() if rows else None

    def approvals(self, status: str | None = None, all_sites: bool = False) -> list[Approval]:
        site = None if all_sites else self.site
        rows = self._read(
            f"SELECT {_COLUMNS} FROM approvals WHERE (? IS NULL OR site = ?) AND (? IS NULL OR status = ?) ORDER BY id",
            (site, site, status, status),
        )
        return [_Row(*r).approval() for r in rows]

    def expire_approvals(self, now_ms: int, timeouts_ms: Mapping[str, int], default_ms: int) -> int:
        """Pending approvals of every site past their category's timeout or their own deadline
        expire (Convex's expire-pending-approvals cron); a deferred one by its deadline alone."""

        def expire(conn: sqlite3.Connection) -> int:
            pending = conn.execute(
                "SELECT id, action_type, created_at, expires_at, defer_count, source_site, source_id"
                " FROM approvals WHERE status = 'pending'"
            ).fetchall()
            due = [
                row
                for row in pending
                if now_ms >= effective_expiry(row[2], row[3], timeouts_ms.get(row[1], default_ms), row[4])
            ]
            conn.executemany(
                "UPDATE approvals SET status = 'expired', resolved_at = ? WHERE id = ?", [(now_ms, r[0]) for r in due]
            )
            for row in due:
                if row[5] is not None and row[6] is not None:
                    _follow(conn, row[5], row[6], "expired")
                follow_tasks(conn, row[0], "expired", now_ms)
            return len(due)

        return self._run(expire)
