"""The approval policy's rule (sync/approvals.py), which both backbones apply at creation."""

from __future__ import annotations

import pytest

from sync.approvals import APPROVAL_TIMEOUTS_MS, AUTO_APPROVE_UNDER_USD, approved_at_creation

MINUTE = 60_000


@pytest.mark.parametrize(
    ("action_type", "timeout_ms", "cost_usd", "tests_passed", "approved"),
    [
        # A timeout of 0, the design's or the caller's, approves whatever the request says.
        ("research", 0, None, None, True),
        ("internal", 0, 5.0, False, True),
        ("deploy", 0, None, None, True),
        ("external_api", 0, 5.0, None, True),
        # external_api: under $0.10, only when the request says its cost.
        ("external_api", 15 * MINUTE, 0.05, None, True),
        ("external_api", 15 * MINUTE, 0.0, None, True),
        ("external_api", 15 * MINUTE, 0.0999, None, True),
        ("external_api", 15 * MINUTE, 0.10, None, False),
        ("external_api", 15 * MINUTE, 0.50, None, False),
        ("external_api", 15 * MINUTE, None, None, False),
        ("external_api", 15 * MINUTE, None, True, False),
        # code_commit: when its tests passed, only when the request says so.
        ("code_commit", 30 * MINUTE, None, True, True),
        ("code_commit", 30 * MINUTE, 0.01, True, True),
        ("code_commit", 30 * MINUTE, None, False, False),
        ("code_commit", 30 * MINUTE, None, None, False),
        ("code_commit", 30 * MINUTE, 0.01, None, False),
        # Every other category waits for a person, whatever the request says.
        ("financial", 120 * MINUTE, 0.01, True, False),
        ("send_message", 60 * MINUTE, None, None, False),
        ("deploy", 60 * MINUTE, 0.0, True, False),
    ],
)
def test_approved_at_creation(
    action_type: str, timeout_ms: int, cost_usd: float | None, tests_passed: bool | None, approved: bool
) -> None:
    assert approved_at_creation(action_type, timeout_ms, cost_usd, tests_passed) is approved


def test_the_design_table() -> None:
    assert AUTO_APPROVE_UNDER_USD == 0.10
    assert {category for category, ms in APPROVAL_TIMEOUTS_MS.items() if ms == 0} == {"internal", "research"}
    assert APPROVAL_TIMEOUTS_MS["external_api"] == 15 * MINUTE
    assert APPROVAL_TIMEOUTS_MS["code_commit"] == 30 * MINUTE
