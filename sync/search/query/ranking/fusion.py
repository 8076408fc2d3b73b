"""Fusing the dense and the BM25 list into one ranking: pure, no I/O.

Two methods, both over the same two prefetched lists (same filter, same depth):

- ``relative`` (the default): each list's scores are min-max scaled to [0, 1] over the list, and a
  point's fused score is ``alpha * dense + (1 - alpha) * bm25``, a list it is missing from giving 0.
  This is Weaviate's default fusion ("relativeScoreFusion", alpha 0.75), and the convex combination
  that Bruch, Gai and Ingber ("An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023)
  found better than RRF in and out of domain. It keeps what RRF throws away, the size of a lead: an
  exact identifier is far ahead of its twin in BM25 while the twins are level in meaning, and a
  paraphrase's episode is far ahead in meaning while BM25's first hit merely shares a common word.
- ``rrf``: Reciprocal Rank Fusion as Qdrant computes it, ``sum of 1 / (rank + k)`` with rank from 0
  and k = 2, Qdrant's default (the seed design's fusion). Ranks alone tie exactly whenever the two
  lists swap their top two; ties go to the larger relative score, then to the id, so the order is
  the same on every run and every engine.

The dense list's weight is not one number: it follows how much of the query BM25's best hit holds
(``lexical_coverage``: the share of the query's distinct BM25 terms found in that hit's own sparse
vector). When the best lexical hit holds every word of the query (an exact identifier, a question
whose rare words a memory repeats), BM25 is right and the dense weight is 0.4; when it holds few (a
paraphrase: BM25's first hit merely shares "service" or "CI"), the lexical list is noise and the
dense weight rises to 0.8; between, it is linear (0.6 at half). No single weight served both the
labelled set and LoCoMo (docs/design/search-index.md, on search): paraphrases need about 0.75, LoCoMo's
questions about 0.5. It is a query-performance predictor read from the lists themselves, with no
model and no corpus statistics, so it holds for any collection. An explicit ``alpha`` (or
``rrf``) turns it off.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

from sync.search.embedders.bm25 import SparseVector
from sync.search.stores import Scored

Fusion = Literal["relative", "rrf"]
FUSIONS: Final[tuple[Fusion, ...]] = ("relative", "rrf")
DEFAULT_FUSION: Final[Fusion] = "relative"
RELATIVE_ALPHA: Final = 0.6  # the dense weight when BM25's best hit's coverage is not known
DENSE_WEIGHT_NO_MATCH: Final = 0.8  # the dense weight when BM25's best hit holds none of the query's terms
DENSE_WEIGHT_FULL_MATCH: Final = 0.4  # ...and when it holds all of them; linear between
HEAD: Final = 20  # how many of each list's best compete for the first places, scaled among themselves
RRF_K: Final = 2  # Qdrant's default
DEPTH: Final = 50  # candidates taken from each list


@dataclass(frozen=True, slots=True)
class FusionSpec:
    """How to fuse: the method, its parameters, and how deep each list is prefetched. ``alpha`` is
    the dense list's weight (relative: the convex weight; rrf: 0.5 is plain RRF, else weighted)."""

    method: Fusion = DEFAULT_FUSION
    alpha: float | None = None  # None: the method's own default (relative: from the coverage)
    k: float = RRF_K
    depth: int = DEPTH
    head: int | None = HEAD  # None: one scale over the whole depth

    @property
    def adaptive(self) -> bool:
        """Whether the dense weight follows BM25's best hit (``weight`` wants its coverage)."""
        return self.method == "relative" and self.alpha is None

    def weight(self, coverage: float | None = None) -> float:
        if self.alpha is not None:
            return self.alpha
        if self.method != "relative":
            return 0.5
        return RELATIVE_ALPHA if coverage is None else adaptive_weight(coverage)


def lexical_coverage(query: SparseVector, hit: SparseVector | None) -> float:
    """The share of the query's distinct BM25 terms that a hit's sparse vector holds: 0..1 (0 for a
    query with no terms or a hit without a sparse vector)."""
    if not query.indices or hit is None:
        return 0.0
    return len(set(query.indices).intersection(hit.indices)) / len(set(query.indices))


def adaptive_weight(coverage: float) -> float:
    """The dense list's weight for a query whose best BM25 hit holds ``coverage`` of its terms."""
    share = min(1.0, max(0.0, coverage))
    return DENSE_WEIGHT_NO_MATCH + (DENSE_WEIGHT_FULL_MATCH - DENSE_WEIGHT_NO_MATCH) * share


def spec_of(fusion: Fusion | FusionSpec) -> FusionSpec:
    return fusion if isinstance(fusion, FusionSpec) else FusionSpec(method=fusion)


def relative_scores(hits: Sequence[Scored]) -> dict[str, float]:
    """Each hit's score min-max scaled over the list: the best 1, the worst 0 (all 1 when level)."""
    if not hits:
        return {}
    low, high = min(h.score for h in hits), max(h.score for h in hits)
    span = high - low
    return {h.id: (h.score - low) / span if span > 0 else 1.0 for h in hits}


def fuse(
    dense: Sequence[Scored],
    sparse: Sequence[Scored],
    method: Fusion = DEFAULT_FUSION,
    *,
    alpha: float = RELATIVE_ALPHA,
    k: float = RRF_K,
    rrf_weight: float = 0.5,
    head: int | None = HEAD,
) -> list[Scored]:
    """One ranking, best first, each hit carrying its fused score (the lists are best first).

    With ``head``, relative fusion ranks in two tiers: the points among either list's best
    ``head``, fused with each list scaled over those ``head`` alone, then every other point, fused
    over the whole lists; a tier-two point scores below every tier-one point."""
    if method == "relative" and head is not None and (len(dense) > head or len(sparse) > head):
        first = fuse(dense[:head], sparse[:head], method, alpha=alpha, head=None)
        placed = {hit.id for hit in first}
        rest = [hit for hit in fuse(dense, sparse, method, alpha=alpha, head=None) if hit.id not in placed]
        # Tier one's fused scores lie in 0..1, as do tier two's: lift tier one above them all.
        return [Scored(hit.id, hit.score + 1.0) for hit in first] + rest
    if method not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {method!r}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be within 0..1, got {alpha}")
    points = {hit.id for hit in (*dense, *sparse)}
    d, s = relative_scores(dense), relative_scores(sparse)
    relative = {i: alpha * d.get(i, 0.0) + (1.0 - alpha) * s.get(i, 0.0) for i in points}
    if method == "relative":
        fused: Mapping[str, float] = relative
    else:
        fused = _rrf(((dense, 2 * rrf_weight), (sparse, 2 * (1 - rrf_weight))), k)
    order = sorted(points, key=lambda i: (-fused[i], -relative[i], i))
    return [Scored(i, fused[i]) for i in order]


def _rrf(lists: Sequence[tuple[Sequence[Scored], float]], k: float) -> dict[str, float]:
    scores: dict[str, float] = {}
    for hits, weight in lists:
        for rank, hit in enumerate(hits):
            scores[hit.id] = scores.get(hit.id, 0.0) + weight / (rank + k)
    return scores
