"""What an approval's decision does to the tasks linked to it. Pure; both backbones apply it in the
transaction that changes the approval (the hub in ``sync/backbone/hub/fleet/tasks.py``, Convex in
``cloud_functions/lib/approvalFlow.ts`` with its copy, ``lib/taskPolicy.ts``), both held to
``contracts/task_status.json``.

A task (title, agent, status, assignee) may wait on one approval. Asking for the approval blocks
it; a deferral keeps it blocked; approving lets the work go on (in progress); a rejection cancels
it; an expiry fails it. A task a person or its agent already finished (done, failed, cancelled) is
never moved by an approval: their word is the last.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

TASK_STATUSES: Final = ("pending", "in_progress", "blocked", "done", "failed", "cancelled")
FINISHED: Final = frozenset({"done", "failed", "cancelled"})

ApprovalEvent = Literal["requested", "deferred", "approved", "rejected", "expired"]

# The status an event moves a linked task to.
EVENT_STATUS: Final[Mapping[str, str]] = {
    "requested": "blocked",
    "deferred": "blocked",
    "approved": "in_progress",
    "rejected": "cancelled",
    "expired": "failed",
}

# A task linked to an approval that already has a status takes the event that status stands for.
LINK_EVENT: Final[Mapping[str, ApprovalEvent]] = {
    "pending": "requested",
    "approved": "approved",
    "rejected": "rejected",
    "expired": "expired",
}


def task_status_after(event: str, current: str) -> str | None:
    """The status a task in ``current`` takes when its approval has ``event``; None when it stays
    as it is (already there, or finished)."""
    target = EVENT_STATUS[event]
    if current in FINISHED or current == target:
        return None
    return target


def link_event(approval_status: str) -> ApprovalEvent:
    """The event a task linked to an approval in ``approval_status`` takes at once."""
    return LINK_EVENT[approval_status]
