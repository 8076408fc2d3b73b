"""The approval messages' golden texts (contracts/approval_messages.json): what Telegram shows of an
approval when it is announced and once it is deferred, approved, rejected or expired, with its
buttons, word for word as cloud_functions/lib/approvalMessage.ts says them."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract

from daemon.alerts.messages import Message, approval_message, approval_outcome
from sync.backbone.base import Approval

CASES: list[dict[str, Any]] = contract("approval_messages.json")["cases"]


def approval_of(case: dict[str, Any]) -> Approval:
    a = case["approval"]
    return Approval(
        approval_id=a["id"],
        agent_name=a["agentName"],
        action_type=a["actionType"],
        status=a["status"],
        priority="normal",
        reviewers=(),
        expires_at=a["expiresAt"],
        resolved_by=a["resolvedBy"],
        cost_usd=a["costUsd"],
        tests_passed=a["testsPassed"],
        site=a["site"],
        summary=a["summary"],
        source_id=a["sourceId"],
        created_at=a["createdAt"],
        resolved_at=a["resolvedAt"],
        defer_count=a["deferCount"],
    )


def shown(message: Message) -> tuple[str, list[list[dict[str, str]]]]:
    return message.text, [[{"text": b.text, "data": b.data} for b in row] for row in message.buttons]


def test_the_contract_covers_every_event() -> None:
    assert {c["event"] for c in CASES} == {"announce", "deferred", "approved", "rejected", "expired"}


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_hub_says_what_the_contract_says(case: dict[str, Any]) -> None:
    approval = approval_of(case)
    message = approval_message(approval) if case["event"] == "announce" else approval_outcome(approval)
    assert shown(message) == (case["text"], case["buttons"])
