"""Asking a person for an approval and waiting for the decision: what ``memsync approval
request|wait`` (an agent's hooks) and ``memsync mcp``'s ``request_approval``/``wait_for_approval``
tools both do, one implementation.

``request`` creates the approval in the backbone with the policy applied (``sync.approvals``: some
are approved at once) and, on the embedded hub, announces a pending one on Telegram (Convex does
that itself). ``wait`` looks at the backbone until the approval is decided, expires or ``timeout``
seconds pass; the clock and the sleep are arguments.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.base import Approval, Approvals

Decision = Literal["approved", "rejected", "expired", "pending"]


@dataclass(frozen=True, slots=True)
class Waited:
    """``pending``: still undecided when the wait's timeout came (the approval stays open)."""

    status: Decision
    resolved_by: str | None = None


def request(
    settings: Settings,
    backbone: Approvals,
    *,
    category: str,
    summary: str,
    agent: str | None = None,
    episode: str | None = None,
    cost: float | None = None,
    tests_passed: bool = False,
    priority: str = "normal",
    now_ms: int,
) -> tuple[str, Approval | None, str | None]:
    """Create the approval: its id, the approval as now stored, and a note when its Telegram message
    could not be sent now (the daemon sends it). ValueError: a negative cost; BackboneNotFound:
    ``episode`` names none of this site's episodes."""
    if cost is not None and not cost >= 0:
        raise ValueError(f"cost {cost}: give an amount in USD, not negative")
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
    )
    approval = backbone.approval(approval_id)
    note = None
    if approval is not None and approval.status == "pending":
        note = announce(settings, backbone, approval_id, new=True)
    return approval_id, approval, note


def wait(
    settings: Settings,
    backbone: Approvals,
    approval_id: str,
    timeout: float | None,
    *,
    clock: Callable[[], float] = time.time,
    monotonic: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Waited:
    """The decision, or ``pending`` after ``timeout`` seconds (None: until the approval expires).
    LookupError when no approval has that id."""
    from sync.approvals import effective_expiry

    deadline = None if timeout is None else monotonic() + max(timeout, 0)
    interval = 0.5 if settings.backbone.kind == "local" else 2.0  # Convex: each look is a function call
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


def announce(settings: Settings, backbone: Approvals, approval_id: str, *, new: bool) -> str | None:
    """On the embedded hub, queue the approval's message (or the edit it now needs) and send it at
    once; the daemon's next round sends it otherwise. Convex does this itself. A note to show when
    the message could not go now."""
    if settings.backbone.kind != "local" or not settings.telegram.enabled:
        return None
    from daemon.alerts.messages import approval_message
    from daemon.alerts.quiet import send_after
    from daemon.alerts.store import AlertStore, Queued
    from daemon.telegram.presses import reconcile, track
    from daemon.telegram.sender import send_now
    from sync.approvals import severity_of_priority

    store = AlertStore(settings.alerts_path)
    try:
        telegram = settings.telegram
        if new:
            approval = backbone.approval(approval_id)
            assert approval is not None
            # A high or critical approval goes at once; the others wait out the quiet hours.
            severity = severity_of_priority(approval.priority)
            when = send_after(severity, store.now_ms(), telegram.quiet_hours, telegram.timezone)
            store.enqueue(Queued(f"approval:{approval_id}", approval_message(approval), severity, when))
            track(store, approval_id)
        else:
            reconcile(backbone, store, only=approval_id)
        assert telegram.bot_token is not None
        assert telegram.chat_id is not None
        done = send_now(store, telegram.bot_token.get_secret_value(), telegram.api_base, telegram.chat_id)
        if done.held is not None:
            return f"Telegram message queued, not sent yet: {done.held}"
    except Exception as exc:  # noqa: BLE001 - the approval stands; the daemon sends what is queued
        return f"Telegram message not sent now ({exc}); the daemon will send it"
    finally:
        store.close()
    return None
