"""``memsync approval request|wait`` for an agent's hooks, and ``memsync approvals
[list|approve|reject|defer]`` for a person at a terminal on any site.

An approval is created in the backbone with the policy applied (``sync.policy.approvals``: some are
approved at once, and say so); a pending one is announced on Telegram with Approve / Reject / Defer
buttons: by the deployment itself on Convex, from here through the alerts' outbox on the embedded
hub. ``approval wait`` polls the backbone until it is decided: exit 0 approved, 1 rejected, 2
expired or timed out, 64 when no approval has that id (a wrong id is not an answer a hook should
read as "expired"). memsync never writes to the AgentDB file: an agent learns the decision from
``approval wait`` (or the backbone's approval and the episode's ``approvalStatus``).
"""

from __future__ import annotations

import argparse
import getpass
import json
import socket
import sys
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from daemon.cli.common import EX_USAGE, Commands, add_config, add_json, console, fail, handled, load, say
from sync.backbone.base import APPROVAL_PRIORITIES

if TYPE_CHECKING:
    from sync.backbone.base import Approval

EXIT_APPROVED, EXIT_REJECTED, EXIT_EXPIRED = 0, 1, 2
# sysexits' EX_USAGE: an id that names nothing (an approval, or the episode a request is about).
EXIT_UNKNOWN = 64


def register(commands: Commands) -> None:
    one = commands.add_parser(
        "approval",
        help="ask a person for an approval, or wait for the decision (for agents' hooks)",
        description="Ask a person to approve an action (announced on Telegram with buttons), or wait for it.",
    )
    verbs = one.add_subparsers(title="actions", metavar="ACTION", required=True)
    request = verbs.add_parser(
        "request",
        help="create an approval (the policy may approve it at once); prints its id",
        description="Create an approval. The policy approves some at once (internal and research, an "
        "external_api under $0.10, a code_commit whose tests passed); the others wait for a person, who is "
        "asked on Telegram (on the embedded hub with Telegram off, stderr says no one will be, and what a person "
        "must run before its expiry). Prints the approval's id.",
    )
    add_config(request)
    request.add_argument("--category", required=True, help="the action's category, e.g. send_message, financial")
    request.add_argument("--summary", required=True, help="what the agent wants to do, for the person deciding")
    request.add_argument("--agent", help="the agent asking (default: site.defaults.agent_name)")
    request.add_argument("--episode", metavar="ID", help="the id of this site's episode it is about")
    request.add_argument("--cost", type=float, metavar="USD", help="what the action costs")
    request.add_argument("--tests-passed", action="store_true", help="the change's tests pass")
    request.add_argument("--priority", choices=APPROVAL_PRIORITIES, default="normal")
    request.add_argument(
        "--task", metavar="TITLE", help="create a task waiting on it (blocked until it is decided; `memsync tasks`)"
    )
    request.add_argument("--assign", metavar="NAME", help="who the new task is assigned to (with --task)")
    request.add_argument("--task-id", metavar="ID", help="link one of this site's existing tasks instead")
    add_json(request)
    request.set_defaults(run=request_main)
    wait = verbs.add_parser(
        "wait",
        help="wait for a decision: exit 0 approved, 1 rejected, 2 expired or timed out, 64 no such approval",
        description="Wait until the approval is decided. Exit 0 approved, 1 rejected, 2 expired or timed out, "
        "64 when no approval has that id.",
    )
    add_config(wait)
    wait.add_argument("approval_id", metavar="ID")
    wait.add_argument("--timeout", type=float, metavar="S", help="give up after S seconds (default: until it expires)")
    wait.set_defaults(run=wait_main)

    many = commands.add_parser(
        "approvals",
        help="list approvals, or approve, reject or defer one (any site's)",
        description="The fleet's approvals: list them, or decide one from a terminal on any site.",
    )
    add_config(many)
    add_json(many)
    many.add_argument("--status", choices=("pending", "approved", "rejected", "expired"))
    many.add_argument("--site-only", action="store_true", help="this site's approvals only")
    many.set_defaults(run=list_main)
    actions = many.add_subparsers(title="actions", metavar="ACTION")
    listing = actions.add_parser("list", help="list approvals (the default)")
    add_config(listing)
    add_json(listing)
    listing.add_argument("--status", choices=("pending", "approved", "rejected", "expired"))
    listing.add_argument("--site-only", action="store_true", help="this site's approvals only")
    listing.set_defaults(run=list_main)
    for name, helptext in (
        ("approve", "approve a pending approval"),
        ("reject", "reject a pending approval"),
        ("defer", "push a pending approval's expiry out by its category's timeout (3 times at most)"),
    ):
        verb = actions.add_parser(name, help=helptext, description=helptext[0].upper() + helptext[1:] + ".")
        add_config(verb)
        verb.add_argument("approval_id", metavar="ID")
        verb.add_argument("--by", help="who decides (default: USER@HOST)")
        verb.set_defaults(run=decide_main, verb=name)


def _view(a: Approval) -> dict[str, Any]:
    return {
        "approvalId": a.approval_id,
        "site": a.site,
        "agentName": a.agent_name,
        "category": a.action_type,
        "summary": a.summary,
        "status": a.status,
        "priority": a.priority,
        "expiresAt": a.expires_at,
        "resolvedBy": a.resolved_by,
        "resolvedAt": a.resolved_at,
        "episode": None if a.source_id is None else f"{a.site}:{a.source_id}",
        "deferCount": a.defer_count,
    }


