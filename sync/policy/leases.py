"""Leases on job slots: who may run a global job's slot. Pure; both backbones apply ``decide``
inside one transaction (the hub here, Convex in ``cloud_functions/jobs.ts``, which keeps the
same rule; both are held to ``contracts/job_leases.json``), so two sites can never both run a slot.

A lease ends when its holder finishes the slot, whatever the outcome (a failed run is recorded and
waits for the next slot rather than being retried by another site at once), or when it expires: a
holder killed mid-run is taken over once ``expires_at`` has passed. A job's body is idempotent, so
re-running a half-done slot is harmless.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


@dataclass(frozen=True, slots=True)
class Lease:
    job: str
    slot: str
    holder: str  # the site running it
    expires_at: int  # ms
    done: bool = False  # the slot was finished (whatever its outcome): never run again


class Claim(StrEnum):
    TAKE = "take"  # nobody holds it: ours
    KEEP = "keep"  # ours already (a retried call, a restart inside the slot)
    TAKE_OVER = "take-over"  # its holder's lease expired before it finished
    SKIP = "skip"  # another site holds it, or the slot is done


def decide(current: Lease | None, site: str, now_ms: int) -> Claim:
    """May ``site`` run the slot whose lease is ``current``?"""
    if current is None:
        return Claim.TAKE
    if current.done:
        return Claim.SKIP
    if current.holder == site:
        return Claim.KEEP
    return Claim.TAKE_OVER if now_ms >= current.expires_at else Claim.SKIP
