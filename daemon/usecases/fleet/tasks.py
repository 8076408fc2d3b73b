"""The fleet's tasks, any site's: one with its approval's state, and changing one's status or
assignee (what a person does from a terminal, as they decide any site's approval). A task is
created with an approval request (``approvals.request``) or linked to one; while its approval
waits the task is blocked (``sync.policy.tasks``). Listing them is the backbone's own ``tasks`` call."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.usecases.fleet.approvals import ApprovalsAndTasks
    from sync.backbone.base import Approval, Task, Tasks


@dataclass(frozen=True, slots=True)
class TaskView:
    task: Task
    approval: Approval | None  # the approval it waits on or waited on; None: none, or not found


def task(backbone: ApprovalsAndTasks, task_id: str) -> TaskView:
    """The task and its approval; LookupError when no task has that id."""
    found = backbone.task(task_id)
    if found is None:
        raise LookupError(f"no task {task_id!r}: `memsync tasks` lists them")
    return TaskView(found, None if found.approval_id is None else backbone.approval(found.approval_id))


def update(backbone: Tasks, task_id: str, *, status: str | None = None, assign: str | None = None) -> Task:
    """Set the task's status, its assignee, or both; the task as it now is. ValueError when there
    is nothing to change or the assignee is empty; LookupError when no task has that id."""
    if status is None and assign is None:
        raise ValueError("nothing to change: give a status, an assignee or both")
    if assign is not None and not assign.strip():
        raise ValueError("the assignee is empty: give the name of who the task is assigned to")
    if backbone.task(task_id) is None:
        raise LookupError(f"no task {task_id!r}: `memsync tasks` lists them")
    return backbone.update_task(task_id, status=status, assigned_to=assign)
