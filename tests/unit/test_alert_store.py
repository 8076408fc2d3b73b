"""The alerts' store and the Telegram sender against a fake Bot API on 127.0.0.1: alerts decided
once and queued with their state, quiet hours, 429 and outages, claims between two senders, edits
after the message they edit, and button presses applied once."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import FakeClock, write_config
from fake_telegram import FakeTelegram

from daemon.alerts.machine import Observation
from daemon.alerts.messages import Message, alert_id
from daemon.alerts.signals import Subject
from daemon.alerts.store import AlertStore, Queued
from daemon.alerts.watch import Alerts
from daemon.config import Settings, load_settings
from daemon.hubserver.telegram import apply, reconcile, track
from daemon.telegram.callbacks import parse
from daemon.telegram.client import BotApi
from daemon.telegram.sender import deliver
from sync.backbone.hub import HubBackbone

TOKEN = "123456:TEST-token_abc"
CHAT = "-1001"


@pytest.fixture
def tg() -> Iterator[FakeTelegram]:
    with FakeTelegram(token=TOKEN) as fake:
        yield fake


@pytest.fixture
def settings(tmp_path: Path, tg: FakeTelegram, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Settings]:
    monkeypatch.setenv("MEMSYNC_TELEGRAM__BOT_TOKEN", TOKEN)

    def make(extra: str = "") -> Settings:
        site = write_config(
            tmp_path / "site",
            "laptop",
            tmp_path / "a.db",
            tmp_path / "hub.db",
            extra=f'[telegram]\nchat_id = "{CHAT}"\napi_base = "{tg.api_base}"\nreviewers = [42]\n{extra}',
        )
        return load_settings(site.config)

    return make


def never_stop(_seconds: float) -> bool:
    return True


def test_an_alert_is_decided_once_and_queued_with_its_state(tmp_path: Path, settings: Callable[..., Settings]) -> None:
    clock = FakeClock()
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    alerts = Alerts(settings(), store)
    vm = Subject("offline", "vm")
    now = store.now_ms()
    said = alerts.observe({vm: Observation(True, now, "daemon silent for 3 min")})
    assert [(s.key, n.kind) for s, n in said] == [("offline:vm", "down")]
    assert alerts.observe({vm: Observation(True, now + 1000, "daemon silent")}) == []  # still down: nothing new
    # A second store on the same file (another site's daemon) sees the same state: no second alert.
    other = Alerts(settings(), AlertStore(tmp_path / "alerts.db", clock=clock))
    assert other.observe({vm: Observation(True, now + 2000, "daemon silent")}) == []
    assert store.waiting() == 1
    assert other.observe({vm: Observation(False, now + 60_000, "daemon is back")})[0][1].kind == "recovered"
    assert store.waiting() == 2
    alerts.observe(
        {Subject("expiring", "7"): Observation(False, now, ""), Subject("expiring", "8"): Observation(False, now, "")}
    )
    assert store.drop_machines("expiring", {"8"}) == 1
    assert (store.machine("expiring:7"), store.machine("expiring:8") is not None) == (None, True)
    assert store.machine("offline:vm") is not None


def test_quiet_hours_hold_a_warning_and_let_a_critical_through(
    tmp_path: Path, settings: Callable[..., Settings], tg: FakeTelegram
) -> None:
    clock = FakeClock(1_800_000_000.0)  # 2027-01-15 08:00 UTC
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    alerts = Alerts(settings('quiet_hours = "07:00-09:00"'), store)
    now = store.now_ms()
    alerts.observe(
        {
            Subject("offline", "vm"): Observation(True, now, "daemon silent for 3 min"),  # critical
            Subject("silent", "vm"): Observation(True, now, "has not synced for 1 h"),  # warning
        }
    )
    with BotApi(TOKEN, tg.api_base) as bot:
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 1
        assert [m["text"] for m in tg.messages()] == ["🔴 vm daemon silent for 3 min"]
        clock.now += 3600  # 09:00: the quiet hours are over
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 1
    assert [m["text"] for m in tg.messages()][1] == "🟠 vm has not synced for 1 h"


def test_429_and_an_outage_delay_messages_and_each_goes_once(tmp_path: Path, tg: FakeTelegram) -> None:
    clock = FakeClock()
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    for n in range(3):
        store.enqueue(Queued(f"m{n}", Message(f"message {n}")))
    pauses: list[float] = []

    def pause(seconds: float) -> bool:
        pauses.append(seconds)
        clock.now += seconds
        return True

    with BotApi(TOKEN, tg.api_base) as bot:
        tg.fail_next(1, status=429, retry_after=7)
        held = deliver(store, bot, CHAT, pause=pause)
        assert held.sent == 0
        assert held.held is not None
        assert "retry" in held.held.lower()
        clock.now += 6
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 0  # Telegram asked the chat to wait 7 s
        clock.now += 1
        assert deliver(store, bot, CHAT, pause=pause).sent == 3
        store.enqueue(Queued("m3", Message("message 3")))
        tg.down()
        assert deliver(store, bot, CHAT, pause=never_stop).held is not None
        tg.up()
        clock.now += 300  # past the backoff
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 1
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 0
    assert sorted(m["text"] for m in tg.messages()) == ["message 0", "message 1", "message 2", "message 3"]
    assert pauses == [1.0, 1.0]  # about one message a second to a chat


def test_a_message_telegram_will_never_take_is_given_up_and_the_rest_go(tmp_path: Path, tg: FakeTelegram) -> None:
    store = AlertStore(tmp_path / "alerts.db")
    store.enqueue(Queued("bad", Message("refused")))
    store.enqueue(Queued("good", Message("fine")))
    with BotApi(TOKEN, tg.api_base) as bot:
        tg.fail_next(1, status=400, description="Bad Request: chat not found")
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 1
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 0
    assert [m["text"] for m in tg.messages()] == ["fine"]
    assert store.waiting() == 0


def test_two_senders_claim_each_message_once(tmp_path: Path, tg: FakeTelegram) -> None:
    first, second = AlertStore(tmp_path / "alerts.db"), AlertStore(tmp_path / "alerts.db")
    for n in range(6):
        first.enqueue(Queued(f"m{n}", Message(f"message {n}")))
    claimed = first.claim_due("a", 3)
    assert [o.key for o in second.claim_due("b", 10)] == ["m3", "m4", "m5"]
    assert second.claim_due("b", 10) == []
    for item in claimed:
        first.release(item)
    with BotApi(TOKEN, tg.api_base) as bot:
        assert deliver(second, bot, CHAT, pause=never_stop).sent == 3
    assert first.claim_due("a", 10) == []  # m3..m5 are still claimed by "b"'s round that never sent them


def test_an_edit_waits_for_the_message_it_edits_while_a_sender_is_on_it(tmp_path: Path, tg: FakeTelegram) -> None:
    store = AlertStore(tmp_path / "alerts.db")
    # Nothing to edit yet: not queued.
    assert not store.enqueue(Queued("approval:1:approved", Message("✅ Approved"), edits="approval:1"))
    store.enqueue(Queued("approval:1", Message("🟡 Approval needed")))
    (claimed,) = store.claim_due("a")  # a sender is on it: the message goes as it was
    assert store.enqueue(Queued("approval:1:approved", Message("✅ Approved"), edits="approval:1"))
    assert store.claim_due("b") == []  # the edit waits for its message
    store.release(claimed)
    with BotApi(TOKEN, tg.api_base) as bot:
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 1
        assert deliver(store, bot, CHAT, pause=never_stop).sent == 1
    (sent,) = tg.messages()
    assert tg.edits()[0]["text"] == "✅ Approved"
    assert tg.edits()[0]["message_id"] == store.message_id("approval:1")
    assert sent["text"] == "🟡 Approval needed"


def test_presses_decide_an_approval_once_and_only_for_its_reviewers(
    tmp_path: Path, settings: Callable[..., Settings], tg: FakeTelegram
) -> None:
    store = AlertStore(tmp_path / "alerts.db")
    hub = HubBackbone(tmp_path / "hub.db", "laptop")
    try:
        asked = hub.create_approval(
            agent_name="coder",
            action_type="financial",
            priority="high",
            reviewers=["42"],
            expires_at=store.now_ms() + 3_600_000,
            summary="pay the invoice",
        )
        store.enqueue(Queued(f"approval:{asked}", Message("🟡 pay the invoice")))
        track(store, asked)

        def press(data: str, who: int) -> str:
            found = parse({"callback_query": {"id": "q", "from": {"id": who, "first_name": "Ann"}, "data": data}})
            assert found is not None
            return apply(found, hub, store)

        assert press(f"a:{asked}", 7) == "You are not a reviewer of this approval."
        assert hub.approvals("pending")[0].approval_id == asked
        assert press(f"d:{asked}", 42).startswith("Deferred until")
        assert press(f"a:{asked}", 42) == "Approved."
        assert press(f"a:{asked}", 42) == f"Approval {asked} is already approved by Ann."  # a double tap
        assert press(f"r:{asked}", 42) == f"Approval {asked} is already approved by Ann."
        assert hub.approvals("approved")[0].resolved_by == "Ann"
        with BotApi(TOKEN, tg.api_base) as bot:
            while deliver(store, bot, CHAT, pause=never_stop).sent:
                pass
        # Decided before its message went: the message goes once, as it now reads, and no edit.
        (sent,) = tg.messages()
        assert sent["text"].splitlines()[0].startswith("✅ Approved by Ann at ")
        assert tg.edits() == []
        assert reconcile(hub, store) == 0  # nothing left to follow
    finally:
        hub.close()


def test_snooze_and_mute_hold_an_alert_by_its_id(tmp_path: Path, settings: Callable[..., Settings]) -> None:
    clock = FakeClock()
    store = AlertStore(tmp_path / "alerts.db", clock=clock)
    alerts = Alerts(settings(), store)
    vm = Subject("offline", "vm")
    alerts.observe({vm: Observation(True, store.now_ms(), "daemon silent")})
    snoozing = parse({"callback_query": {"id": "q", "from": {"id": 5}, "data": f"s:{alert_id(vm.key)}"}})
    assert snoozing is not None
    hub = HubBackbone(tmp_path / "hub.db", "laptop")
    try:
        assert apply(snoozing, hub, store).startswith("Snoozed until")
        state = store.machine(vm.key)
        assert state is not None
        assert state.snoozed_until == store.now_ms() + 3_600_000
        clock.now += 3600  # the first reminder is due, but the snooze holds it until it ends
        assert alerts.observe({vm: Observation(True, store.now_ms() - 1, "daemon silent")}) == []
        assert [n.kind for _, n in alerts.observe({vm: Observation(True, store.now_ms(), "daemon silent")})] == [
            "reminder"
        ]
        unknown = parse({"callback_query": {"id": "q", "from": {"id": 5}, "data": "m:0000000000000000"}})
        assert unknown is not None
        assert apply(unknown, hub, store) == "This alert is no longer known."
    finally:
        hub.close()
