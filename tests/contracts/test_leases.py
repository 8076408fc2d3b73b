"""Leases on job slots (sync/policy/leases.py): the cases of ``decide`` and how long runs are kept come
from contracts/job_leases.json, which cloud_functions/leases.test.ts runs against jobs.ts too."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract

from sync.backbone.hub.fleet.jobs import RUNS_KEPT_MS
from sync.policy.leases import Claim, Lease, decide

LEASES = contract("job_leases.json")


@pytest.mark.parametrize("case", LEASES["decide"], ids=lambda c: c["why"])
def test_decide(case: dict[str, Any]) -> None:
    held = case["current"]
    current = None if held is None else Lease("job", "slot", held["holder"], held["expires_at"], held["done"])
    assert decide(current, case["site"], case["now"]) is Claim(case["claim"])


def test_runs_are_kept_as_long_as_the_contract_says() -> None:
    assert LEASES["runs_kept_ms"] == RUNS_KEPT_MS
