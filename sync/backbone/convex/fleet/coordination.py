"""Convex as ``Coordination``: approvals here (``approvals.ts``; forgetting is the archive's:
``archive``), the tasks that wait on them (``tasks``), the registry (``registry``), job leases and
runs (``jobs``), sync health (``health``) and the digest (``digest``) beside it, as in the hub's
files of the same names. The periodic sweeps are the deployment's crons, not calls of a site's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from sync.backbone.base import Approval, NewTask
from sync.backbone.convex.fleet.digest import ConvexDigest
from sync.backbone.convex.fleet.health import ConvexHealth
from sync.backbone.convex.fleet.jobs import ConvexJobs
from sync.backbone.convex.fleet.registry import ConvexRegistry
from sync.backbone.convex.fleet.tasks import ConvexTasks
from sync.backbone.convex.wire import int_or_none
from sync.errors import BackboneNotFound, BackboneRejected


class ConvexCoordination(ConvexRegistry, ConvexJobs, ConvexHealth, ConvexDigest, ConvexTasks):
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
        args: dict[str, Any] = {
            "agentName": agent_name,
            "actionType": action_type,
            "priority": priority,
            "reviewers": list(reviewers),
            "expiresAt": expires_at,
        }
        if timeout_ms is not None:
            args["timeoutMs"] = timeout_ms
        if cost_usd is not None:
            if not math.isfinite(cost_usd):  # JSON cannot carry it; the deployment rejects a negative one
                raise BackboneRejected(f"cost_usd must be a finite amount, not negative, got {cost_usd}")
            args["costUsd"] = cost_usd
        if tests_passed is not None:
            args["testsPassed"] = tests_passed
        if summary is not None:
            args["summary"] = summary
        if source_id is not None:
            args["sourceId"] = source_id
        if task is not None:
            args["task"] = {"title": task.title} | (
                {} if task.assigned_to is None else {"assignedTo": task.assigned_to}
            )
        if task_id is not None:
            args["taskId"] = task_id
        value = self.call("mutation", "approvals:create", args)
        return str(value["approvalId"])

    def resolve_approval(self, approval_id: str, status: str, by: str) -> str:
        value = self.call("mutation", "approvals:resolve", {"approvalId": approval_id, "status": status, "by": by})
        return str(value["status"])

    def defer_approval(self, approval_id: str, by: str, timeout_ms: int | None = None) -> Approval:
        # The deployment defers by its own policy table (cloud_functions/approvals.ts), which is
        # also what its expiry cron runs with: ``timeout_ms`` is the hub's knob.
        self.call("mutation", "approvals:defer", {"approvalId": approval_id, "by": by})
        found = self.approval(approval_id)
        if found is None:
            raise BackboneNotFound(f"no approval {approval_id!r}")
        return found

    def approval(self, approval_id: str) -> Approval | None:
        value = self.call("query", "approvals:get", {"approvalId": approval_id})
        return None if value is None else _approval(value)

    def approvals(self, status: str | None = None, all_sites: bool = False) -> list[Approval]:
        args: dict[str, Any] = {"allSites": all_sites}
        if status is not None:
            args["status"] = status
        rows = self.call("query", "approvals:list", args)
        return [_approval(r) for r in sorted(rows, key=lambda r: float(r["_creationTime"]))]


def _approval(r: Mapping[str, Any]) -> Approval:
    return Approval(
        str(r["_id"]),
        r["agentName"],
        r["actionType"],
        r["status"],
        r["priority"],
        tuple(r["reviewers"]),
        int(r["expiresAt"]),
        r.get("resolvedBy"),
        None if r.get("costUsd") is None else float(r["costUsd"]),
        r.get("testsPassed"),
        site=str(r.get("site", "")),
        summary=r.get("summary"),
        source_id=r.get("sourceId"),
        created_at=int(r.get("createdAt") or r.get("_creationTime") or 0),
        resolved_at=int_or_none(r.get("resolvedAt")),
        defer_count=int(r.get("deferCount") or 0),
    )
