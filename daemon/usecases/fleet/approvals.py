"""Asking a person for an approval, waiting for the decision, and deciding: what ``memsync approval
request|wait`` (an agent's hooks), ``memsync approvals approve|reject|defer`` (a person at a
terminal) and ``memsync mcp``'s ``request_approval``/``wait_for_approval`` tools do, one
implementation. Listing them is the backbone's own ``approvals`` call.

``request`` creates the approval in the backbone with the policy applied (``sync.policy.approvals``: some
are approved at once), with the task it creates or links if asked (``sync.policy.tasks``: blocked while it
waits), and has the server announce a pending one on Telegram (``ServerDuties``: the site itself on
the embedded hub, the deployment on Convex). ``wait`` looks at the backbone until
the approval is decided, expires or ``timeout`` seconds pass; the clock and the sleep are arguments.
``decide`` approves, rejects or defers one, any site's, and has its Telegram message edited.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from sync.backbone.base import Approvals, Tasks
from sync.errors import MemsyncError

if TYPE_CHECKING:
    from daemon.config import Collaborator, Settings
    from daemon.duties import ServerDuties
    from sync.backbone.base import Approval, Task

Decision = Literal["approved", "rejected", "expired", "pending"]
Verb = Literal["approve", "reject", "defer"]


@dataclass(frozen=True, slots=True)
class Waited:
    """``pending``: still undecided when the wait's timeout came (the approval stays open)."""

    status: Decision
    resolved_by: str | None = None


class ApprovalsAndTasks(Approvals, Tasks, Protocol):
    """What a request with a task uses: the approvals, and the tasks one may create or link."""


@dataclass(frozen=True, slots=True)
class Requested:
    approval_id: str
    approval: Approval | None  # as now stored
    # Its Telegram message could not go now (the daemon sends it), or no reviewer channel exists
    # (Telegram off) and a person must decide it from a terminal: for the agent and its person.
    note: str | None
    task: Task | None = None  # the task it created or linked, as it now is


def request(
    settings: Settings,
    backbone: ApprovalsAndTasks,
    duties: ServerDuties,
    *,
    category: str,
    summary: str,
    agent: str | None = None,
    episode: str | None = None,
    cost: float | None = None,
    tests_passed: bool = False,
    priority: str = "normal",
    task: str | None = None,
    assign: str | None = None,
    task_id: str | None = None,
    now_ms: int,
) -> Requested:
    """Create the approval, with a task titled ``task`` (assigned to ``assign``) or linking the
    site's task ``task_id``. ValueError: a negative cost, an empty title, a task both created and
    linked, an assignee without a task; LookupError: ``task_id`` names none of this site's tasks;
    BackboneNotFound: ``episode`` names none of this site's episodes."""
    from sync.backbone.base import NewTask

    if cost is not None and not cost >= 0:
        raise ValueError(f"cost {cost}: give an amount in USD, not negative")
    if task is not None and task_id is not None:
        raise ValueError("give a title for a new task or the id of one to link, not both")
    if task is not None and not task.strip():
        raise ValueError("the task's title is empty: say in a few words what is to be done")
    if assign is not None and task is None:
        raise ValueError("an assignee is for the task the request creates: give its title too")
    if task_id is not None:
        found = backbone.task(task_id)
        if found is None or found.site != settings.site.name:
            raise LookupError(f"no task {task_id!r} of site {settings.site.name}: `memsync tasks` lists them")
    timeout = settings.jobs.approval_timeout_ms(category)
    approval_id = backbone.create_approval(
        agent_name=agent or settings.site.defaults.agent_name or "agent",
        action_type=category,
        priority=priority,
        reviewers=[str(r) for r in settings.telegram.reviewers],
        expires_at=now_ms + max(timeout, 60_000),
        timeout_ms=timeout,
        cost_usd=cost,
        tests_passed=True if tests_passed else None,
        summary=summary,
        source_id=episode,
        task=None if task is None else NewTask(task, assign),
        task_id=task_id,
    )
    approval = backbone.approval(approval_id)
    linked = backbone.tasks(approval_id=approval_id) if task is not None or task_id is not None else []
    note = None
    if approval is not None and approval.status == "pending":
        note = duties.announce_approval(approval_id, new=True)
    return Requested(approval_id, approval, note, linked[-1] if linked else None)


