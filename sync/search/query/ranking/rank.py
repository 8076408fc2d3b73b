"""How search results are ranked once the dense and BM25 lists are fused
(``sync.search.query.ranking.fusion``): pure.

- Recency decay, gated by similarity: a result that matches the query closely keeps its score
  however old it is; weaker matches fade with age, the weakest fastest.
- Salience (``sync.policy.salience``: reinforced by use, decaying when untouched), on request, gated
  the same way: a close match keeps its score; a weaker one moves up or down a little with how much
  the fleet used it.
- Near-duplicates (linked at indexing time, never dropped) collapse to their best-ranked member.
- MMR (maximal marginal relevance), on request, trades a little relevance for diversity.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sync.search.payload import DUPLICATE_KEY

DAY_MS = 86_400_000
# (age limit in days, factor) for each similarity band; past the last limit the last factor holds.
_CLOSE = 0.85
_RELATED = 0.70
# Recency breaks near-ties; it never overrules relevance. The old table (down to 0.85) moved a
# question's one old answer below fresher chatter: a MiniLM cosine of a right answer to its question
# is mostly below 0.70, "distant" by this table. On LoCoMo it held hybrid search 0.1 below BM25 at
# recall@5 (temporal questions, "when did ...?": 72.9 against 74.2 now; docs/benchmarks/history.md).
_RELATED_DECAY = ((7, 1.0), (30, 0.995), (90, 0.99), (math.inf, 0.985))
_DISTANT_DECAY = ((7, 1.0), (30, 0.99), (90, 0.98), (math.inf, 0.97))


@dataclass(frozen=True, slots=True)
class Ranked:
    id: str
    score: float  # the fused score, then multiplied by the decay
    similarity: float | None  # cosine of the episode's dense vector to the query
    ts: int | None  # the episode's time, ms
    payload: dict[str, Any]
    vector: Sequence[float] | None = None  # for MMR


def decay(similarity: float | None, age_days: float) -> float:
    """The factor applied to a result's score, from the issue's table."""
    if similarity is not None and similarity >= _CLOSE:
        return 1.0
    bands = _RELATED_DECAY if similarity is not None and similarity >= _RELATED else _DISTANT_DECAY
    for limit, factor in bands:
        if age_days < limit:
            return factor
    return bands[-1][1]


def apply_decay(results: Sequence[Ranked], now_ms: int) -> list[Ranked]:
    """Scores multiplied by their decay, best first (ties by id, so the order is stable)."""
    decayed = [
        replace(r, score=r.score * decay(r.similarity, max(0.0, (now_ms - (r.ts or now_ms)) / DAY_MS))) for r in results
    ]
    return sorted(decayed, key=lambda r: (-r.score, r.id))


# Salience's weight in a result's score: a factor 1 + SALIENCE_WEIGHT x (salience - the policy's
# initial value), so an unused new memory is untouched, the most used gains 10% at most and the
# floor loses 8% (with the policy's defaults): it moves near-ties, as recency does, and never
# overrules a clearly better match. Measured on LoCoMo and the context set (docs/design/salience.md).
SALIENCE_WEIGHT = 0.2


def salience_factor(
    salience: float, similarity: float | None, *, initial: float, weight: float = SALIENCE_WEIGHT
) -> float:
    """The factor a result's score takes from its salience: 1 for a close match (similarity gated,
    as the recency decay is), else ``1 + weight * (salience - initial)``."""
    if similarity is not None and similarity >= _CLOSE:
        return 1.0
    return 1.0 + weight * (salience - initial)


def apply_salience(
    results: Sequence[Ranked],
    salience_of: Callable[[Ranked], float],
    *,
    initial: float,
    weight: float = SALIENCE_WEIGHT,
) -> list[Ranked]:
    """Scores multiplied by their salience factor, best first (ties by id)."""
    weighed = [
        replace(r, score=r.score * salience_factor(salience_of(r), r.similarity, initial=initial, weight=weight))
        for r in results
    ]
    return sorted(weighed, key=lambda r: (-r.score, r.id))


def collapse_duplicates(results: Sequence[Ranked], key: str = DUPLICATE_KEY) -> list[Ranked]:
    """Keep the best-ranked member of each near-duplicate group (``payload[key]`` names the group's
    first episode; an episode without it heads its own group)."""
    seen: set[str] = set()
    kept: list[Ranked] = []
    for r in results:
        group = str(r.payload.get(key) or r.id)
        if group in seen:
            continue
        seen.add(group)
        seen.add(r.id)
        kept.append(r)
    return kept


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


def mmr(results: Sequence[Ranked], limit: int, diversity: float = 0.3) -> list[Ranked]:
    """Pick ``limit`` results, each maximising (1 - diversity) * relevance - diversity * its
    greatest similarity to those already picked. Relevance is the (decayed) score scaled to [0, 1].
    Results without a vector are never penalised."""
    if not results or limit <= 0:
        return []
    top = max(r.score for r in results) or 1.0
    remaining = list(results)
    picked: list[Ranked] = []
    while remaining and len(picked) < limit:

        def value(r: Ranked) -> float:
            redundancy = max(
                (cosine(r.vector, p.vector) for p in picked if r.vector is not None and p.vector is not None),
                default=0.0,
            )
            return (1 - diversity) * (r.score / top) - diversity * redundancy

        # Ties go to the better-ranked (earlier) result.
        best = max(range(len(remaining)), key=lambda i: (value(remaining[i]), -i))
        picked.append(remaining.pop(best))
    return picked
