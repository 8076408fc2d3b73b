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

On the committed labelled set (``tests/test_warm_relevance.py``) relative fusion beats dense-only and
BM25-only on MRR; RRF beats BM25-only but not dense-only. Alpha was taken from Weaviate, not fitted to
that set.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Literal

from sync.warm.store import Scored

Fusion = Literal["relative", "rrf"]
FUSIONS: Final[tuple[Fusion, ...]] = ("relative", "rrf")
DEFAULT_FUSION: Final[Fusion] = "relative"
RELATIVE_ALPHA: Final = 0.75  # weight of the dense list; Weaviate's default
RRF_K: Final = 2  # Qdrant's default


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
) -> list[Scored]:
    """One ranking, best first, each hit carrying its fused score (the lists are best first)."""
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
        fused = _rrf((dense, sparse), k)
    order = sorted(points, key=lambda i: (-fused[i], -relative[i], i))
    return [Scored(i, fused[i]) for i in order]


def _rrf(lists: Sequence[Sequence[Scored]], k: float) -> dict[str, float]:
    scores: dict[str, float] = {}
    for hits in lists:
        for rank, hit in enumerate(hits):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (rank + k)
    return scores
