"""Approval announcements on the embedded hub (``cloud_functions/approvals.ts`` and
``telegram.ts`` on Convex): a pending approval's message with its buttons, and the edit a decision
needs, queued in the site's outbox for each chat that hears the approval's category (an edit goes to
every chat its message went to) and sent at once when Telegram takes it."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.base import Approvals


def announce(settings: Settings, backbone: Approvals, approval_id: str, *, new: bool) -> str | None:
    """Queue the approval's message (or the edit it now needs) and send it at once; the daemon's
    next round sends it otherwise. A note to show when the message could not go now, or, with
    Telegram off, that no reviewer will hear of a new approval and what a person must run."""
    if not settings.telegram.enabled:
        return no_reviewer_channel(backbone, approval_id) if new else None
    from daemon.alerts.messages import approval_message
    from daemon.alerts.outbox_keys import approval_key
    from daemon.alerts.store import AlertStore, Queued
    from daemon.alerts.watch import outbox_chats
    from daemon.hubserver.telegram import reconcile, track
    from daemon.quiet_hours import send_after
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
            for chat in outbox_chats(settings, "approval", approval.action_type):
                store.enqueue(Queued(approval_key(approval_id), approval_message(approval), severity, when, chat=chat))
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


def no_reviewer_channel(backbone: Approvals, approval_id: str) -> str:
    """What the agent (and the person beside it) is told when no message goes anywhere: the
    approval waits, unseen, until a person decides it from a terminal or it expires."""
    from datetime import UTC, datetime

    approval = backbone.approval(approval_id)
    expires = (
        ""
        if approval is None
        else f" before it expires at {datetime.fromtimestamp(approval.expires_at / 1000, UTC):%Y-%m-%d %H:%M} UTC"
    )
    return (
        f"no reviewer will hear of approval {approval_id}: Telegram is off on this site (set telegram.chat_id and "
        f"MEMSYNC_TELEGRAM__BOT_TOKEN to have it sent); a person must run `memsync approvals approve "
        f"{approval_id}` (or `memsync approvals reject {approval_id}`){expires}"
    )
