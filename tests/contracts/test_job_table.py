"""The periodic jobs (daemon/job_table.py, daemon/schedule/plan.py): their table and the slot a run works for, from
contracts/job_table.json, which cloud_functions/jobTable.test.ts runs against scheduled.ts too."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest
from contract import contract

from daemon.job_table import DEFAULT_JOBS
from daemon.schedule.plan import slot_key

TABLE = contract("job_table.json")
SPECS = {job.name: job for job in DEFAULT_JOBS}


def test_the_job_table_is_the_contract() -> None:
    ours = {
        job.name: {
            "scope": str(job.scope),
            "every_s": job.every_s,
            "cron": job.cron,
            "grace_s": job.grace_s,
            "lease_s": job.lease_s,
        }
        for job in DEFAULT_JOBS
    }
    assert ours == TABLE["jobs"]
    assert list(ours) == list(TABLE["jobs"])


@pytest.mark.parametrize("case", TABLE["slots"], ids=lambda c: f"{c['job']}@{c['now']}")
def test_the_slot_of_a_run(case: dict[str, Any]) -> None:
    assert slot_key(SPECS[case["job"]], datetime.fromisoformat(case["now"])) == case["slot"]