def request_main(args: argparse.Namespace) -> int:
    from daemon.site import duties_of, opened_backbone
    from daemon.usecases.fleet import approvals
    from sync.errors import BackboneNotFound

    with handled():
        settings = load(args, log_level="error")
        if args.cost is not None and not args.cost >= 0:
            fail(f"--cost {args.cost}: give an amount in USD, not negative", EX_USAGE)
        if args.task is not None and args.task_id is not None:
            fail("--task creates a task and --task-id links one: give one of them", EX_USAGE)
        if args.task is not None and not args.task.strip():
            fail("--task is empty: give the task's title, a few words saying what is to be done", EX_USAGE)
        if args.assign is not None and args.task is None:
            fail("--assign is for the task --task creates: give its title with --task too", EX_USAGE)
        with opened_backbone(settings) as backbone:
            try:
                requested = approvals.request(
                    settings,
                    backbone,
                    duties_of(settings, backbone),
                    category=args.category,
                    summary=args.summary,
                    agent=args.agent,
                    episode=args.episode,
                    cost=args.cost,
                    tests_passed=args.tests_passed,
                    priority=args.priority,
                    task=args.task,
                    assign=args.assign,
                    task_id=args.task_id,
                    now_ms=int(time.time() * 1000),
                )
            except LookupError as exc:  # --task-id names none of this site's tasks
                fail(str(exc), EXIT_UNKNOWN)
            except BackboneNotFound as exc:  # the episode it is about: nothing to attach the decision to
                fail(f"{exc}: give the id of one of this site's synced episodes, or leave out --episode", EXIT_UNKNOWN)
            if requested.note is not None:
                console(stderr=True).print(requested.note)
    approval, task = requested.approval, requested.task
    if args.as_json:
        view = _view(approval) if approval else {"approvalId": requested.approval_id}
        sys.stdout.write(json.dumps(view | {"taskId": None if task is None else task.task_id}) + "\n")
    else:
        sys.stdout.write(f"{requested.approval_id}\n")
        if approval is not None and approval.status != "pending":
            console(stderr=True).print(f"{approval.status} by {approval.resolved_by} (policy)")
        if task is not None:
            console(stderr=True).print(f"task {task.task_id} {task.status}: {task.title}")
    return 0


def wait_main(args: argparse.Namespace) -> int:
    from daemon.site import duties_of, opened_backbone
    from daemon.usecases.fleet import approvals

    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            try:
                interval = duties_of(settings, backbone).look_interval
                waited = approvals.wait(settings, backbone, args.approval_id, args.timeout, interval=interval)
            except LookupError as exc:
                fail(str(exc), EXIT_UNKNOWN)
    if waited.status == "approved":
        say(f"approved by {waited.resolved_by}")
        return EXIT_APPROVED
    if waited.status == "rejected":
        say(f"rejected by {waited.resolved_by}")
        return EXIT_REJECTED
    say("expired unanswered" if waited.status == "expired" else f"still pending after {args.timeout:g} s")
    return EXIT_EXPIRED


def list_main(args: argparse.Namespace) -> int:
    from daemon.site import opened_backbone

    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            found = backbone.approvals(args.status, all_sites=not args.site_only)
    if args.as_json:
        sys.stdout.write(json.dumps([_view(a) for a in found], indent=2) + "\n")
        return 0
    if not found:
        say("no approvals" + (f" {args.status}" if args.status else ""))
        return 0
    from rich.table import Table

    from daemon.alerts.messages import hhmm

    table = Table("id", "site", "agent", "category", "status", "expires / decided", "summary")
    for a in found:
        if a.status == "pending":
            state, when = a.status, f"expires {hhmm(a.expires_at)}"
        else:  # a decided row's expiry no longer means anything: who decided it, and when
            state = a.status + (f" by {a.resolved_by}" if a.resolved_by else "")
            verb = "expired" if a.status == "expired" else "decided"
            when = "" if a.resolved_at is None else f"{verb} {_at(a.resolved_at)}"
        table.add_row(a.approval_id, a.site, a.agent_name, a.action_type, state, when, a.summary or "")
    console().print(table)
    return 0


def _at(ms: int) -> str:
    """A decision's time with its day: unlike a pending expiry, it may be days old."""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M UTC")


def decide_main(args: argparse.Namespace) -> int:
    from daemon.site import duties_of, opened_backbone
    from daemon.usecases.fleet.approvals import decide

    by = args.by or f"{getpass.getuser()}@{socket.gethostname()}"
    with handled():
        settings = load(args, log_level="error")
        with opened_backbone(settings, create=False) as backbone:
            try:
                decided = decide(settings, backbone, duties_of(settings, backbone), args.approval_id, args.verb, by)
            except LookupError as exc:
                fail(str(exc), EXIT_UNKNOWN)
            if decided.note is not None:
                console(stderr=True).print(decided.note)
    if args.verb == "defer":
        from daemon.alerts.messages import hhmm

        outcome = f"deferred until {hhmm(decided.expires_at)}"
    else:
        outcome = f"{decided.status} by {by}"
    say(f"approval {args.approval_id} {outcome}")
    return 0
