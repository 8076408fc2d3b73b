"""Sending the outbox (``daemon/alerts/store.py``): claim what is due, send or edit it, mark it.

Telegram's limits and failures, each handled once here: about one message a second per chat (each
message waits for its moment, a pause after the one handed out before it to its chat by any sender:
``AlertStore.claim_due``; contracts/outbox_rules.json, as Convex's deliver paces); a 429 holds the
message for the ``retry_after`` Telegram gives and ends the round (everything else waits too); an
unreachable or failing API holds it with the project's backoff (``sync.resilience.retry.RetryPolicy``), and
gives it up after ``MAX_ATTEMPTS`` tries; a request Telegram will never take is given up and
recorded; a refused token is the caller's to report (only a person can fix it).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

import structlog

from daemon.alerts.store import ROUND_SIZE, AlertStore, Outgoing
from daemon.telegram.client import BotApi
from sync.errors import TelegramAuthError, TelegramUnavailable
from sync.resilience.retry import RetryPolicy

log = structlog.get_logger("memsync.telegram")
# Backoff for one message: 2 s doubling to 5 minutes, as the backbone's retries.
BACKOFF: Final = RetryPolicy(initial=2.0, maximum=300.0, jitter=1.0)
# A message Telegram keeps failing (5xx, no answer) is given up after this many tries (about 2 h),
# as on Convex (contracts/outbox_rules.json); a 429's wait is Telegram's pacing, not a failure.
MAX_ATTEMPTS: Final = 30


@dataclass(frozen=True, slots=True)
class Round:
    sent: int
    held: str | None  # why the rest waits (Telegram unreachable or rate-limiting), if it does


def deliver(
    store: AlertStore,
    bot: BotApi,
    chat_id: str,
    *,
    pause: Callable[[float], bool],
    limit: int = ROUND_SIZE,
) -> Round:
    """One round: up to ``limit`` due messages, each sent at its moment (``Outgoing.send_at``: a
    second apart in its chat) to its chat (``chat_id``, the default chat, or a collaborator's).
    ``pause(seconds)`` waits for it and returns False when the daemon is stopping (the rest stays
    queued). Raises TelegramAuthError."""
    items = store.claim_due("sender", limit)
    sent = 0
    for index, item in enumerate(items):
        wait = (item.send_at - store.now_ms()) / 1000
        if wait > 0 and not pause(wait):
            _release(store, items[index:])
            break
        try:
            _send(bot, chat_id, item, store)
            sent += 1
        except TelegramUnavailable as exc:
            if exc.retry_after is not None:
                # Telegram's limit is the chat's, not the message's: everything waits, and the wait
                # is not a failed try (it never brings the message nearer to being given up).
                store.pause(int(exc.retry_after * 1000))
                _release(store, items[index:])
            elif item.attempts + 1 >= MAX_ATTEMPTS:
                store.give_up(item, f"{exc}; gave up after {MAX_ATTEMPTS} tries")
                log.error("telegram kept failing a message; given up", key=item.key, error=str(exc))  # noqa: TRY400 - the reason, not a traceback
                _release(store, items[index + 1 :])
            else:
                wait = BACKOFF.backoff(item.attempts + 1, random.random())  # noqa: S311 - jitter, not a secret
                store.retry_later(item, int(wait * 1000), str(exc))
                _release(store, items[index + 1 :])
            return Round(sent, str(exc))
        except TelegramAuthError:
            _release(store, items[index:])
            raise
        except Exception as exc:  # noqa: BLE001 - a message Telegram will never take must not block the rest
            store.give_up(item, str(exc))
            log.error("telegram refused a message; it will not be retried", key=item.key, error=str(exc))  # noqa: TRY400 - the reason, not a traceback
    return Round(sent, None)


def _send(bot: BotApi, default_chat: str, item: Outgoing, store: AlertStore) -> None:
    # Each message to its own chat (a collaborator's, or the default chat), and each edit to its message's.
    chat_id = default_chat if item.chat is None else item.chat
    if item.kind == "edit":
        assert item.ref_message_id is not None  # claim_due hands out an edit only once its message was sent
        bot.edit_message_text(chat_id, item.ref_message_id, item.text, item.buttons or None)
        store.mark_sent(item, item.ref_message_id)
        return
    store.mark_sent(item, bot.send_message(chat_id, item.text, item.buttons or None))


def _release(store: AlertStore, items: Sequence[Outgoing]) -> None:
    for item in items:
        store.release(item)


def send_now(store: AlertStore, token: str, api_base: str, chat_id: str) -> Round:
    """One round from a command (``approval request``, ``digest --send``): what it queued goes now
    rather than at the daemon's next round. Claims make this safe beside a running daemon."""

    def pause(seconds: float) -> bool:
        time.sleep(seconds)
        return True

    with BotApi(token, api_base) as bot:
        return deliver(store, bot, chat_id, pause=pause)
