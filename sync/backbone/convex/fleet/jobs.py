"""Convex's job leases and runs (``jobs.ts``): the deployment applies ``sync.policy.leases``' rule inside
its mutation, so that one site runs each slot; every run is recorded."""

from __future__ import annotations

from typing import Any

from sync.backbone.base import JobRun
from sync.backbone.convex.connection import MAX_PAGE, ConvexConnection
from sync.backbone.convex.wire import int_or_none
from sync.policy.leases import Claim


class ConvexJobs(ConvexConnection):
    def claim_job(self, job: str, slot: str, lease_ms: int) -> Claim:
        value = self.call("mutation", "jobs:claimJob", {"job": job, "slot": slot, "leaseMs": lease_ms})
        return Claim(value["claim"])

    def finish_job(self, job: str, slot: str, outcome: str, summary: str) -> None:
        self.call("mutation", "jobs:finishJob", {"job": job, "slot": slot, "outcome": outcome, "summary": summary})

    def record_run(self, job: str, slot: str, outcome: str, summary: str, started_at: int, ended_at: int) -> None:
        self.call(
            "mutation",
            "jobs:recordRun",
            {
                "job": job,
                "slot": slot,
                "outcome": outcome,
                "summary": summary,
                "startedAt": started_at,
                "endedAt": ended_at,
            },
        )

    def job_runs(self, job: str | None = None, limit: int = 50) -> list[JobRun]:
        args: dict[str, Any] = {"limit": max(0, min(limit, MAX_PAGE))}
        if job is not None:
            args["job"] = job
        return [
            JobRun(
                r["job"],
                r["slot"],
                r["site"],
                int(r["startedAt"]),
                int_or_none(r.get("endedAt")),
                r["outcome"],
                r["summary"],
            )
            for r in self.call("query", "jobs:runs", args)
        ]
