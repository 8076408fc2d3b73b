"""How much a memory matters, from how the fleet uses it: its salience. Pure; the clock is an
argument (``now_ms``), so a table of cases is its test.

- **Use** is recorded by kind (``USE_KINDS``): a memory *handed* to an agent (the context hook,
  ``search_memory``, ``memsync search``) or *opened* by one (``get_episode``, ``related``). The
  backbone keeps, per memory, how often each kind happened and when it last did
  (``sync.backbone.base.UseTotals``); both backbones accept exactly these kinds
  (``contracts/uses.json``).
- **Reinforced by use**: each use closes a share (``boost``) of the gap between the salience and 1,
  weighted by its kind (an agent opening a memory says more than a hook handing it over unasked),
  so salience saturates below 1 rather than growing without end.
- **Decays when untouched**: the part above ``floor`` halves every ``half_life_days`` since the
  memory was last used (or, never used, since it was written). A clock behind the memory's time
  counts as no time at all: salience never rises by the clock going back.
- **Never below a floor**: an old, unused memory still ranks; salience is a signal, never a filter.
- **Pinned never decays**: a person (``memsync pin``) or an agent (the MCP ``pin_memory`` tool)
  pins a memory and its salience is 1 whatever its use or age.

The seeds (Progeny) score a retrieval by similarity, freshness and salience less redundancy; they
keep ``last_accessed`` and ``access_count`` and, nightly, decay the untouched and reinforce the
used. ``SalienceParams``' defaults are that design's starting point in numbers: a new memory at
0.5 (the middle: neither reinforced nor decayed), a floor of 0.1, a 30-day half-life for the
untouched. How salience enters a search's ranking, and what it did to recall, is in
``sync.search.query.ranking.rank.salience_factor`` and docs/design/salience.md.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

DAY_MS: Final = 86_400_000

# Handed to an agent (it did not ask for that memory by name) and opened by one (it did).
HANDED_KINDS: Final = ("context", "mcp_search", "cli_search")
OPENED_KINDS: Final = ("get_episode", "related")
USE_KINDS: Final = HANDED_KINDS + OPENED_KINDS

# How much one use of each kind reinforces: the context hook hands memories on every prompt
# without being asked, so one of its uses counts least; an agent opening a memory counts most.
_KIND_WEIGHTS: Final[Mapping[str, float]] = {
    "context": 0.5,
    "cli_search": 0.5,
    "mcp_search": 1.0,
    "get_episode": 2.0,
    "related": 1.0,
}


@dataclass(frozen=True, slots=True)
class SalienceParams:
    """The policy's numbers (defaults: the seeds' starting point; docs/design/salience.md)."""

    initial: float = 0.5  # a memory nobody has used, on the day it was written
    floor: float = 0.1  # never below: an unused memory still ranks
    boost: float = 0.15  # the share of the gap to 1 that one use of weight 1 closes
    half_life_days: float = 30.0  # untouched, the part above the floor halves in this many days
    kind_weights: Mapping[str, float] = field(default_factory=lambda: dict(_KIND_WEIGHTS))

    def __post_init__(self) -> None:
        if not 0.0 <= self.floor <= self.initial <= 1.0:
            raise ValueError(
                f"salience needs 0 <= floor <= initial <= 1, got floor {self.floor}, initial {self.initial}"
            )
        if not 0.0 <= self.boost < 1.0:
            raise ValueError(f"salience's boost is a share in [0, 1), got {self.boost}")
        if self.half_life_days <= 0:
            raise ValueError(f"salience's half-life is a number of days above 0, got {self.half_life_days}")


DEFAULT_PARAMS: Final = SalienceParams()


@dataclass(frozen=True, slots=True)
class Use:
    """What the policy reads of a memory: its uses by kind, when it was last used (ms; None: never),
    whether it is pinned, and when it was written (ms; None: unknown)."""

    by_kind: Mapping[str, int] = field(default_factory=dict)
    last_used_ms: int | None = None
    pinned: bool = False
    written_ms: int | None = None


def weighted_uses(by_kind: Mapping[str, int], params: SalienceParams = DEFAULT_PARAMS) -> float:
    """The uses by kind as one count, each kind by its weight (a kind the policy does not know
    counts as 1: a newer site's kind still reinforces)."""
    return sum(max(0, count) * params.kind_weights.get(kind, 1.0) for kind, count in by_kind.items())


def reinforced(weighted: float, params: SalienceParams = DEFAULT_PARAMS) -> float:
    """Salience after ``weighted`` uses, before any decay: each closes ``boost`` of the gap to 1."""
    return 1.0 - (1.0 - params.initial) * math.pow(1.0 - params.boost, max(0.0, weighted))


def decayed(value: float, idle_days: float, params: SalienceParams = DEFAULT_PARAMS) -> float:
    """``value`` after ``idle_days`` untouched: the part above the floor halves every half-life."""
    above = max(0.0, value - params.floor)
    return float(params.floor + above * math.pow(0.5, max(0.0, idle_days) / params.half_life_days))


def salience(use: Use, now_ms: int, params: SalienceParams = DEFAULT_PARAMS) -> float:
    """The memory's salience at ``now_ms``, in [floor, 1]: 1 when pinned; else reinforced by its
    uses and decayed for the time since its last use (never used: since it was written; neither
    known: no decay)."""
    if use.pinned:
        return 1.0
    value = reinforced(weighted_uses(use.by_kind, params), params)
    since = use.last_used_ms if use.last_used_ms is not None else use.written_ms
    idle_days = 0.0 if since is None else max(0, now_ms - since) / DAY_MS
    return min(1.0, max(params.floor, decayed(value, idle_days, params)))


def check_kind(kind: str) -> str:
    """``kind`` if the backbones accept it; ValueError naming the kinds otherwise."""
    if kind not in USE_KINDS:
        raise ValueError(f"a use's kind is one of {', '.join(USE_KINDS)}, not {kind!r}")
    return kind


__all__ = [
    "DEFAULT_PARAMS",
    "HANDED_KINDS",
    "OPENED_KINDS",
    "USE_KINDS",
    "SalienceParams",
    "Use",
    "check_kind",
    "decayed",
    "reinforced",
    "salience",
    "weighted_uses",
]
