"""The hub's job leases and runs: one site runs each slot of a global job (``sync.policy.leases.decide``,
applied inside the write transaction, so two daemons can never both take a slot), and every run,
global or per-site, is recorded for ``memsync jobs`` and the fleet view.
"""

from __future__ import annotations

import sqlite3

from sync.backbone.base import JobRun
from sync.backbone.hub.connection import HubConnection
from sync.errors import BackboneRejected
from sync.policy.leases import Claim, Lease, decide

_ENDED = ("ok", "failed")


RUNS_KEPT_MS = 14 * 86_400_000  # how long runs and finished leases are kept: the alerts job runs 1,440 times a day


def _prune(conn: sqlite3.Connection, now: int) -> None:
    """Forget finished runs and done leases older than RUNS_KEPT_MS (no job's grace reaches back
    that far, so a forgotten slot is never run again), as Convex's jobs.ts does."""
    cutoff = now - RUNS_KEPT_MS
    conn.execute("DELETE FROM job_runs WHERE started_at < ? AND outcome != 'running'", (cutoff,))
    conn.execute("DELETE FROM job_leases WHERE done = 1 AND expires_at < ?", (cutoff,))


def _check_outcome(outcome: str) -> None:
    if outcome not in _ENDED:
        raise BackboneRejected(f"a run ends ok or failed, not {outcome!r}")


class HubJobs(HubConnection):
    def claim_job(self, job: str, slot: str, lease_ms: int) -> Claim:
        if lease_ms < 0:
            raise BackboneRejected(f"lease_ms must not be negative, got {lease_ms}")

        def claim(conn: sqlite3.Connection) -> Claim:
            now = self.clock()
            row = conn.execute(
                "SELECT holder, expires_at, done FROM job_leases WHERE job = ? AND slot = ?", (job, slot)
            ).fetchone()
            current = None if row is None else Lease(job, slot, row[0], row[1], bool(row[2]))
            decided = decide(current, self.site, now)
            if decided is Claim.SKIP:
                return decided
            conn.execute(
                "INSERT OR REPLACE INTO job_leases (job, slot, holder, expires_at, done) VALUES (?, ?, ?, ?, 0)",
                (job, slot, self.site, now + lease_ms),
            )
            if decided is Claim.TAKE_OVER and current is not None:
                conn.execute(
                    "UPDATE job_runs SET outcome = 'abandoned', ended_at = ? WHERE job = ? AND slot = ? AND site = ?"
                    " AND outcome = 'running'",
                    (now, job, slot, current.holder),
                )
            # KEEP (a retried call, a restart inside the slot) restarts this site's running run.
            restarted = conn.execute(
                "UPDATE job_runs SET started_at = ? WHERE job = ? AND slot = ? AND site = ? AND outcome = 'running'",
                (now, job, slot, self.site),
            ).rowcount
            if not restarted:
                conn.execute(
                    "INSERT INTO job_runs (job, slot, site, started_at, ended_at, outcome, summary)"
                    " VALUES (?, ?, ?, ?, NULL, 'running', '')",
                    (job, slot, self.site, now),
                )
            return decided

        return self._run(claim)

    def finish_job(self, job: str, slot: str, outcome: str, summary: str) -> None:
        _check_outcome(outcome)

        def finish(conn: sqlite3.Connection) -> None:
            now = self.clock()
            # Done whoever holds it: the slot's work was done (a slow holder that was taken over
            # and finished anyway did it too; the bodies are idempotent).
            updated = conn.execute("UPDATE job_leases SET done = 1 WHERE job = ? AND slot = ?", (job, slot)).rowcount
            if not updated:
                conn.execute(
                    "INSERT INTO job_leases (job, slot, holder, expires_at, done) VALUES (?, ?, ?, ?, 1)",
                    (job, slot, self.site, now),
                )
            # This site's latest run of the slot: running, or abandoned by a take-over while it
            # was still working; either way it did finish, with this outcome.
            run = conn.execute(
                "SELECT id FROM job_runs WHERE job = ? AND slot = ? AND site = ?"
                " AND outcome IN ('running', 'abandoned') ORDER BY id DESC LIMIT 1",
                (job, slot, self.site),
            ).fetchone()
            if run is None:
                conn.execute(
                    "INSERT INTO job_runs (job, slot, site, started_at, ended_at, outcome, summary)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (job, slot, self.site, now, now, outcome, summary),
                )
            else:
                conn.execute(
                    "UPDATE job_runs SET ended_at = ?, outcome = ?, summary = ? WHERE id = ?",
                    (now, outcome, summary, run[0]),
                )
            _prune(conn, now)

        self._run(finish)

    def record_run(self, job: str, slot: str, outcome: str, summary: str, started_at: int, ended_at: int) -> None:
        _check_outcome(outcome)
        self._run(
            lambda conn: conn.execute(
                "INSERT INTO job_runs (job, slot, site, started_at, ended_at, outcome, summary)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (job, slot, self.site, started_at, ended_at, outcome, summary),
            )
        )

    def job_runs(self, job: str | None = None, limit: int = 50) -> list[JobRun]:
        select = "SELECT job, slot, site, started_at, ended_at, outcome, summary FROM job_runs"
        order = "ORDER BY started_at DESC, id DESC LIMIT ?"
        if job is None:
            rows = self._read(f"{select} {order}", (max(0, limit),))
        else:
            rows = self._read(f"{select} WHERE job = ? {order}", (job, max(0, limit)))
        return [JobRun(*row) for row in rows]
