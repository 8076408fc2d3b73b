"""The fleet's use of its memories, for a person or an agent: noting that memories were handed to
or opened by an agent (``noted``: one line in the site's spool, the daemon sends it on), pinning a
memory so that it never decays (``pin``), and what a memory's use and salience are (``used``).

``noted`` is on the light path of an agent's hook: it imports the spool (standard library) only;
the rest open the backbone when called.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.base import UseTotals
    from sync.search.request import SearchResult

MemoryKey = tuple[str, str]
TOP: Final = 20  # memories ``used`` lists by default


def noted(
    state_path: Path,
    kind: str,
    keys: Sequence[MemoryKey],
    *,
    agent: str | None,
    clock: Callable[[], float] = time.time,
) -> str | None:
    """Note that ``keys`` were used (``kind``: sync.policy.salience.USE_KINDS) by ``agent``, in the
    spool beside the site's state at ``state_path``; None when noted, else why not (one sentence:
    a use is never worth failing its caller)."""
    from sync.usage.spool import note, spool_path

    return note(spool_path(state_path), kind, keys, at_ms=int(clock() * 1000), agent=agent)


def keys_of(results: Iterable[SearchResult], ids: Iterable[str] | None = None) -> list[MemoryKey]:
    """The memory keys of ``results`` (only those whose point id is in ``ids``, when given), in order."""
    wanted = None if ids is None else set(ids)
    return [(r.site, r.source_id) for r in results if wanted is None or r.id in wanted]


def key_of(text: str) -> MemoryKey:
    """A memory named as ``SITE:ID`` (as ``get_episode`` takes it) or ``SITE#ID`` (as the context
    block and search results show it); ValueError otherwise."""
    for mark in (":", "#"):
        site, _, source_id = text.strip().partition(mark)
        if site and source_id:
            return site, source_id
    raise ValueError(f"name a memory as SITE:ID or SITE#ID (as search results show it), not {text!r}")


@dataclass(frozen=True, slots=True)
class MemoryUse:
    """A memory's use by the fleet, its pin and its salience now."""

    key: MemoryKey
    salience: float
    totals: UseTotals | None  # None: never used nor pinned


def _use(key: MemoryKey, totals: UseTotals | None, now_ms: int) -> MemoryUse:
    from sync.policy.salience import Use, salience

    if totals is None:
        return MemoryUse(key, salience(Use(), now_ms), None)
    use = Use(totals.by_kind, totals.last_accessed, totals.pinned)
    return MemoryUse(key, salience(use, now_ms), totals)


def pin(
    settings: Settings, key: MemoryKey, *, pinned: bool, by: str, clock: Callable[[], float] = time.time
) -> MemoryUse:
    """Pin (or unpin) a memory of any site's; LookupError when the backbone holds no such memory."""
    from daemon.site import opened_backbone

    with opened_backbone(settings) as backbone:
        if not backbone.pin(*key, pinned=pinned, by=by):
            raise LookupError(f"no memory {key[0]}:{key[1]} in the backbone: name one as search results show it")
        totals = backbone.use_totals([key]).get(key)
    return _use(key, totals, int(clock() * 1000))


def used(
    settings: Settings,
    keys: Sequence[MemoryKey] | None = None,
    *,
    top: int = TOP,
    clock: Callable[[], float] = time.time,
) -> list[MemoryUse]:
    """The given memories' use (each, used or not), or the fleet's ``top`` memories by salience."""
    from daemon.site import opened_backbone

    now_ms = int(clock() * 1000)
    with opened_backbone(settings, create=False) as backbone:
        totals = backbone.use_totals(keys)
    if keys is not None:
        return [_use(k, totals.get(k), now_ms) for k in keys]
    ranked = sorted((_use(k, t, now_ms) for k, t in totals.items()), key=lambda u: (-u.salience, u.key))
    return ranked[:top]


__all__ = ["MemoryUse", "key_of", "keys_of", "noted", "pin", "used"]
