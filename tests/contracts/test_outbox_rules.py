"""The Telegram outbox's rules (contracts/outbox_rules.json) and keys (contracts/outbox_keys.json), as
cloud_functions/outboxRules.test.ts holds Convex's to them: the key each message is queued under, the
pacing (a pause between two messages, a round's size), how an edit is queued, the backoff by tries
failed, and a message that keeps failing given up after the contract's tries, against the fake Bot
API on 127.0.0.1 and a real alert store."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock
from contract import contract
from fake_telegram import FakeTelegram

from daemon.alerts.messages import Message
from daemon.alerts.outbox_keys import (
    alert_key,
    approval_edit_key,
    approval_key,
    chat_key,
    digest_key,
    digest_sent_key,
)
from daemon.alerts.store import PER_CHAT_PAUSE_MS, ROUND_SIZE, AlertStore, Queued
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
    "in a chat": lambda c: chat_key(c["of"], c["chat"]),
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


def test_messages_go_a_pause_apart_a_round_at_a_time(tmp_path: Path, tg: FakeTelegram) -> None:
    """A round hands out the contract's round size and waits the contract's pause between two
    messages; the next round waits it too before its first (the last message just went)."""
    assert (RULES["per_chat_pause_ms"], RULES["round_size"]) == (PER_CHAT_PAUSE_MS, ROUND_SIZE)
    clock = FakeClock()
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    for n in range(RULES["round_size"] + 2):
        store.enqueue(Queued(f"m{n}", Message(f"message {n}"), "critical"))
    waits: list[float] = []

    def pause(seconds: float) -> bool:
        waits.append(seconds)
        clock.now += seconds
        return True

    with BotApi(TOKEN, tg.api_base) as bot:
        assert deliver(store, bot, CHAT, pause=pause).sent == RULES["round_size"]
        assert waits == [RULES["per_chat_pause_ms"] / 1000] * (RULES["round_size"] - 1)
        clock.now += 0.25  # the next round comes at once: it waits out the rest of the pause
        assert deliver(store, bot, CHAT, pause=pause).sent == 2
        assert waits[RULES["round_size"] - 1 :] == [0.75, RULES["per_chat_pause_ms"] / 1000]
        clock.now += 5
        store.enqueue(Queued("later", Message("later"), "critical"))
        assert deliver(store, bot, CHAT, pause=pause).sent == 1  # long after the last: no wait
    assert len(waits) == RULES["round_size"] + 1
    assert len(tg.messages()) == RULES["round_size"] + 3


def test_two_senders_messages_are_paced_together(tmp_path: Path) -> None:
    """Every site's daemon sends the hub's outbox: a round one of them claims goes after the rounds
    claimed before it, a pause apart, whoever sends it."""
    clock = FakeClock()
    first, second = AlertStore(tmp_path / "alerts.db", clock=clock), AlertStore(tmp_path / "alerts.db", clock=clock)
    for n in range(5):
        first.enqueue(Queued(f"m{n}", Message(f"message {n}"), "critical"))
    now = first.now_ms()
    pause = RULES["per_chat_pause_ms"]
    assert [o.send_at - now for o in first.claim_due("a", 3)] == [0, pause, 2 * pause]
    assert [o.send_at - now for o in second.claim_due("b")] == [3 * pause, 4 * pause]
    clock.now += 60
    first.enqueue(Queued("later", Message("later"), "critical"))
    assert [o.send_at for o in second.claim_due("b")] == [first.now_ms()]  # long after the last: at once


@pytest.mark.parametrize("case", RULES["edits"], ids=[c["name"] for c in RULES["edits"]])
def test_an_edit_is_queued_as_the_contract_says(case: dict[str, Any], tmp_path: Path, tg: FakeTelegram) -> None:
    clock = FakeClock()
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    with BotApi(TOKEN, tg.api_base) as bot:
        for index, step in enumerate(case["steps"]):
            if "queue" in step:
                queued = store.enqueue(Queued(step["queue"], Message(step["text"]), "critical", chat=step.get("chat")))
            elif "edit" in step:
                queued = store.enqueue(Queued(step["edit"], Message(step["text"]), "critical", edits=step["of"]))
            elif "wait_ms" in step:
                clock.now += step["wait_ms"] / 1000
                continue
            else:
                tg.fail_next(step.get("fail", 0), status=503)
                deliver(store, bot, CHAT, pause=never_stop)
                continue
            assert queued == step.get("queued", True), f"step {index}: {step}"
    assert [[c.method, c.body["text"]] for c in tg.sent if c.ok] == case["telegram"]
    if "chats" in case:
        assert [str(c.body["chat_id"]) for c in tg.sent if c.ok] == [
            CHAT if c == "default" else c for c in case["chats"]
        ]


def test_each_chat_is_paced_on_its_own(tmp_path: Path) -> None:
    clock = FakeClock()
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    for queued in RULES["two_chats"]["queue"]:
        store.enqueue(Queued(queued["key"], Message(queued["key"]), "critical", chat=queued.get("chat")))
    now = store.now_ms()
    handed = store.claim_due("a")
    assert {o.key: o.send_at - now for o in handed} == RULES["two_chats"]["moments_ms"]
    assert [o.send_at for o in handed] == sorted(o.send_at for o in handed)


def test_an_outbox_written_before_collaborators_reads_on(tmp_path: Path) -> None:
    """An alerts file of the schema before ``chat``: its rows are the default chat's, and an edit
    of a message queued then still edits it, in the default chat."""
    path = tmp_path / "alerts.db"
    with closing(sqlite3.connect(path)) as old, old:
        old.execute(
            "CREATE TABLE outbox (id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, kind TEXT NOT NULL,"
            " text TEXT NOT NULL, buttons TEXT NOT NULL, ref_key TEXT, severity TEXT NOT NULL,"
            " not_before INTEGER NOT NULL, created_at INTEGER NOT NULL, claimed_until INTEGER, sent_at INTEGER,"
            " message_id INTEGER, attempts INTEGER NOT NULL DEFAULT 0, last_error TEXT)"
        )
        old.execute(
            "INSERT INTO outbox (key, kind, text, buttons, severity, not_before, created_at, sent_at, message_id)"
            " VALUES ('approval:7', 'send', 'approve?', '[]', 'critical', 0, 0, 1, 5)"
        )
    store = AlertStore(path)
    assert store.enqueue(Queued("approval:7:approved", Message("approved"), "critical", edits="approval:7"))
    assert [(o.key, o.chat, o.ref_message_id) for o in store.claim_due("a")] == [("approval:7:approved", None, 5)]
