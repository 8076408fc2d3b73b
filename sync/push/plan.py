"""The sync decisions, pure: what a row needs, which rows a pass re-checks, how batches are cut.

No I/O here; the engine feeds in what it read and carries out what this module decides.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from sync.source.base import source_id_for  # the AgentDB file's keys, the default mapping

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Occupant:
    """One episode that has been synced from a given AgentDB id.

    An id normally has one occupant. Racing writers can reuse an id for a different episode; each
    distinct episode seen under the id becomes another occupant, with the next generation.
    """

    local_id: int
    generation: int
    source_id: str
    identity_hash: str
    content_hash: str


class Verdict(StrEnum):
    UNCHANGED = "unchanged"  # in the backbone exactly as it is now
    NEW = "new"  # first episode seen under this id
    EDIT = "edit"  # the same episode with new content: update its remote copy in place
    REUSED = "reused"  # a different episode under an already-synced id: keep both


@dataclass(frozen=True, slots=True)
class Decision:
    verdict: Verdict
    source_id: str
    generation: int
    # For REUSED: the episode that stays in the backbone under its own source id.
    displaced: Occupant | None = None


def decide(
    local_id: int,
    identity_hash: str,
    content_hash: str,
    occupants: Sequence[Occupant],
    ids: Callable[[int, int], str] = source_id_for,
) -> Decision:
    """What a row needs; ``ids`` is its source's id mapping (``sync.push.source.Source``)."""
    if not occupants:
        return Decision(Verdict.NEW, ids(local_id, 0), 0)
    for occupant in occupants:
        if occupant.identity_hash == identity_hash:
            verdict = Verdict.UNCHANGED if occupant.content_hash == content_hash else Verdict.EDIT
            return Decision(verdict, occupant.source_id, occupant.generation)
    latest = max(occupants, key=lambda o: o.generation)
    generation = latest.generation + 1
    return Decision(Verdict.REUSED, ids(local_id, generation), generation, displaced=latest)


def after_conflict(local_id: int, decision: Decision, ids: Callable[[int, int], str] = source_id_for) -> Decision:
    """The backbone already holds a different episode under this key: try the next generation.

    This happens when the sidecar lost track (a crash between the backbone's commit and ours, or a
    fresh sidecar): the backbone, not the sidecar, is the judge of what a key holds.
    """
    generation = decision.generation + 1
    return Decision(Verdict.REUSED, ids(local_id, generation), generation, decision.displaced)


@dataclass(frozen=True, slots=True)
class ScanPlan:
    """Which already-synced rows a pass hashes again, to catch edits and reused ids."""

    window_after: int  # the window: rows with window_after < id <= cursor (see window_due)
    full_from: int | None  # a slice of the full re-check, from this id on; None: none this pass


def plan_scan(
    cursor: int,
    window: int,
    now: float,
    last_full_at: float | None,
    full_interval: float,
    full_position: int | None,
    changed_since_full: bool,
) -> ScanPlan:
    """Every pass re-checks the last ``window`` ids, where racing writers reuse them. A full
    re-check of every row, to catch edits of old episodes, runs in slices over several passes
    (so new episodes never wait behind it); a new one starts once ``full_interval`` has passed
    since the last, and only if the file changed since that one began."""
    window_after = max(0, cursor - window)
    if full_position is not None:
        return ScanPlan(window_after, full_position)
    due = last_full_at is None or now - last_full_at >= full_interval
    return ScanPlan(window_after, 0 if due and changed_since_full else None)


def window_due(now: float, checked_at: float | None, interval: float, read_new_rows: bool) -> bool:
    """Whether this pass re-checks the window. While an agent keeps appending, at most once every
    ``interval`` seconds (a reused id or an edit is seen that much later, never missed); always on
    a pass that brought nothing new, which is also how the check a busy spell put off gets paid
    (``SyncEngine.recheck_due`` asks for that pass)."""
    if not read_new_rows or checked_at is None:
        return True
    return now - checked_at >= interval


def batches(items: Iterable[T], max_rows: int, max_bytes: int | None, size: Callable[[T], int]) -> Iterator[list[T]]:
    """Cut items into batches of at most ``max_rows`` and (where the backbone has one) ``max_bytes``.

    An item larger than ``max_bytes`` on its own goes alone; the backbone decides its fate.
    """
    batch: list[T] = []
    batch_bytes = 0
    for item in items:
        item_bytes = size(item)
        too_big = max_bytes is not None and batch and batch_bytes + item_bytes > max_bytes
        if len(batch) >= max_rows or too_big:
            yield batch
            batch, batch_bytes = [], 0
        batch.append(item)
        batch_bytes += item_bytes
    if batch:
        yield batch
