"""One collection lifecycle for every site of a shared Qdrant (``warm.store = "qdrant"``), as
decisions: pure, tested from tables; ``sync.search.collection.shared_pointer`` applies them with the
store.

The configured name (``warm.collection``) is a Qdrant alias, and every site reads and writes through
it; the physical collections behind it are ``<name>-<time>``. So a switch is one atomic alias
update that every site sees at its next request, and a forget applied by any site (its point
deleted through the alias) is gone for every site at once.

- ``locate``: what a site does when it opens the index or looks again after a pass: keep going, make
  the first collection and its alias, put the alias on the collection this site already served (an
  older memsync's per-site pointer), follow the alias to the collection another site switched to,
  move memsync's own collection that an older memsync served under the configured name itself (no
  alias) under the alias, put the alias on the copy such a move left when it stopped between
  dropping the collection and making the alias, or refuse a configured name that is a collection
  memsync did not make (or adopted).
- ``copy_complete``: a move under the alias drops the collection it copied only when the copy holds
  as many points as the collection does (counted exactly, after the copy): memsync's own data is
  never dropped on the strength of a copy that fell short.
- ``follow_from``: the feed position a site resumes from in the collection it follows: the position
  the rebuild recorded in it (every change up to there is in it), or its own if further.
- ``may_rebuild``: the rebuild (reindex, or the purge after a forget) of the collection the alias
  serves is one site's at a time, under a job lease in the backbone (``sync.leases``): slot = the
  collection being replaced, so two sites purging at once rebuild it once.
- ``sweep``: which retired collections go. Nobody reaches a collection but through the alias, so once
  the alias has left it only requests already in flight still use it: it is marked retired when it
  is switched away from (or when first found behind the alias unmarked and not being built: a
  rebuild that crashed) and dropped ``grace`` after that, by whichever site looks. A collection memsync did not make, or
  adopted, is never dropped (``sync.search.stores.adoption``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from sync.leases import Claim
from sync.search.stores.adoption import Origin, may_drop

REBUILD_JOB = "warm-rebuild"  # the lease's job; one per alias: f"{REBUILD_JOB}:{alias}"


class Move(StrEnum):
    STAY = "stay"  # the alias serves the collection this site last used
    CREATE = "create"  # no alias, nothing served yet: make <name>-<time> and the alias
    ALIAS_BOUND = "alias-bound"  # no alias: put it on the collection this site served (a per-site pointer)
    FOLLOW = "follow"  # another site switched the alias: follow it, resuming at its recorded position
    FOLLOW_GONE = "follow-gone"  # as FOLLOW, and the collection this site last used went away meanwhile
    # warm.collection names memsync's own collection (an older memsync served it without an alias):
    # copy it into <name>-<time> (vectors and all, no embedding), drop it, make the alias at once.
    # Under the rebuild lease (slot: the name), so one site moves it; the others serve it until then.
    MOVE_UNDER_ALIAS = "move-under-alias"
    ALIAS_MOVED = "alias-moved"  # no alias, no such collection: put the alias on a move's verified copy
    REFUSE_NAME = "refuse-name"  # warm.collection names a collection memsync did not make, or adopted


@dataclass(frozen=True, slots=True)
class Seen:
    """What a site finds on the server and in its own files when it looks."""

    target: str | None  # the collection the alias serves; None: no alias
    bound: str | None  # the physical collection this site last used (its ``collections.json``)
    bound_exists: bool = False
    name_is_collection: bool = False  # a collection (not an alias) has the configured name
    name_origin: Origin | None = None  # who made that collection (``sync.search.stores.adoption``)
    moved: str | None = None  # a move's verified copy of that collection, when the collection is gone


def locate(seen: Seen) -> Move:
    if seen.target is None:
        if seen.name_is_collection:
            return Move.MOVE_UNDER_ALIAS if seen.name_origin is Origin.OURS else Move.REFUSE_NAME
        if seen.bound is not None and seen.bound_exists:
            return Move.ALIAS_BOUND
        if seen.moved is not None:
            return Move.ALIAS_MOVED
        return Move.CREATE
    if seen.bound is None or seen.target == seen.bound:
        return Move.STAY
    return Move.FOLLOW if seen.bound_exists else Move.FOLLOW_GONE


def follow_from(own: int, recorded: int | None) -> int:
    """Where a site resumes in the collection it follows: the rebuild's recorded position holds
    every change up to it; a site further on (it indexed there before) keeps its own."""
    return max(own, recorded or 0)


def copy_complete(source: int, copied: int) -> bool:
    """May a move under the alias drop the collection it copied? Only when the copy holds every
    point of it. A site still indexing into the old collection during the copy makes them differ
    (a point written after the page that would have carried it): the move is tried again later."""
    return copied == source


def may_rebuild(claim: Claim) -> bool:
    """TAKE, KEEP (ours: a restart mid-rebuild) and TAKE_OVER (its holder died) rebuild; SKIP waits:
    another site is rebuilding the collection, or already rebuilt it (the alias has moved on)."""
    return claim is not Claim.SKIP


@dataclass(frozen=True, slots=True)
class Behind:
    """A collection of this alias's that the alias does not serve."""

    name: str
    origin: Origin
    retired_at: float | None  # seconds; None: not marked yet
    building_until: float | None = None  # a site is building it under the lease, until then at most


@dataclass(frozen=True, slots=True)
class Sweep:
    mark: tuple[str, ...]  # retired from now on (a rebuild's leftover, found unmarked)
    drop: tuple[str, ...]  # retired longer than the grace: unused by every site since
    keep: tuple[str, ...]  # not memsync's to drop (foreign or adopted): left in place


def sweep(found: Iterable[Behind], *, now: float, grace: float) -> Sweep:
    mark: list[str] = []
    drop: list[str] = []
    keep: list[str] = []
    for c in found:
        if not may_drop(c.origin):
            keep.append(c.name)
        elif c.retired_at is None and c.building_until is not None and now < c.building_until:
            continue  # a rebuild under way on another site: the switch will make it the served one
        elif c.retired_at is None:
            mark.append(c.name)
        elif now - c.retired_at >= grace:
            drop.append(c.name)
    return Sweep(tuple(mark), tuple(drop), tuple(keep))


def lease_ms(grace: float) -> int:
    """How long a rebuild's lease runs before another site may take it over: a purge copies every
    point, so generously; never shorter than the retirement grace."""
    return int(max(grace, 3600.0) * 1000)
