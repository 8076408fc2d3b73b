"""Who hears what: the chats a Telegram message goes to, and who may decide an approval. Pure.

memsync speaks in the default chat (``[telegram] chat_id``: everything, as it always has) and in
each collaborator's own chat (``[[collaborators]]``), which hears what its ``notify_on`` names:

- an alert kind, by its signal's name (``offline``, ``silent``, ... ``daemon/alerts/policy/signal_names.py``), or
  ``alerts`` for every kind;
- an approval category, as ``approval:<category>`` (the policy's categories, ``sync/policy/approvals.py``),
  or ``approvals`` for every approval, whatever its category (one outside the policy's table too);
- ``digest``: the morning digest.

Nothing more: a chat hears nothing it did not name. Who may approve, reject or defer an approval:
the reviewers the approval lists (``[telegram] reviewers``, bare user ids), and every collaborator
with the ``approve`` permission, known by their Telegram user id (``user_id``; a private chat's id
is its person's, so it stands in for it). ``cloud_functions/lib/routing.ts`` says the same on
Convex; contracts/notify_routing.json holds both to the same answers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final, Literal, Protocol

from daemon.alerts.policy.signal_names import SIGNAL_NAMES
from sync.policy.approvals import APPROVAL_TIMEOUTS_MS

Kind = Literal["alert", "approval", "digest"]
APPROVE: Final = "approve"
PERMISSIONS: Final = (APPROVE,)
EVERY_ALERT: Final = "alerts"
EVERY_APPROVAL: Final = "approvals"
DIGEST: Final = "digest"
APPROVAL_PREFIX: Final = "approval:"
# Every name notify_on may hold, in the order the refusal lists them.
NOTIFY_NAMES: Final = (
    EVERY_ALERT,
    *SIGNAL_NAMES,
    EVERY_APPROVAL,
    *(f"{APPROVAL_PREFIX}{category}" for category in APPROVAL_TIMEOUTS_MS),
    DIGEST,
)


class Listener(Protocol):
    """A collaborator as routing sees them: their chat and what it hears."""

    @property
    def chat_id(self) -> str: ...
    @property
    def notify_on(self) -> Sequence[str]: ...


class Approver(Protocol):
    """A collaborator as a button press sees them: who they are on Telegram and what they may do."""

    @property
    def presser_id(self) -> str | None: ...
    @property
    def permissions(self) -> Sequence[str]: ...


def notify_refusal(name: str) -> str | None:
    """The sentence refusing a notify_on name memsync does not know, or None."""
    if name in NOTIFY_NAMES:
        return None
    return f"notify_on has no name {name!r} (names: {', '.join(NOTIFY_NAMES)})"


def permission_refusal(name: str) -> str | None:
    """The sentence refusing a permission memsync does not know, or None."""
    if name in PERMISSIONS:
        return None
    return f"permissions has no name {name!r} (names: {', '.join(PERMISSIONS)})"


def wants(notify_on: Iterable[str], kind: Kind, name: str | None) -> bool:
    """Does a chat whose notify_on is this hear a message of ``kind`` (about signal or category ``name``)?"""
    asked = set(notify_on)
    if kind == "alert":
        return EVERY_ALERT in asked or name in asked
    if kind == "approval":
        return EVERY_APPROVAL in asked or f"{APPROVAL_PREFIX}{name}" in asked
    return DIGEST in asked


def chats_for(kind: Kind, name: str | None, default_chat: str | None, people: Iterable[Listener]) -> tuple[str, ...]:
    """The chats a message goes to: the default chat (if any) first, then each collaborator's chat
    that asked for it, in the order they are listed, each chat once."""
    chats: list[str] = [] if default_chat is None else [default_chat]
    for person in people:
        if person.chat_id not in chats and wants(person.notify_on, kind, name):
            chats.append(person.chat_id)
    return tuple(chats)


def own_chats(default_chat: str | None, people: Iterable[Listener]) -> frozenset[str]:
    """The chats memsync speaks in: a press in any other is refused, whatever it asks."""
    return frozenset(([] if default_chat is None else [default_chat]) + [p.chat_id for p in people])


def presser_id(chat_id: str, user_id: str | None) -> str | None:
    """Who a collaborator is on Telegram: their user id, or their chat's when it is a private chat
    (a positive id: a group's is negative, and is nobody's); None when neither says."""
    if user_id is not None:
        return user_id
    return chat_id if chat_id.isdigit() else None


def may_decide(from_id: str, reviewers: Iterable[str], people: Iterable[Approver]) -> bool:
    """May the presser ``from_id`` approve, reject or defer an approval that lists ``reviewers``?"""
    if from_id in set(reviewers):
        return True
    return any(p.presser_id == from_id and APPROVE in p.permissions for p in people)
