"""The alerts' pure core from tables: the machine (the case table Convex's copy also runs), quiet
hours, what is observed of the fleet, what messages say, and what a button press may do."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from contract import contract

from daemon.alerts.machine import REMINDERS_MS, AlertState, Notice, Observation, SignalSpec, mute, snooze, step
from daemon.alerts.messages import alert_id, approval_outcome, notice_message
from daemon.alerts.signals import SIGNALS, Subject, observe_approvals, observe_sites, severity_of
from daemon.counts import counted
from daemon.telegram.callbacks import Action, parse, refusal
from sync.backbone.base import Approval, SiteState

CASES = contract("alert_cases.json")["cases"]
MESSAGES = contract("alert_messages.json")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_machine_gives_the_shared_answers(case: dict[str, Any]) -> None:
    raw = case["spec"]
    spec = SignalSpec(
        "x",
        raw["severity"],
        raw["graceMs"],
        raw["badCount"],
        tuple(raw.get("remindersMs", REMINDERS_MS)),
        raw.get("recovery", True),
    )
    state: AlertState | None = None
    for index, s in enumerate(case["steps"]):
        if "snooze" in s or "mute" in s:
            base = state if state is not None else AlertState(since=s["at"])
            state = snooze(base, s["snooze"]) if "snooze" in s else mute(base, s["mute"])
            continue
        state, notices = step(spec, state, Observation(s["bad"], s["at"], "", s.get("value"), s.get("badSince")))
        got = [
            {"kind": n.kind, "downForMs": n.down_for_ms, **({"caughtUp": n.caught_up} if n.kind == "recovered" else {})}
            for n in notices
        ]
        assert got == s["expect"], f"step {index}: {s}"
        assert all(n.severity == raw["severity"] for n in notices)


def _utc(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def _site(name: str, **changes: Any) -> SiteState:
    base: dict[str, Any] = {
        "site": name,
        "last_heartbeat": 1_000,
        "online": True,
        "version": "0.1.0",
        "host": "h",
        "pid": 1,
        "lag_s": 0.0,
        "backlog": 0,
        "index_state": "ok",
        "cursor": 10,
        "last_sync_at": 1_000,
        "quarantined": 0,
        "conflicts": 0,
        "health": "up",
        "total_synced": 10,
    }
    return SiteState(**{**base, **changes})


def test_the_fleet_is_observed_from_the_registry() -> None:
    now = 3_601_000
    seen = observe_sites(
        [
            _site("vm", online=False, health="down", quarantined=3, index_state="paused"),
            _site("fresh", last_heartbeat=None, health=None),  # never heartbeated, never judged
            _site("laptop"),
            _site("idle", health="down"),  # no sync for an hour, but online with nothing to sync
            _site("stuck", health="down", backlog=40),  # online, 40 episodes waiting, none synced
        ],
        now,
    )
    bad = sorted(s.key for s, o in seen.items() if o.bad)
    assert bad == ["offline:vm", "paused:vm", "quarantine:vm", "silent:stuck", "silent:vm"]
    assert sorted(s.key for s in seen if s.subject == "fresh") == []
    assert seen[Subject("silent", "vm")].detail == "has not synced for 1 h"
    assert seen[Subject("silent", "vm")].value == 10.0  # what the recovery counts episodes from
    assert not seen[Subject("offline", "laptop")].bad


@pytest.mark.parametrize("case", MESSAGES["notices"], ids=[c["text"] for c in MESSAGES["notices"]])
def test_each_notice_says_the_shared_text(case: dict[str, Any]) -> None:
    raw = case["notice"]
    notice = Notice(raw["kind"], raw["severity"], raw["downForMs"], raw["detail"], raw["caughtUp"])
    assert notice_message(Subject(case["signal"], case["subject"]), notice).text == case["text"]


def _site_from_view(view: dict[str, Any]) -> SiteState:
    """A site as the shared table gives it (lib/fleet.ts's SiteView) as the hub gives it."""
    return _site(
        view["site"],
        total_synced=view["totalSynced"],
        health=view["health"],
        last_sync_at=view["lastSyncAt"],
        last_heartbeat=view["lastHeartbeat"],
        online=view["online"],
        backlog=view["backlog"],
        quarantined=view["quarantined"],
        index_state=view["indexState"],
    )


@pytest.mark.parametrize("case", MESSAGES["fleet"], ids=[c["name"] for c in MESSAGES["fleet"]])
def test_the_fleet_is_said_with_true_figures(case: dict[str, Any]) -> None:
    """From the registry to the text: durations count from when the signal went bad (the last
    sync, the last heartbeat), not from when the alert job first saw it."""
    states: dict[Subject, AlertState] = {}
    for index, s in enumerate(case["steps"]):
        seen = observe_sites([_site_from_view({**case["site"], **s.get("site", {})})], s["at"])
        said = []
        for subject in sorted(seen, key=lambda x: x.key):
            states[subject], notices = step(SIGNALS[subject.signal], states.get(subject), seen[subject])
            said += [
                {
                    "signal": subject.signal,
                    "kind": n.kind,
                    "downForMs": n.down_for_ms,
                    "text": notice_message(subject, n).text,
                }
                for n in notices
            ]
        assert said == s["expect"], f"step {index} at {s['at']}"


@pytest.mark.parametrize(("n", "said"), [(0, "0 episodes"), (1, "1 episode"), (2, "2 episodes"), (-1, "-1 episodes")])
def test_counts_are_said_in_the_right_number(n: int, said: str) -> None:
    assert counted(n, "episode") == said


def _approval(approval_id: str, expires_at: int, **changes: Any) -> Approval:
    base: dict[str, Any] = {
        "approval_id": approval_id,
        "agent_name": "coder",
        "action_type": "send_message",
        "status": "pending",
        "priority": "normal",
        "reviewers": ("42",),
        "expires_at": expires_at,
        "site": "laptop",
        "summary": "email the team",
        "created_at": 0,
    }
    return Approval(**{**base, **changes})


def test_an_unanswered_approval_is_said_before_it_expires() -> None:
    now = 1_000_000
    pending = [
        _approval("1", now + 5 * 60_000),
        _approval("2", now + 60 * 60_000),
        _approval("3", now, priority="critical"),
    ]
    seen = observe_approvals(pending, now, lead_ms=10 * 60_000)
    assert {s.subject: o.bad for s, o in seen.items()} == {"1": True, "2": False, "3": True}
    by_id = {a.approval_id: a for a in pending}
    assert severity_of(Subject("expiring", "1"), by_id) == "warning"
    assert severity_of(Subject("expiring", "3"), by_id) == "critical"
    assert "expires in 5 min, unanswered" in seen[Subject("expiring", "1")].detail


def test_messages_say_what_happened_with_their_buttons() -> None:
    subject = Subject("offline", "vm")
    down = notice_message(subject, Notice("down", "critical", 0, "daemon silent for 3 min"))
    assert down.text == "🔴 vm daemon silent for 3 min"
    ident = alert_id("offline:vm")
    assert [b.data for b in down.buttons[0]] == [f"s:{ident}", f"m:{ident}"]
    assert all(len(b.data.encode()) <= 64 for b in down.buttons[0])
    back = notice_message(subject, Notice("recovered", "critical", 7_500_000, "daemon is back", 42.0))
    assert back.text == "✅ vm recovered after 2 h 5 min, 42 episodes caught up"
    assert back.buttons == ()
    warning = notice_message(Subject("silent", "vm"), Notice("down", "warning", 0, "has not synced for 1 h"))
    assert warning.text.startswith("🟠 vm has not synced")
    reminder = notice_message(subject, Notice("reminder", "critical", 3_600_000, "daemon silent for 1 h"))
    assert reminder.text == "⏰ still: vm daemon silent for 1 h (down 1 h)"


def test_an_approvals_message_follows_its_outcome() -> None:
    asked = _approval("7", _utc("2026-11-24 15:00"), cost_usd=1.5, source_id="12")
    approved = approval_outcome(
        replace(asked, status="approved", resolved_by="Ann", resolved_at=_utc("2026-11-24 14:32"))
    )
    assert approved.text.splitlines()[0] == "✅ Approved by Ann at 14:32 UTC"
    assert "cost $1.50 · episode laptop:12 · expires 15:00 UTC" in approved.text
    assert approved.buttons == ()
    deferred = approval_outcome(asked)
    assert deferred.text.startswith("⏸ Deferred until 15:00 UTC")
    assert [b.data for b in deferred.buttons[0]] == ["a:7", "r:7", "d:7"]


def _press(data: str, from_id: int = 42) -> dict[str, Any]:
    return {
        "update_id": 1,
        "callback_query": {
            "id": "cb1",
            "from": {"id": from_id, "first_name": "Ann", "last_name": "Lee"},
            "data": data,
            "message": {"message_id": 9},
        },
    }


@pytest.mark.parametrize(
    ("data", "action", "target"),
    [
        ("a:17", Action.APPROVE, "17"),
        ("r:k57x", Action.REJECT, "k57x"),
        ("d:1", Action.DEFER, "1"),
        ("s:ab", Action.SNOOZE, "ab"),
    ],
)
def test_presses_are_read(data: str, action: Action, target: str) -> None:
    press = parse(_press(data))
    assert press is not None
    assert (press.action, press.target, press.from_id, press.from_name, press.message_id) == (
        action,
        target,
        "42",
        "Ann Lee",
        9,
    )


@pytest.mark.parametrize("update", [{"update_id": 1, "message": {"text": "hi"}}, _press("x:1"), _press("nocolon")])
def test_what_is_not_a_press_is_ignored(update: dict[str, Any]) -> None:
    assert parse(update) is None


def test_only_an_approvals_reviewers_may_decide_it_and_anyone_may_snooze() -> None:
    approve, snoozing = parse(_press("a:1", from_id=7)), parse(_press("s:ab", from_id=7))
    assert approve is not None
    assert snoozing is not None
    assert refusal(approve, ("42",)) == "You are not a reviewer of this approval."
    assert refusal(approve, ("7", "42")) is None
    assert refusal(snoozing, ()) is None


def test_presses_from_another_chat_are_refused() -> None:
    update = _press("s:ab")
    update["callback_query"]["message"]["chat"] = {"id": -555}
    press = parse(update)
    assert press is not None
    assert press.chat_id == "-555"
    assert refusal(press, (), "-1001") == "This chat does not decide memsync's approvals."
    assert refusal(press, (), "-555") is None
