"""The schedule's pure core: no I/O, no clock of its own. Every decision the scheduler makes is a
function here of its inputs (and of the job table, ``daemon/job_table.py``), so that it can be
tested from tables.

- A job fires on an interval (aligned to the epoch, so every site computes the same slots) or on a
  cron expression, in UTC.
- A fire belongs to a **slot**: the latest scheduled fire time at or before the moment the job
  runs. A laptop that slept through 06:00 and runs the digest at 09:10 works for the 06:00 slot, as
  does every other site that runs it late: one slot, one owner.
- A global job's slot is run under a lease (``sync.leases``, decided the same way by both
  backbones): one holder, taken over only after it expires, never run again once finished.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Final, Protocol, TypeVar

from daemon.job_table import JobSpec, trigger


def slot_start(spec: JobSpec, now: datetime) -> datetime:
    """The slot ``now`` belongs to: the latest scheduled fire at or before ``now``."""
    if spec.every_s is not None:
        seconds = now.timestamp()
        return datetime.fromtimestamp(seconds - seconds % spec.every_s, UTC)
    cron, moment = trigger(spec), now.astimezone(UTC)
    # The trigger only looks forward: step from far enough back to pass the latest fire.
    latest: datetime | None = None
    probe = cron.get_next_fire_time(None, moment - timedelta(days=400))
    while probe is not None and probe <= moment:
        latest = probe
        probe = cron.get_next_fire_time(probe, probe + timedelta(seconds=1))
    if latest is None:
        raise ValueError(f"job {spec.name}: its cron never fired in the last 400 days")
    return latest


def slot_key(spec: JobSpec, now: datetime) -> str:
    """The slot as the backbone stores it: its start, to the second, in UTC."""
    return slot_start(spec, now).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_fire(spec: JobSpec, now: datetime) -> datetime:
    if spec.every_s is not None:
        return datetime.fromtimestamp(slot_start(spec, now).timestamp() + spec.every_s, UTC)
    found: datetime | None = trigger(spec).get_next_fire_time(None, now.astimezone(UTC) + timedelta(seconds=1))
    assert found is not None
    return found


def late_but_in_grace(spec: JobSpec, now: datetime) -> bool:
    """Whether a run at ``now`` may still work for its slot (a fire missed by less than the grace)."""
    return (now - slot_start(spec, now)).total_seconds() <= spec.grace_s


# -- manual runs (``memsync jobs run NAME``) ---------------------------------------------------------
# A manual run is no fire of the schedule: it owns a slot of its own, named by the instant it began,
# so that it neither needs a grace (only the scheduler's catch-up of a missed fire does) nor takes or
# finishes a scheduled slot's lease (the schedule's next slot runs as if no one had run it by hand;
# the bodies are idempotent). Its run record's slot says it was manual.
MANUAL_PREFIX: Final = "manual:"


def manual_slot(now: datetime) -> str:
    """The slot of a manual run begun at ``now``: its instant, to the millisecond, in UTC."""
    moment = now.astimezone(UTC)
    return f"{MANUAL_PREFIX}{moment.strftime('%Y-%m-%dT%H:%M:%S')}.{moment.microsecond // 1000:03d}Z"


def is_manual(slot: str) -> bool:
    return slot.startswith(MANUAL_PREFIX)


class RunLike(Protocol):
    """What ``manual_blocker`` reads of a run record (``sync.backbone.base.JobRun``)."""

    @property
    def slot(self) -> str: ...
    @property
    def site(self) -> str: ...
    @property
    def started_at(self) -> int: ...
    @property
    def outcome(self) -> str: ...


Run = TypeVar("Run", bound=RunLike)


def manual_blocker(runs: Iterable[Run], lease_ms: int, now_ms: int, mine: tuple[str, str] | None = None) -> Run | None:
    """The manual run of a job that a manual run must wait for, or None: two manual runs of one job
    never run at once. Each manual run records itself ("running") before it looks, then runs only if
    no other live manual run started before it (by the backbone's clock, then slot, then site); a
    run still "running" ``lease_ms`` after it started is taken for dead (its process was killed).
    ``mine`` is (slot, site) of the caller's own recorded run; None looks before recording: any
    live manual run blocks."""
    live = [r for r in runs if is_manual(r.slot) and r.outcome == "running" and now_ms - r.started_at < lease_ms]
    if mine is None:
        return min(live, key=_order, default=None)
    own = next((r for r in live if (r.slot, r.site) == mine), None)
    others = [r for r in live if (r.slot, r.site) != mine]
    if own is None:
        return min(others, key=_order, default=None)
    return min((r for r in others if _order(r) < _order(own)), key=_order, default=None)


def _order(run: RunLike) -> tuple[int, str, str]:
    return run.started_at, run.slot, run.site
