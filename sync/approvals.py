"""The design's approval policy. Pure; both backbones apply it when an approval is created (the hub
in ``sync/backbone/hub/coordination.py``, Convex in ``cloud_functions/approvals.ts``, which keeps a
copy of the same rule and table), and the expire-pending-approvals sweep runs with its timeouts.

A category (an approval's action_type) waits for a person for its timeout, then expires; a timeout
of 0 means it never waits. Two categories are also approved at once on what the request says of
itself: external_api when its cost is under $0.10, code_commit when its tests pass. An approval the
policy approves is resolved by ``APPROVED_BY_POLICY``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

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
