"""The keys the Telegram outbox queues each message under (``cloud_functions/lib/outboxKeys.ts``;
contracts/outbox_keys.json). A key is unique in the outbox: the same decision taken twice (a
transaction retried, a job's slot run again after a takeover) queues its message once, and an
edit names the message it edits by its key. Pure."""

from __future__ import annotations


def alert_key(subject_key: str, kind: str, spell: int, reminders: int) -> str:
    """A notice of an alert (``subject_key``: ``signal:subject``). A spell is named by when it
    went down (a recovery's, by the spell it ends); a reminder's count tells its reminders apart."""
    nth = f":{reminders}" if kind == "reminder" else ""
    return f"alert:{subject_key}:{spell}:{kind}{nth}"


def approval_key(approval_id: str) -> str:
    """An approval's announcement, with its buttons: the message its edits edit."""
    return f"approval:{approval_id}"


def approval_edit_key(approval_id: str, status: str, defer_count: int) -> str:
    """An edit of an approval's announcement: one per deferral while it is pending, one when it is
    decided or expires."""
    if status == "pending":
        return f"approval:{approval_id}:deferred:{defer_count}"
    return f"approval:{approval_id}:{status}"


def digest_key(day: str) -> str:
    """The daily digest of a UTC day: once, however often the day's job runs."""
    return f"digest:{day}"


def digest_sent_key(day: str, at_ms: int) -> str:
    """A digest a person asked for (``memsync digest --send``): each time they ask."""
    return f"digest:{day}:sent:{at_ms}"


def chat_key(key: str, chat: str | None) -> str:
    """The outbox key of message ``key`` in one chat: as is in the default chat (None: the key
    every message had before collaborators, so an outbox written then reads on), ``key@chat`` in a
    collaborator's. One message to two chats is two rows, each sent and edited in its own chat."""
    return key if chat is None else f"{key}@{chat}"
