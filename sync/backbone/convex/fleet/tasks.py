"""Convex as ``Tasks`` (``tasks.ts``): a site's tasks, the fleet's to see and update. What an
approval does to its tasks happens in the approval's own mutation (``lib/approvalFlow.ts``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sync.backbone.base import Task
from sync.backbone.convex.connection import ConvexConnection
from sync.backbone.convex.wire import int_or_none
from sync.errors import BackboneRejected
from sync.policy.tasks import TASK_STATUSES


class ConvexTasks(ConvexConnection):
    def create_task(
        self, *, title: str, agent_name: str, assigned_to: str | None = None, approval_id: str | None = None
    ) -> str:
        args: dict[str, Any] = {"title": title, "agentName": agent_name}
        if assigned_to is not None:
            args["assignedTo"] = assigned_to
        if approval_id is not None:
            args["approvalId"] = approval_id
        return str(self.call("mutation", "tasks:create", args)["taskId"])

    def task(self, task_id: str) -> Task | None:
        value = self.call("query", "tasks:get", {"taskId": task_id})
        return None if value is None else task_of(value)

    def tasks(
        self,
        *,
        status: str | None = None,
        agent_name: str | None = None,
        site: str | None = None,
        approval_id: str | None = None,
    ) -> list[Task]:
        if status is not None and status not in TASK_STATUSES:
            return []  # no task has it (the deployment's validator would refuse the call)
        args: dict[str, Any] = {}
        for key, value in (
            ("status", status),
            ("agentName", agent_name),
            ("ofSite", site),
            ("approvalId", approval_id),
        ):
            if value is not None:
                args[key] = value
        return [task_of(r) for r in self.call("query", "tasks:list", args)]

    def update_task(self, task_id: str, *, status: str | None = None, assigned_to: str | None = None) -> Task:
        # Checked here too, so that the hub's sentence is the one a person reads (the deployment's
        # validator would answer with its own).
        if status is not None and status not in TASK_STATUSES:
            raise BackboneRejected(f"a task's status is one of {', '.join(TASK_STATUSES)}, not {status!r}")
        args: dict[str, Any] = {"taskId": task_id}
        if status is not None:
            args["status"] = status
        if assigned_to is not None:
            args["assignedTo"] = assigned_to
        return task_of(self.call("mutation", "tasks:update", args))


def task_of(r: Mapping[str, Any]) -> Task:
    created = int(float(r.get("createdAt") or r.get("_creationTime") or 0))
    return Task(
        str(r["_id"]),
        r["title"],
        r["agentName"],
        r["site"],
        r["status"],
        r.get("assignedTo"),
        None if r.get("approvalId") is None else str(r["approvalId"]),
        created,
        int_or_none(r.get("updatedAt")) or created,
    )
