"""The search index's collection lifecycle as decisions: what to do next with the serving collection
(keep it in step, purge it, rebuild it, wait for ``memsync reindex``), which collections an
interrupted rebuild left to drop, whether the index owes work with nothing new in the feed, and what
status says of the purge. Pure: the facts in, the action out; ``sync.search.indexing.rebuilder``
applies them with the store, and the running index (``sync.search.service``) asks.

Why a purge is a rebuild: a pass that deleted a forgotten episode's point leaves its bytes in the
engine's files (qdrant-edge keeps a deleted point's payload in its WAL, and its segments until a
vacuum), so the collection is rebuilt without it and dropped. It waits until the feed is drained,
so a burst of forgets costs one rebuild. Why a collection built with another model or BM25 settings
waits: its vectors are not comparable with the configured ones, and re-embedding everything is the
person's call (``memsync reindex``), never an automatic one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Step(StrEnum):
    INDEX = "index"  # keep the serving collection in step with the feed; nothing more
    PURGE = "purge"  # rebuild the serving collection without the bytes of forgotten episodes
    REBUILD = "rebuild"  # rebuild with the configured model, then switch searches to it
    WAIT_FOR_REINDEX = "wait-for-reindex"  # built with another spec: searches and indexing wait


@dataclass(frozen=True)
class Facts:
    """What the lifecycle knows when it decides, after a pass or when asked."""

    reindex_asked: bool = False  # `memsync reindex`
    mismatch: bool = False  # the serving collection records another model or BM25 spec than configured
    drained: bool = False  # the last pass reached the feed's end
    stopping: bool = False  # the daemon is shutting down
    purge_owed: bool = False  # the serving collection deleted a forgotten episode's point


def next_step(facts: Facts) -> Step:
    if facts.reindex_asked:
        return Step.REBUILD  # the fix for a mismatch, and a purge too: the rebuild copies no deleted point
    if facts.mismatch:
        return Step.WAIT_FOR_REINDEX
    if facts.stopping or not facts.drained or not facts.purge_owed:
        return Step.INDEX
    return Step.PURGE


# Alone (the edge store), only this site's `memsync reindex` fixes a mismatch, and it wakes the loop.
ALONE_MISMATCH_WAIT = 3600.0


def mismatch_wait(*, shared: bool, catch_up_interval: float) -> float:
    """Seconds a layer whose serving collection another model built waits before it looks again.
    On a shared Qdrant another site's reindex fixes it too, by moving the alias, and nothing tells
    this site: it looks again at the catch-up interval, so it follows the alias, resumes indexing
    and stops asking (in status) for a reindex that is done. Alone, an hour: only a reindex here,
    which wakes the loop, or a restart changes anything."""
    return catch_up_interval if shared else ALONE_MISMATCH_WAIT


@dataclass(frozen=True)
class Leftovers:
    """What to do with the collections a rebuild listed to drop unless active (``CursorFile``)."""

    drop: tuple[str, ...]  # a half-built collection, or the one a switch replaced
    keep: tuple[str, ...]  # the switch happened before the crash: it serves, only its listing goes


def leftovers(active: str, to_drop: Iterable[str]) -> Leftovers:
    listed = tuple(to_drop)
    return Leftovers(
        drop=tuple(name for name in listed if name != active), keep=tuple(name for name in listed if name == active)
    )


def owes_work(active: str, *, purge_owed: bool, to_drop: Iterable[str]) -> bool:
    """A purge of the serving collection, or a collection to drop: work with no change in the feed
    (a daemon that stopped mid-purge starts its warm worker to finish it)."""
    return purge_owed or bool(leftovers(active, to_drop).drop)


def shown_purge(last: Mapping[str, Any], *, owed: bool) -> dict[str, Any] | None:
    """The purge status shows: the last one (purging, purged or failed), or ``owed`` when a forget
    was applied whose bytes are still in the store's files and no purge of it is under way or failed."""
    purge = dict(last)
    if owed and purge.get("state") not in ("purging", "failed"):
        purge["state"] = "owed"
    return purge or None
