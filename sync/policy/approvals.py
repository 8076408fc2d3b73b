"""The design's approval policy. Pure; both backbones apply it when an approval is created (the hub
in ``sync/backbone/hub/fleet/coordination.py``, Convex in ``cloud_functions/approvals.ts``, which keeps a
copy of the same rule and table), and the expire-pending-approvals sweep runs with its timeouts.

A category (an approval's action_type) waits for a person for its timeout, then expires; a timeout
of 0 means it never waits. Two categories are also approved at once on what the request says of
itself: external_api when its cost is under $0.10, code_commit when its tests pass. An approval the
policy approves is resolved by ``APPROVED_BY_POLICY``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final, Literal

# In ms: how long a pending approval of each category waits before it expires; 0 approves it at
# once, when it is requested. The daemon's config (jobs.approval_timeouts, in minutes) starts from
# the same table.
APPROVAL_TIMEOUTS_MS: Final[Mapping[str, int]] = {
    "send_message": 60 * 60_000,
    "financial": 120 * 60_000,
    "destructive": 30 * 60_000,
    "external_api": 15 * 60_000,
    "code_commit": 30 * 60_000,
    "internal": 0,
    "research": 0,
}
DEFAULT_APPROVAL_TIMEOUT_MS: Final = 60 * 60_000
APPROVED_BY_POLICY: Final = "policy"  # resolved_by of an approval the policy approves at once
AUTO_APPROVE_UNDER_USD: Final = 0.10  # an external_api call cheaper than this needs nobody


def approved_at_creation(action_type: str, timeout_ms: int, cost_usd: float | None, tests_passed: bool | None) -> bool:
    """Does the policy approve a new approval at once? ``timeout_ms`` is its category's timeout (the
    caller's policy, or ``APPROVAL_TIMEOUTS_MS``); ``cost_usd`` and ``tests_passed`` are what the
    request says of itself, None when it says nothing (which approves nothing)."""
    if timeout_ms == 0:
        return True
    if action_type == "external_api":
        return cost_usd is not None and cost_usd < AUTO_APPROVE_UNDER_USD
    if action_type == "code_commit":
        return tests_passed is True
    return False


MAX_DEFERS: Final = 3  # a person may push an approval's expiry out this many times, then must decide


def effective_expiry(created_at: int, expires_at: int, timeout_ms: int, defer_count: int) -> int:
    """When a pending approval expires: the earlier of its own deadline and its category's timeout,
    until a person defers it; after that, its (deferred) deadline alone."""
    if defer_count > 0:
        return expires_at
    return min(expires_at, created_at + max(timeout_ms, 0))


def deferred_expiry(created_at: int, expires_at: int, timeout_ms: int, defer_count: int, now_ms: int) -> int | None:
    """The new deadline when a person defers a pending approval at ``now_ms``: its effective expiry
    pushed out by the category's timeout; None when it may not be deferred (expired, or deferred
    ``MAX_DEFERS`` times already)."""
    current = effective_expiry(created_at, expires_at, timeout_ms, defer_count)
    if defer_count >= MAX_DEFERS or now_ms >= current:
        return None
    return current + max(timeout_ms, 0)


# How loud an approval's Telegram messages are, by its priority: a critical message goes at once and
# may wake people; a warning waits out the quiet hours. An unknown priority is a warning.
PRIORITY_SEVERITY: Final[Mapping[str, Literal["warning", "critical"]]] = {
    "low": "warning",
    "normal": "warning",
    "high": "critical",
    "critical": "critical",
}


def severity_of_priority(priority: str) -> Literal["warning", "critical"]:
    """The severity of an approval's messages (its announcement, its expiry warning)."""
    return PRIORITY_SEVERITY.get(priority, "warning")
