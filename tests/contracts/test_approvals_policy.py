"""The approval policy (sync/approvals.py), which both backbones apply: its table and the cases of
its rules come from contracts/approval_policy.json, and the severity of its messages by priority from
contracts/priority_severity.json; cloud_functions/approvalPolicy.test.ts runs both too."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract

from sync.approvals import (
    APPROVAL_TIMEOUTS_MS,
    APPROVED_BY_POLICY,
    AUTO_APPROVE_UNDER_USD,
    DEFAULT_APPROVAL_TIMEOUT_MS,
    MAX_DEFERS,
    PRIORITY_SEVERITY,
    approved_at_creation,
    deferred_expiry,
    effective_expiry,
    severity_of_priority,
)

POLICY = contract("approval_policy.json")
LOUDNESS = contract("priority_severity.json")


def test_the_table_is_the_contract() -> None:
    assert dict(APPROVAL_TIMEOUTS_MS) == POLICY["timeouts_ms"]
    assert POLICY["default_timeout_ms"] == DEFAULT_APPROVAL_TIMEOUT_MS
    assert POLICY["approved_by_policy"] == APPROVED_BY_POLICY
    assert POLICY["auto_approve_under_usd"] == AUTO_APPROVE_UNDER_USD
    assert POLICY["max_defers"] == MAX_DEFERS


@pytest.mark.parametrize("case", POLICY["approved_at_creation"])
def test_approved_at_creation(case: dict[str, Any]) -> None:
    answer = approved_at_creation(case["action_type"], case["timeout_ms"], case["cost_usd"], case["tests_passed"])
    assert answer is case["approved"]


@pytest.mark.parametrize("case", POLICY["effective_expiry"], ids=lambda c: c["why"])
def test_effective_expiry(case: dict[str, Any]) -> None:
    answer = effective_expiry(case["created_at"], case["expires_at"], case["timeout_ms"], case["defer_count"])
    assert answer == case["expiry"]


@pytest.mark.parametrize("case", POLICY["deferred_expiry"], ids=lambda c: c["why"])
def test_deferred_expiry(case: dict[str, Any]) -> None:
    answer = deferred_expiry(
        case["created_at"], case["expires_at"], case["timeout_ms"], case["defer_count"], case["now"]
    )
    assert answer == case["expiry"]


def test_the_priority_table_is_the_contract() -> None:
    assert dict(PRIORITY_SEVERITY) == LOUDNESS["table"]


@pytest.mark.parametrize("case", LOUDNESS["cases"], ids=lambda c: repr(c["priority"]))
def test_severity_of_priority(case: dict[str, Any]) -> None:
    assert severity_of_priority(case["priority"]) == case["severity"]
