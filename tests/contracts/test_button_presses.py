"""What a button press asks (contracts/button_presses.json): its callback data read as an action
and a target, or refused, as cloud_functions/lib/buttonPresses.ts's parseButton reads it; who may
press what (its reviewerRefusal); how long snooze and mute hold an alert."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract

from daemon.telegram.callbacks import APPROVAL_ACTIONS, HOLD_MS, Action, Press, parse, refusal

PRESSES: dict[str, Any] = contract("button_presses.json")


def pressed(data: str) -> dict[str, Any]:
    """A Telegram update: Ada pressed a button carrying ``data`` under message 7 of chat -100."""
    return {
        "update_id": 1,
        "callback_query": {
            "id": "cb1",
            "data": data,
            "from": {"id": 42, "first_name": "Ada"},
            "message": {"message_id": 7, "chat": {"id": -100}},
        },
    }


@pytest.mark.parametrize("case", PRESSES["cases"], ids=[repr(c["data"]) for c in PRESSES["cases"]])
def test_the_data_asks_what_the_contract_says(case: dict[str, Any]) -> None:
    press = parse(pressed(case["data"]))
    if case["action"] is None:
        assert press is None
    else:
        assert press is not None
        assert (Action(press.action).name.lower(), press.target) == (case["action"], case["target"])


def test_the_actions_their_codes_and_holds() -> None:
    actions = PRESSES["actions"]
    assert {a.value: a.name.lower() for a in Action} == {code: a["action"] for code, a in actions.items()}
    assert {a.value for a in APPROVAL_ACTIONS} == {code for code, a in actions.items() if a["reviewers_only"]}
    assert {a.value: ms for a, ms in HOLD_MS.items()} == {
        code: a["hold_ms"] for code, a in actions.items() if "hold_ms" in a
    }


@pytest.mark.parametrize("code", list(PRESSES["actions"]))
def test_only_reviewers_decide_approvals(code: str) -> None:
    press = Press("cb1", Action(code), "k1", from_id="42", from_name="Ada", message_id=7)
    expected = PRESSES["not_a_reviewer"] if PRESSES["actions"][code]["reviewers_only"] else None
    assert refusal(press, reviewers=("7",)) == expected
    assert refusal(press, reviewers=("42",)) is None


def test_a_collaborator_with_approve_decides_and_presses_count_in_memsyncs_chats_only() -> None:
    from daemon.config import Collaborator
    from daemon.routing import own_chats

    people = [
        Collaborator(name="ada", chat_id="111", permissions=["approve"]),
        Collaborator(name="cy", chat_id="333"),
        Collaborator(name="team", chat_id="-100444", permissions=["approve"]),
    ]
    chats = own_chats("-100", people)

    def press(from_id: int, chat: int) -> Press:
        update = pressed("a:k1")
        update["callback_query"]["from"]["id"] = from_id
        update["callback_query"]["message"]["chat"]["id"] = chat
        found = parse(update)
        assert found is not None
        return found

    assert refusal(press(111, 111), ("42",), chats, people) is None  # in her own chat
    assert refusal(press(111, -100), ("42",), chats, people) is None  # in the default chat
    assert refusal(press(333, 333), ("42",), chats, people) == PRESSES["not_a_reviewer"]  # no approve
    assert refusal(press(444, -100444), ("42",), chats, people) == PRESSES["not_a_reviewer"]  # a group is nobody
    assert refusal(press(111, -555), ("42",), chats, people) == "This chat does not decide memsync's approvals."
