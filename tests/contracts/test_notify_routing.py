"""Who hears what (contracts/notify_routing.json): the names a collaborator's notify_on may hold and
the sentence refusing any other, the chats each message goes to, and who may decide an approval,
as ``daemon/routing.py`` answers them (cloud_functions/notifyRouting.test.ts holds Convex's
lib/routing.ts to the same file); and ``[[collaborators]]`` in the config, checked by the same rules."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from contract import contract

from daemon.config import Collaborator, load_settings
from daemon.routing import (
    NOTIFY_NAMES,
    PERMISSIONS,
    chats_for,
    may_decide,
    notify_refusal,
    own_chats,
    permission_refusal,
)
from sync.errors import ConfigError

ROUTING: dict[str, Any] = contract("notify_routing.json")


def people(rows: list[dict[str, Any]]) -> list[Collaborator]:
    return [Collaborator(**row) for row in rows]


def test_the_vocabulary_is_the_contracts() -> None:
    assert list(NOTIFY_NAMES) == ROUTING["names"]
    assert list(PERMISSIONS) == ROUTING["permissions"]
    assert all(notify_refusal(name) is None for name in ROUTING["names"])
    assert all(permission_refusal(name) is None for name in ROUTING["permissions"])


@pytest.mark.parametrize("case", ROUTING["refusals"], ids=lambda c: c.get("notify_on") or c.get("permission"))
def test_a_wrong_name_is_one_sentence_naming_it_and_the_valid_ones(case: dict[str, Any]) -> None:
    if "notify_on" in case:
        assert notify_refusal(case["notify_on"]) == case["sentence"]
    else:
        assert permission_refusal(case["permission"]) == case["sentence"]


@pytest.mark.parametrize(
    "case", ROUTING["routes"], ids=lambda c: f"{c['kind']}:{c['name']}:{c.get('default_chat', 'default')}"
)
def test_each_message_goes_to_the_chats_that_asked_for_it(case: dict[str, Any]) -> None:
    default = case.get("default_chat", ROUTING["default_chat"])
    listed = people(case.get("collaborators", ROUTING["collaborators"]))
    assert list(chats_for(case["kind"], case["name"], default, listed)) == case["chats"]


@pytest.mark.parametrize("case", ROUTING["deciders"]["cases"], ids=lambda c: f"{c['from_id']}:{c['reviewers']}")
def test_reviewers_and_collaborators_with_approve_decide(case: dict[str, Any]) -> None:
    listed = people(ROUTING["deciders"]["collaborators"])
    assert may_decide(case["from_id"], case["reviewers"], listed) is case["may"]


def test_memsyncs_own_chats() -> None:
    deciders = ROUTING["deciders"]
    assert sorted(own_chats(deciders["default_chat"], people(deciders["collaborators"]))) == deciders["chats"]


MINIMAL = '[site]\nname = "laptop"\n[agentdb]\npath = "a.db"\n'


def test_collaborators_in_the_config(tmp_path: Path) -> None:
    config = tmp_path / "memsync.toml"
    config.write_text(
        MINIMAL + "[[collaborators]]\nname = 'ada'\nrole = 'lead'\nchat_id = 111\npermissions = ['approve']\n"
        "notify_on = ['offline', 'approval:financial', 'digest']\n"
        "[[collaborators]]\nname = 'ops'\nchat_id = '-100222'\nuser_id = 222\nnotify_on = ['alerts']\n",
        encoding="utf-8",
    )
    ada, ops = load_settings(config).collaborators
    assert (ada.name, ada.role, ada.chat_id, ada.presser_id, ada.permissions) == (
        "ada",
        "lead",
        "111",
        "111",
        ["approve"],
    )
    assert (ops.chat_id, ops.presser_id, ops.notify_on, ops.permissions) == ("-100222", "222", ["alerts"], [])


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ("name = 'ada'\nchat_id = 1\nnotify_on = ['ofline']", ROUTING["refusals"][0]["sentence"]),
        ("name = 'ada'\nchat_id = 1\npermissions = ['admin']", ROUTING["refusals"][-1]["sentence"]),
        ("name = 'ada'\nnotify_on = []", "missing key 'collaborators.0.chat_id'"),
        ("name = 'ada'\nchat_id = 'ada'", "use a Telegram chat id"),
        ("name = 'ada'\nchat_id = 1\nuser_id = -5", "use a Telegram user id"),
        ("name = 'ada'\nchat_id = 1\nnotfy_on = []", "unknown key 'collaborators.0.notfy_on'"),
        ("name = 'ada'\nchat_id = 1\n[[collaborators]]\nname = 'ada'\nchat_id = 2", "'ada' is listed twice"),
    ],
)
def test_a_wrong_collaborator_is_refused_in_one_sentence(tmp_path: Path, entry: str, said: str) -> None:
    config = tmp_path / "memsync.toml"
    config.write_text(f"{MINIMAL}[[collaborators]]\n{entry}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_settings(config)
    assert said in str(refused.value)
    assert "\n" not in str(refused.value)
