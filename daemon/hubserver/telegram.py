"""Button presses on the embedded hub, and approval messages kept true to their approvals (the
press handling of ``cloud_functions/telegram.ts`` on Convex).

Presses arrive through getUpdates, polled by one daemon (``daemon/telegram/worker.py``, which hands
each to ``HubPresses``). Each
approval press is applied once: the backbone's resolve is a compare-and-set (a double tap or a
redelivered update finds it decided and is answered so), and the update's offset is stored after
it is handled. Approval messages are edited from the approval as the backbone has it
(``reconcile``), whoever changed it: a button, ``memsync approvals`` on any site, the expiry job.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import structlog

from daemon.alerts.machine import mute, snooze
from daemon.alerts.messages import approval_outcome, hhmm
from daemon.alerts.outbox_keys import approval_edit_key, approval_key
from daemon.alerts.store import AlertStore, Queued
from daemon.config import Settings
from daemon.duties import ApprovalsClient
from daemon.hubserver.tracked import TrackedApprovals
from daemon.telegram.callbacks import (
    HOLD_MS,
    OTHER_CHAT,
    UNKNOWN_BUTTON,
    Action,
    Press,
    UnknownPress,
    elsewhere,
    refusal,
)
from daemon.telegram.policy.routing import Approver, own_chats
from sync.backbone.base import Approvals
from sync.errors import BackboneConflict, BackboneNotFound

log = structlog.get_logger("memsync.telegram")


def apply(
    press: Press | UnknownPress,
    coordination: Approvals,
    store: AlertStore,
    *,
    chats: str | Collection[str] | None = None,
    defer_timeout_ms: int | None = None,
    people: Sequence[Approver] = (),
) -> str:
    """Do what the press asks, if the presser may; the answer to show them. ``chats``: the chats
    memsync speaks in (presses from any other are refused, whatever they ask, before anything is
    looked up); ``people``: the collaborators, of whom those with ``approve`` decide approvals too."""
    if elsewhere(press, chats):
        return OTHER_CHAT
    if isinstance(press, UnknownPress):
        return UNKNOWN_BUTTON
    if press.action in (Action.SNOOZE, Action.MUTE):
        return _hold(press, store)
    return _decide(press, coordination, store, defer_timeout_ms, people)


def _decide(
    press: Press, coordination: Approvals, store: AlertStore, defer_timeout_ms: int | None, people: Sequence[Approver]
) -> str:
    """Approve, reject or defer the approval the press is about: its reviewers and the
    collaborators with ``approve`` only."""
    approval = coordination.approval(press.target)
    if approval is None:
        return "No such approval."
    refused = refusal(press, approval.reviewers, people=people)
    if refused is not None:
        log.warning("button press refused", approval=press.target, from_id=press.from_id, reason=refused)
        return refused
    try:
        if press.action is Action.DEFER:
            deferred = coordination.defer_approval(press.target, press.from_name, defer_timeout_ms)
            answer = f"Deferred until {hhmm(deferred.expires_at)}."
        else:
            status = "approved" if press.action is Action.APPROVE else "rejected"
            coordination.resolve_approval(press.target, status, press.from_name)
            answer = f"{status.capitalize()}."
    except (BackboneConflict, BackboneNotFound) as exc:
        return f"{str(exc)[0].upper()}{str(exc)[1:]}."
    log.info(
        "approval decided from Telegram", approval=press.target, action=press.action.name.lower(), by=press.from_name
    )
    reconcile(coordination, store, only=press.target)
    return answer


def _hold(press: Press, store: AlertStore) -> str:
    """Snooze (1 h) or mute (1 day) the alert the press is about: anyone in the chat may."""
    until = store.now_ms() + HOLD_MS[press.action]
    hold = snooze if press.action is Action.SNOOZE else mute
    key = store.hold(press.target, lambda state: hold(state, until))
    if key is None:
        return "This alert is no longer known."
    log.info("alert held", key=key, by=press.from_name, action=press.action.name.lower(), until=hhmm(until))
    return f"{'Snoozed' if press.action is Action.SNOOZE else 'Muted'} until {hhmm(until)}."


def track(store: AlertStore, approval_id: str) -> None:
    """Follow an approval whose message was queued, to edit it as it changes."""
    TrackedApprovals(store).track(approval_id, "pending", 0)


def reconcile(coordination: Approvals, store: AlertStore, *, only: str | None = None) -> int:
    """Queue an edit of every followed approval's message that no longer says what the approval
    is (decided, expired, deferred); how many."""
    edits = 0
    followed = TrackedApprovals(store)
    for approval_id, (shown, defers) in followed.tracked().items():
        if only is not None and approval_id != only:
            continue
        approval = coordination.approval(approval_id)
        if approval is None:
            followed.untrack(approval_id)
            continue
        if (approval.status, approval.defer_count) == (shown, defers):
            continue
        store.enqueue(
            Queued(
                approval_edit_key(approval_id, approval.status, approval.defer_count),
                approval_outcome(approval),
                edits=approval_key(approval_id),
            )
        )
        edits += 1
        if approval.status == "pending":
            followed.track(approval_id, approval.status, approval.defer_count)
        else:
            followed.untrack(approval_id)
    return edits


class HubPresses:
    """The polling daemon's presses (``daemon.telegram.callbacks.Presses``), applied over a backbone client of
    its own, which ``close`` closes."""

    def __init__(self, settings: Settings, coordination: ApprovalsClient, store: AlertStore) -> None:
        self.settings = settings
        self.coordination = coordination
        self.store = store

    def reconcile(self) -> int:
        return reconcile(self.coordination, self.store)

    def apply(self, press: Press | UnknownPress) -> str:
        return apply(
            press,
            self.coordination,
            self.store,
            chats=own_chats(self.settings.telegram.chat_id, self.settings.collaborators),
            defer_timeout_ms=self._defer_timeout(press.target) if isinstance(press, Press) else None,
            people=self.settings.collaborators,
        )

    def close(self) -> None:
        self.coordination.close()

    def _defer_timeout(self, approval_id: str) -> int | None:
        """A deferral pushes the expiry out by the category's timeout under this config's policy."""
        found = self.coordination.approval(approval_id) if approval_id.isdigit() else None
        if found is None:
            return None
        return self.settings.jobs.approval_timeout_ms(found.action_type)
