"""Tier: unit. A memory's entities, task key and whether its type was given, where memsync shows
them: the index payload (written when indexed, read by the same rules from a point indexed before
them) and search results on the wire (search --json; export: tests/e2e/test_memory_types_cli.py)."""

from __future__ import annotations

from typing import Any

from sync.backbone.base import Change
from sync.search.indexing.passages import payload_for
from sync.search.payload import (
    ENTITIES_KEY,
    MEMORY_TYPE_KEY,
    SAME_TASK_KEY,
    TYPE_GIVEN_KEY,
    entities_of,
    task_key_of,
    type_given_of,
)
from sync.search.request import SearchResult
from sync.source.entities import task_key

EPISODE: dict[str, Any] = {
    "sourceSite": "laptop",
    "sourceId": "12",
    "sessionId": "s1",
    "task": "Fix the signup E11000",
    "input": "POST /api/signup answered HTTP 500",
    "output": "Added a unique index on users.email_1 in db/migrations/0042_email.sql; E11000 is gone.",
    "critique": "See JIRA-881.",
    "reward": 1.0,
    "success": True,
    "tags": ["mongo"],
    "metadata": {},
    "ts": 1_790_000_000_000,
    "contentHash": "h",
}
NAMED = ["/api/signup", "db/migrations/0042_email.sql", "e11000", "http 500", "jira-881", "users.email_1"]


def test_the_payload_carries_the_entities_and_the_task_key() -> None:
    payload = payload_for(Change(1, "laptop", "12", EPISODE))
    assert payload[ENTITIES_KEY] == NAMED
    assert payload[SAME_TASK_KEY] == task_key("fix the signup e11000.") != ""
    assert entities_of(payload) == NAMED
    assert task_key_of(payload) == payload[SAME_TASK_KEY]


def test_a_point_indexed_before_them_has_them_read_from_its_task_and_text() -> None:
    old = {"site": "laptop", "sourceId": "3", "task": "Fix the signup E11000", "text": "ECONNRESET from db-1.internal"}
    assert entities_of(old) == ["db-1.internal", "e11000", "econnreset"]
    assert task_key_of(old) == task_key("Fix the signup E11000")
    assert task_key_of({"text": "no task"}) == ""
    assert type_given_of({"tags": ["type:decision"], "text": "x"}) is True
    assert type_given_of(old) is False
    assert type_given_of({"typeGiven": True}) is True  # as written when indexed


def test_the_payload_says_whether_the_type_was_given() -> None:
    given = EPISODE | {"metadata": {"memory_type": "decision"}}
    payload = payload_for(Change(1, "laptop", "12", given))
    assert (payload[MEMORY_TYPE_KEY], payload[TYPE_GIVEN_KEY]) == ("decision", True)
    assert payload_for(Change(1, "laptop", "12", EPISODE))[TYPE_GIVEN_KEY] is False


def test_results_carry_them_on_the_wire_and_back() -> None:
    payload = payload_for(Change(1, "laptop", "12", EPISODE))
    result = SearchResult.from_payload("p", payload)
    wire = result.to_wire()
    assert wire["entities"] == NAMED
    assert wire["taskKey"] == payload[SAME_TASK_KEY]
    assert (wire["memoryType"], wire["typeGiven"]) == ("error_fix", False)  # read by the rules
    assert SearchResult.from_wire(wire) == result
    older = {k: v for k, v in wire.items() if k not in ("entities", "taskKey")}  # an older daemon's answer
    assert SearchResult.from_wire(older).entities is None
    # A point indexed before entities: its result has none (reading them costs the hook); the
    # payload's reader still gives them.
    before = {k: v for k, v in payload.items() if k != ENTITIES_KEY}
    assert SearchResult.from_payload("p", before).entities is None
    assert entities_of(before) == entities_of(payload)
