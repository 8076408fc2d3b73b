"""What an approval's events do to its tasks (sync/tasks.py), which both backbones apply: the tables
and the cases come from contracts/task_status.json, which cloud_functions/taskPolicy.test.ts runs too."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract

from sync.tasks import EVENT_STATUS, FINISHED, LINK_EVENT, TASK_STATUSES, link_event, task_status_after

POLICY = contract("task_status.json")


def test_the_tables_are_the_contract() -> None:
    assert list(TASK_STATUSES) == POLICY["statuses"]
    assert sorted(FINISHED) == sorted(POLICY["finished"])
    assert dict(EVENT_STATUS) == POLICY["events"]
    assert dict(LINK_EVENT) == POLICY["link"]


@pytest.mark.parametrize("case", POLICY["cases"], ids=lambda c: f"{c['event']}-{c['task']}")
def test_an_event_moves_a_task(case: dict[str, Any]) -> None:
    assert task_status_after(case["event"], case["task"]) == case["becomes"]


def test_every_event_meets_every_status_in_the_cases() -> None:
    seen = {(c["event"], c["task"]) for c in POLICY["cases"]}
    assert len(seen) == len(POLICY["events"]) * len(POLICY["statuses"])


@pytest.mark.parametrize(("approval", "event"), sorted(POLICY["link"].items()))
def test_a_task_linked_to_an_approval_takes_its_status_s_event(approval: str, event: str) -> None:
    assert link_event(approval) == event
