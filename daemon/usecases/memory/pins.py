"""Pins and the fleet's use of a memory, for a person or an agent: pinning a memory so that its
salience never decays (``pin``), and what memories' use and salience are (``used``). Each opens
the backbone when called (``daemon.site.opened_backbone``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from daemon.usecases.memory.uses import MemoryKey

if TYPE_CHECKING:
    from daemon.config import Settings
    from sync.backbone.base import UseTotals

TOP: Final = 20  # memories ``used`` lists by default


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


__all__ = ["MemoryUse", "pin", "used"]