def wait(
    settings: Settings,
    backbone: Approvals,
    approval_id: str,
    timeout: float | None,
    *,
    interval: float,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Waited:
    """The decision, or ``pending`` after ``timeout`` seconds (None: until the approval expires),
    looking every ``interval`` seconds (``ServerDuties.look_interval``). LookupError when no
    approval has that id."""
    from sync.policy.approvals import effective_expiry

    deadline = None if timeout is None else monotonic() + max(timeout, 0)
    while True:
        approval = backbone.approval(approval_id)
        if approval is None:
            raise LookupError(f"no approval {approval_id!r}: `memsync approvals` lists them")
        if approval.status == "approved":
            return Waited("approved", approval.resolved_by)
        if approval.status == "rejected":
            return Waited("rejected", approval.resolved_by)
        allowed = settings.jobs.approval_timeout_ms(approval.action_type)
        expiry = effective_expiry(approval.created_at, approval.expires_at, allowed, approval.defer_count)
        if approval.status == "expired" or clock() * 1000 >= expiry:
            return Waited("expired")
        if deadline is not None and monotonic() >= deadline:
            return Waited("pending")
        sleep(interval if deadline is None else max(0.0, min(interval, deadline - monotonic())))


@dataclass(frozen=True, slots=True)
class Decided:
    """What a decision did: ``status`` is the approval's now (a deferral leaves it pending, with
    ``expires_at`` pushed out); ``note`` when its Telegram message could not be edited now."""

    approval_id: str
    status: str
    by: str
    expires_at: int
    note: str | None


def decide(
    settings: Settings, backbone: Approvals, duties: ServerDuties, approval_id: str, verb: Verb, by: str
) -> Decided:
    """Approve, reject or defer (push its expiry out by its category's timeout) a pending approval,
    as ``by``. LookupError when no approval has that id; BackboneConflict when it is decided
    already (or deferred too often)."""
    found = backbone.approval(approval_id)
    if found is None:
        raise LookupError(f"no approval {approval_id!r}: `memsync approvals` lists them")
    if verb == "defer":
        deferred = backbone.defer_approval(approval_id, by, settings.jobs.approval_timeout_ms(found.action_type))
        status, expires_at = deferred.status, deferred.expires_at
    else:
        status = backbone.resolve_approval(approval_id, "approved" if verb == "approve" else "rejected", by)
        expires_at = found.expires_at
    note = duties.announce_approval(approval_id, new=False)
    return Decided(approval_id, status, by, expires_at, note)


class NotAReviewer(MemsyncError):
    """The person may not decide this approval: neither a reviewer it lists nor a collaborator with
    ``approve``."""


def collaborator(settings: Settings, name: str) -> Collaborator:
    """The ``[[collaborators]]`` entry of that name; LookupError names the ones there are."""
    found = next((c for c in settings.collaborators if c.name == name), None)
    if found is None:
        known = ", ".join(c.name for c in settings.collaborators) or "none"
        raise LookupError(f"no collaborator named {name!r} (collaborators: {known})")
    return found


def may_decide_as(settings: Settings, approval: Approval, name: str) -> bool:
    """Whether the collaborator ``name`` may decide ``approval`` under Telegram's rules
    (``daemon.telegram.policy.routing.may_decide``: a reviewer it lists, by Telegram user id, or a
    collaborator with ``approve``)."""
    from daemon.telegram.policy.routing import may_decide

    presser = collaborator(settings, name).presser_id
    return presser is not None and may_decide(presser, approval.reviewers, settings.collaborators)


def decide_as(
    settings: Settings, backbone: Approvals, duties: ServerDuties, approval_id: str, verb: Verb, name: str
) -> Decided:
    """``decide`` as the collaborator ``name`` under Telegram's reviewer rules (a person at a
    terminal decides any; a person in the web viewer is a collaborator, as one pressing a button
    is). NotAReviewer when they may not; LookupError for an unknown approval or collaborator."""
    found = backbone.approval(approval_id)
    if found is None:
        raise LookupError(f"no approval {approval_id!r}: `memsync approvals` lists them")
    if not may_decide_as(settings, found, name):
        raise NotAReviewer(
            f"{name} may not decide approval {approval_id}: give their [[collaborators]] entry the approve "
            "permission, or list their Telegram user id in telegram.reviewers"
        )
    return decide(settings, backbone, duties, approval_id, verb, name)


def about(approvals: Approvals, site: str, source_id: str) -> list[Approval]:
    """The approvals (every site's, oldest first) an agent asked about the episode ``site:source_id``."""
    return [a for a in approvals.approvals(None, all_sites=True) if a.site == site and a.source_id == source_id]
