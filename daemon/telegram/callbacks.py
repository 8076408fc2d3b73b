"""What a button press asks, and whether the presser may. Pure.

Callback data: ``a:`` / ``r:`` / ``d:`` + an approval id (approve, reject, defer: only the
approval's reviewers and the collaborators with ``approve``, by Telegram user id), ``s:`` / ``m:``
+ an alert id (snooze 1 h, mute 1 day: anyone in the chat). A press of any other data (a button of
an older memsync, of another bot in the chat) is answered too, or Telegram's client spins until it
gives up (contracts/press_answers.json).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Protocol

from daemon.alerts.machine import HOUR_MS
from daemon.telegram.policy.routing import Approver, may_decide


class Action(StrEnum):
    APPROVE = "a"
    REJECT = "r"
    DEFER = "d"
    SNOOZE = "s"
    MUTE = "m"


APPROVAL_ACTIONS: Final = (Action.APPROVE, Action.REJECT, Action.DEFER)
HOLD_MS: Final = {Action.SNOOZE: HOUR_MS, Action.MUTE: 24 * HOUR_MS}
# What a presser is answered when the press may not do what it asks (contracts/press_answers.json).
OTHER_CHAT: Final = "This chat does not decide memsync's approvals."
NOT_A_REVIEWER: Final = "You are not a reviewer of this approval."
UNKNOWN_BUTTON: Final = "Unknown button."


@dataclass(frozen=True, slots=True)
class Press:
    callback_id: str
    action: Action
    target: str  # an approval id or an alert id
    from_id: str
    from_name: str
    message_id: int | None
    chat_id: str | None = None  # the chat of the message pressed


@dataclass(frozen=True, slots=True)
class UnknownPress:
    """A press whose callback data asks nothing memsync knows: answered, never applied."""

    callback_id: str
    chat_id: str | None = None  # the chat of the message pressed


class Presses(Protocol):
    """What the daemon that polls Telegram does with the button presses it receives: the server's
    (``daemon.duties.ServerDuties.presses``), here beside the press so that the poller need not
    import the duties, which name it."""

    def reconcile(self) -> int:
        """Queue the edits of approval messages that no longer say what their approval is; how many."""
        ...

    def apply(self, press: Press | UnknownPress) -> str:
        """Do what the press asks, if the presser may; the answer to show them."""
        ...

    def close(self) -> None: ...


def pressed(update: dict[str, Any]) -> Press | UnknownPress | None:
    """The button press in a Telegram update: what it asks, or an UnknownPress when its data asks
    nothing memsync knows; None for an update that is no button press (nothing to answer)."""
    query = update.get("callback_query")
    if not isinstance(query, dict) or not isinstance(query.get("from"), dict) or not query.get("id"):
        return None
    sender: dict[str, Any] = query["from"]
    message = query.get("message")
    message_id = message.get("message_id") if isinstance(message, dict) else None
    chat = message.get("chat") if isinstance(message, dict) else None
    chat_id = str(chat["id"]) if isinstance(chat, dict) and "id" in chat else None
    found = _read(query.get("data"))
    if found is None:
        return UnknownPress(str(query["id"]), chat_id)
    action, target = found
    name = " ".join(str(sender[k]) for k in ("first_name", "last_name") if sender.get(k)) or str(
        sender.get("username") or sender.get("id")
    )
    return Press(str(query["id"]), action, target, str(sender.get("id")), name, message_id, chat_id)


def _read(data: object) -> tuple[Action, str] | None:
    """The action and target callback data asks for (contracts/button_presses.json), or None."""
    if not isinstance(data, str) or ":" not in data:
        return None
    code, target = data.split(":", 1)
    if not target:  # names nothing (Convex's parseButton refuses it too)
        return None
    try:
        return Action(code), target
    except ValueError:
        return None


def parse(update: dict[str, Any]) -> Press | None:
    """A button press in a Telegram update that asks something memsync knows, or None."""
    found = pressed(update)
    return found if isinstance(found, Press) else None


def elsewhere(press: Press | UnknownPress, chats: str | Collection[str] | None) -> bool:
    """Was it pressed in another chat than memsync's own (``chats``: the default chat and the
    collaborators', ``routing.own_chats``; None: any chat counts)? A bot may be added to other
    chats: presses there count for nothing, whatever they ask."""
    if chats is None or press.chat_id is None:
        return False
    return press.chat_id not in ({chats} if isinstance(chats, str) else chats)


def refusal(
    press: Press | UnknownPress,
    reviewers: Sequence[str],
    chats: str | Collection[str] | None = None,
    people: Sequence[Approver] = (),
) -> str | None:
    """Why this press may not do what it asks, or None: only presses in memsync's own chats count,
    and only an approval's reviewers, or a collaborator with ``approve`` (``people``), may decide it."""
    if elsewhere(press, chats):
        return OTHER_CHAT
    if (
        isinstance(press, Press)
        and press.action in APPROVAL_ACTIONS
        and not may_decide(press.from_id, reviewers, people)
    ):
        return NOT_A_REVIEWER
    return None
