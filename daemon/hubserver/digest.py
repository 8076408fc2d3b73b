"""Sending a digest on demand on the embedded hub (``cloud_functions/digest.ts``'s ``send`` on
Convex): through the site's outbox, sent at once when Telegram takes it, else by the daemon."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from daemon.config import Settings


def send(settings: Settings, day: str, digest: dict[str, Any]) -> str:
    """Send ``digest`` (of ``day``) now; a sentence saying whether Telegram took it."""
    from daemon.alerts.messages import digest_message
    from daemon.alerts.outbox_keys import digest_sent_key
    from daemon.alerts.store import AlertStore, Queued
    from daemon.alerts.watch import outbox_chats
    from daemon.telegram.sender import send_now

    telegram = settings.telegram
    assert telegram.bot_token is not None
    assert telegram.chat_id is not None
    store = AlertStore(settings.alerts_path)
    try:
        key = digest_sent_key(day, store.now_ms())
        for chat in outbox_chats(settings, "digest", None):
            store.enqueue(Queued(key, digest_message(digest), chat=chat))
        done = send_now(store, telegram.bot_token.get_secret_value(), telegram.api_base, telegram.chat_id)
    finally:
        store.close()
    if done.held is not None:
        return f"digest for {day} queued; Telegram did not take it yet ({done.held}): the daemon will send it"
    return f"digest for {day} sent to Telegram"
