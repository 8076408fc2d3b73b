"""``memsync tasks [list|show|update]``: the fleet's tasks from a terminal on any site.

A task is an agent's work, created with an approval request (``memsync approval request --task``,
the MCP ``request_approval`` tool's ``task``) or linked to one; while its approval waits the task is
blocked, and the decision, a deferral or the expiry moves it (``sync.policy.tasks``). People update any
site's task here, as they decide any site's approval. An id that names no task exits 64, as
``memsync approvals`` does for an approval.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, console, fail, handled, load, say
from sync.policy.tasks import TASK_STATUSES

if TYPE_CHECKING:
    from sync.backbone.base import Approval, Task

EXIT_UNKNOWN = 64  # sysexits' EX_USAGE: an id that names no task (as `memsync approvals`)


def _filters(parser: argparse.ArgumentParser) -> None:
    add_config(parser)
    add_json(parser)
    parser.add_argument("--status", choices=TASK_STATUSES, help="only tasks in this status")
    parser.add_argument("--agent", metavar="NAME", help="only this agent's tasks")
    parser.add_argument("--site", metavar="SITE", help="only this site's tasks (default: every site's)")


def register(commands: Commands) -> None:
    many = commands.add_parser(
        "tasks",
        help="list the fleet's tasks, show one with its approval, or update one's status or assignee",
        description="The fleet's tasks: list them, show one with its approval's state, or update one from a "
        "terminal on any site. A task waiting on an approval is blocked until it is decided.",
    )
    _filters(many)
    many.set_defaults(run=list_main)
    actions = many.add_subparsers(title="actions", metavar="ACTION")
    listing = actions.add_parser("list", help="list tasks (the default)", description="List the fleet's tasks.")
    _filters(listing)
    listing.set_defaults(run=list_main)
    show = actions.add_parser(
        "show", help="one task, with its approval's state", description="Show one task, with its approval's state."
    )
    add_config(show)
    add_json(show)
    show.add_argument("task_id", metavar="ID")
    show.set_defaults(run=show_main)
    update = actions.add_parser(
        "update",
        help="set a task's status or assignee (any site's)",
        description="Set a task's status, its assignee, or both (any site's task).",
    )
    add_config(update)
    update.add_argument("task_id", metavar="ID")
    update.add_argument("--status", choices=TASK_STATUSES)
    update.add_argument("--assign", metavar="NAME", help="who the task is assigned to")
    update.set_defaults(run=update_main)


def _view(t: Task) -> dict[str, Any]:
    return {
        "taskId": t.task_id,
        "site": t.site,
        "agentName": t.agent_name,
        "title": t.title,
        "status": t.status,
        "assignedTo": t.assigned_to,
        "approvalId": t.approval_id,
        "createdAt": t.created_at,
        "updatedAt": t.updated_at,
    }


def _approval_view(a: Approval) -> dict[str, Any]:
    return {
        "approvalId": a.approval_id,
        "category": a.action_type,
        "summary": a.summary,
        "status": a.status,
        "expiresAt": a.expires_at,
        "resolvedBy": a.resolved_by,
        "resolvedAt": a.resolved_at,
        "deferCount": a.defer_count,
    }


def _at(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def list_main(args: argparse.Namespace) -> int:
    from daemon.site import opened_backbone

    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            found = backbone.tasks(status=args.status, agent_name=args.agent, site=args.site)
    if args.as_json:
        sys.stdout.write(json.dumps([_view(t) for t in found], indent=2) + "\n")
        return 0
    if not found:
        say("no tasks" + (f" {args.status}" if args.status else ""))
        return 0
    from rich.table import Table

    table = Table("id", "site", "agent", "status", "assigned", "approval", "updated", "title")
    for t in found:
        table.add_row(
            t.task_id,
            t.site,
            t.agent_name,
            t.status,
            t.assigned_to or "",
            t.approval_id or "",
            _at(t.updated_at),
            t.title,
        )
    console().print(table)
    return 0


def show_main(args: argparse.Namespace) -> int:
    from daemon.site import opened_backbone
    from daemon.usecases.fleet.tasks import task as task_view

    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            try:
                found = task_view(backbone, args.task_id)
            except LookupError as exc:
                fail(str(exc), EXIT_UNKNOWN)
    task, approval = found.task, found.approval
    if args.as_json:
        view = _view(task) | {"approval": None if approval is None else _approval_view(approval)}
        sys.stdout.write(json.dumps(view, indent=2) + "\n")
        return 0
    lines = [
        f"task {task.task_id}: {task.title}",
        f"  site {task.site}, agent {task.agent_name}",
        f"  status {task.status}" + (f", assigned to {task.assigned_to}" if task.assigned_to else ", unassigned"),
        f"  created {_at(task.created_at)}, updated {_at(task.updated_at)}",
    ]
    if approval is not None:
        if approval.status == "pending":
            state = f"pending, expires {_at(approval.expires_at)}"
        else:
            by = f" by {approval.resolved_by}" if approval.resolved_by else ""
            state = approval.status + by + ("" if approval.resolved_at is None else f" {_at(approval.resolved_at)}")
        lines.append(f"  approval {approval.approval_id} ({approval.action_type}): {state}")
        if approval.summary:
            lines.append(f"    {approval.summary}")
    elif task.approval_id is not None:
        lines.append(f"  approval {task.approval_id}: not found")
    sys.stdout.write("\n".join(lines) + "\n")
    return 0


def update_main(args: argparse.Namespace) -> int:
    from daemon.site import opened_backbone
    from daemon.usecases.fleet.tasks import update

    if args.status is None and args.assign is None:
        fail("nothing to change: give --status, --assign or both", EX_USAGE)
    if args.assign is not None and not args.assign.strip():
        fail("--assign is empty: give the name of who the task is assigned to", EX_USAGE)
    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            try:
                task = update(backbone, args.task_id, status=args.status, assign=args.assign)
            except LookupError as exc:
                fail(str(exc), EXIT_UNKNOWN)
    assigned = f", assigned to {task.assigned_to}" if task.assigned_to else ""
    say(f"task {task.task_id} {task.status}{assigned}")
    return 0
