"""What a button press asks, and whether the presser may. Pure.

Callback data: ``a:`` / ``r:`` / ``d:`` + an approval id (approve, reject, defer: only the
approval's reviewers, by Telegram user id), ``s:`` / ``m:`` + an alert id (snooze 1 h, mute 1 day:
anyone in the chat).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Protocol

from daemon.alerts.machine import HOUR_MS


class Action(StrEnum):
    APPROVE = "a"
    REJECT = "r"
    DEFER = "d"
    SNOOZE = "s"
    MUTE = "m"


APPROVAL_ACTIONS: Final = (Action.APPROVE, Action.REJECT, Action.DEFER)
HOLD_MS: Final = {Action.SNOOZE: HOUR_MS, Action.MUTE: 24 * HOUR_MS}


@dataclass(frozen=True, slots=True)
class Press:
    callback_id: str
    action: Action
    target: str  # an approval id or an alert id
    from_id: str
    from_name: str
    message_id: int | None
    chat_id: str | None = None  # the chat of the message pressed


class Presses(Protocol):
    """What the daemon that polls Telegram does with the button presses it receives: the server's
    (``daemon.duties.ServerDuties.presses``), here beside the press so that the poller need not
    import the duties, which name it."""

    def reconcile(self) -> int:
        """Queue the edits of approval messages that no longer say what their approval is; how many."""
        ...

    def apply(self, press: Press) -> str:
        """Do what the press asks, if the presser may; the answer to show them."""
        ...

    def close(self) -> None: ...


def parse(update: dict[str, Any]) -> Press | None:
    """A button press in a Telegram update, or None (another kind of update, unknown data)."""
    query = update.get("callback_query")
    if not isinstance(query, dict):
        return None
    data, sender = query.get("data"), query.get("from")
    if not isinstance(data, str) or not isinstance(sender, dict) or ":" not in data:
        return None
    code, target = data.split(":", 1)
    if not target:  # names nothing (Convex's parseButton refuses it too: contracts/button_presses.json)
        return None
    try:
        action = Action(code)
    except ValueError:
        return None
    name = " ".join(str(sender[k]) for k in ("first_name", "last_name") if sender.get(k)) or str(
        sender.get("username") or sender.get("id")
    )
    message = query.get("message")
    message_id = message.get("message_id") if isinstance(message, dict) else None
    chat = message.get("chat") if isinstance(message, dict) else None
    chat_id = str(chat["id"]) if isinstance(chat, dict) and "id" in chat else None
    return Press(str(query.get("id", "")), action, target, str(sender.get("id")), name, message_id, chat_id)


def refusal(press: Press, reviewers: Sequence[str], chat_id: str | None = None) -> str | None:
    """Why this press may not do what it asks, or None: only an approval's reviewers may decide
    it, and only presses in memsync's own chat count (a bot may be added to other chats)."""
    if chat_id is not None and press.chat_id is not None and press.chat_id != chat_id:
        return "This chat does not decide memsync's approvals."
    if press.action in APPROVAL_ACTIONS and press.from_id not in reviewers:
        return "You are not a reviewer of this approval."
    return None
