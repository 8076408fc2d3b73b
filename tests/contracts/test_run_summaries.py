"""The periodic jobs' run summaries (contracts/run_summaries.json), word for word, as
cloud_functions/runSummaries.test.ts holds Convex's crons to the same texts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from contract import contract

from daemon.hubserver.run_summary import (
    ALERTS_OFF,
    alerts_summary,
    archive_summary,
    digest_summary,
    expired_summary,
    health_summary,
    stale_summary,
)

SUMMARIES: dict[str, Any] = contract("run_summaries.json")

WORDED: dict[str, Callable[[dict[str, Any]], str]] = {
    "mark-stale-agents": lambda c: stale_summary(c["offline"], c["pruned"]),
    "expire-pending-approvals": lambda c: expired_summary(c["expired"]),
    "sync-health": lambda c: health_summary([(site, state) for site, state in c["changed"]]),
    "daily-digest": lambda c: digest_summary(c["day"], c["episodes"], c["sites"], c["queued"]),
    "cleanup-old-episodes": lambda c: archive_summary(c["archived"], c["days"], c["files"], c["failures"]),
    "alerts": lambda c: alerts_summary(c["observed"], [(k, s) for k, s in c["said"]]) if c["enabled"] else ALERTS_OFF,
}


@pytest.mark.parametrize("case", SUMMARIES["cases"], ids=[c["summary"] for c in SUMMARIES["cases"]])
def test_a_run_is_summed_up_in_the_contract_s_words(case: dict[str, Any]) -> None:
    assert WORDED[case["job"]](case) == case["summary"]


def test_every_job_with_a_worded_summary_has_cases() -> None:
    assert {c["job"] for c in SUMMARIES["cases"]} == set(WORDED)
