"""The Telegram outbox's rules (contracts/outbox_rules.json) and keys (contracts/outbox_keys.json), as
cloud_functions/outboxRules.test.ts holds Convex's to them: the key each message is queued under, the
backoff by tries failed, and a message that keeps failing given up after the contract's tries, against
the fake Bot API on 127.0.0.1 and a real alert store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock
from contract import contract
from fake_telegram import FakeTelegram

from daemon.alerts.messages import Message
from daemon.alerts.outbox_keys import alert_key, approval_edit_key, approval_key, digest_key, digest_sent_key
from daemon.alerts.store import AlertStore, Queued
from daemon.telegram.client import BotApi
from daemon.telegram.sender import BACKOFF, MAX_ATTEMPTS, deliver

RULES: dict[str, Any] = contract("outbox_rules.json")
KEYS: list[dict[str, Any]] = contract("outbox_keys.json")["cases"]
TOKEN = "123456:TEST-token_abc"
CHAT = "-1001"


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    with FakeTelegram(token=TOKEN) as fake:
        yield fake


def never_stop(_seconds: float) -> bool:
    return True


KEYED: dict[str, Callable[[dict[str, Any]], str]] = {
    "alert": lambda c: alert_key(c["subject"], c["kind"], c["spell"], c["reminders"]),
    "approval": lambda c: approval_key(c["approval"]),
    "approval edit": lambda c: approval_edit_key(c["approval"], c["status"], c["defer_count"]),
    "digest": lambda c: digest_key(c["day"]),
    "digest asked for": lambda c: digest_sent_key(c["day"], c["at"]),
}


@pytest.mark.parametrize("case", KEYS, ids=[c["key"] for c in KEYS])
def test_each_message_is_queued_under_the_contract_s_key(case: dict[str, Any]) -> None:
    assert KEYED[case["message"]](case) == case["key"]


def test_every_message_of_the_outbox_has_key_cases() -> None:
    assert {c["message"] for c in KEYS} == set(KEYED)


@pytest.mark.parametrize("case", RULES["backoff_ms"], ids=[f"{c['tries']} tries" for c in RULES["backoff_ms"]])
def test_a_failed_message_waits_the_contract_s_backoff(case: dict[str, Any]) -> None:
    assert round(BACKOFF.backoff(case["tries"], 0.0) * 1000) == case["wait_ms"]
    assert round(BACKOFF.backoff(case["tries"], 0.999999) * 1000) == case["wait_ms"] + RULES["hub_jitter_ms"]


def test_a_message_telegram_keeps_failing_is_given_up_after_the_contract_s_tries(
    tmp_path: Path, tg: FakeTelegram
) -> None:
    assert RULES["max_attempts"] == MAX_ATTEMPTS
    clock = FakeClock()
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    store.enqueue(Queued("doomed", Message("never through")))
    with BotApi(TOKEN, tg.api_base) as bot:
        tg.fail_next(1, status=429, retry_after=5)  # Telegram's pacing: not a try that counts
        assert deliver(store, bot, CHAT, pause=never_stop).held is not None
        for _ in range(RULES["max_attempts"] - 1):
            clock.now += 301  # past the longest backoff and its jitter
            tg.fail_next(1, status=503)
            assert deliver(store, bot, CHAT, pause=never_stop).held is not None
            assert store.waiting() == 1
        clock.now += 301
        tg.fail_next(1, status=503)
        deliver(store, bot, CHAT, pause=never_stop)
        assert store.waiting() == 0  # given up: recorded, never sent, never retried
        clock.now += 301
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 0
    assert tg.messages() == []
