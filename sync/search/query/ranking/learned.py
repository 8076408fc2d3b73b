"""Hybrid search ranked by the learned model: the store's I/O around ``sync.search.query.ranking.rerank_model``.

Two engine calls, as the hand-weighted fusion makes (``sync.search.query.pipeline.hybrid``): the dense and BM25
prefetch under the filter, each list the model's ``depth`` deep (100: at least ``MAX_LIMIT``; a
deeper pool gained nothing held out, ``bench/recall_folds.py``), then one read of the pool's
points, their payloads and cosines to the query. Each point becomes a ``Candidate`` (its ranks and
scores in both lists, its session, its length, whether its time lies in a window the query names)
and the model orders them. How much of the query BM25's first hit holds (one more small read, that
point's BM25 vector) decides whether the query is the model's to rank (``LinearModel.covers``) or
the hand-weighted fusion's, over the same two lists. Nothing else is read: a session's strength is
judged from the pool.

What a dream hid (a fold's members, a superseded fact) is in the pool and left out of what is shown
(``pool_filter``, ``shows``): hiding a memory takes it out of the results, never re-ranks the
others. Its session still matched the query and its words still set the lists' best scores, as
before the dream; were it out of the pool, a turn beside it would lose its session's support and
every other's share of the best BM25 score would change (bench.dream_effect: three LoCoMo
questions lost their evidence from the first five so).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Final, Literal

from sync.search.embedders import bm25
from sync.search.payload import DREAM_KEY, HIDDEN_ROLES
from sync.search.query.query_time import Window, within
from sync.search.query.ranking.fusion import HEAD, adaptive_weight, fuse, lexical_coverage
from sync.search.query.ranking.rerank_model import Candidate, LinearModel, load_model, pool, rank
from sync.search.request import SearchFilter
from sync.search.stores import Hit, Scored, VectorStore

Learned = Literal["learned"]
LEARNED: Final[Learned] = "learned"


@cache
def shipped_model() -> LinearModel:
    """The model shipped in the package, read once."""
    return load_model()


def learned_hybrid(
    store: VectorStore,
    dense_query: Sequence[float],
    sparse_query: bm25.SparseVector,
    limit: int,
    filter: SearchFilter | None = None,
    *,
    windows: Sequence[Window] = (),
    model: LinearModel | None = None,
) -> list[Hit]:
    """The best ``limit`` of the pool, best first; each hit's score is the model's probability of
    relevance, its similarity its cosine to the query."""
    model = model or shipped_model()
    found = gather(store, dense_query, sparse_query, model.depth, pool_filter(filter), windows)
    return shown_hits(found, model, limit, filter)


def shown_hits(found: Gathered, model: LinearModel, limit: int, filter: SearchFilter | None) -> list[Hit]:
    """The best ``limit`` of the pool that ``filter`` shows, best first, each scored by the model."""
    shown: list[Hit] = []
    if limit <= 0:
        return shown
    for i, score in ordered(found, model):
        point = found.points.get(i)
        if point is None or not shows(filter, point.payload):
            continue
        shown.append(replace(point, score=score))  # only for what is shown: the pool is ~200 points
        if len(shown) >= limit:
            break
    return shown


def pool_filter(filter: SearchFilter | None) -> SearchFilter | None:
    """The filter a pool is gathered under: ``filter`` with what a dream hid let in (the module's
    docstring: hidden from what is shown, not from what ranks)."""
    return filter if filter is None or filter.include_merged else replace(filter, include_merged=True)


def shows(filter: SearchFilter | None, payload: Mapping[str, Any]) -> bool:
    """Whether a point of the pool is shown under ``filter``: unless a standing dream step hides it
    and ``filter`` does not ask for such memories."""
    return filter is None or filter.include_merged or payload.get(DREAM_KEY) not in HIDDEN_ROLES


def ordered(found: Gathered, model: LinearModel) -> list[tuple[str, float]]:
    """``(id, score)`` best first: the model's order, or for a query outside what it was trained on
    (``LinearModel.covers``) the hand-weighted fusion's, over the same lists."""
    if model.covers(found.coverage):
        return rank(found.candidates, model)
    fused = fuse(found.dense, found.sparse, "relative", alpha=adaptive_weight(found.coverage), head=HEAD)
    return [(hit.id, hit.score) for hit in fused]


@dataclass(frozen=True, slots=True)
class Gathered:
    """A query's pool as the model sees it, and the points it was read from."""

    candidates: list[Candidate]
    coverage: float  # the share of the query's BM25 terms that BM25's first hit holds
    points: dict[str, Hit]
    dense: list[Scored]  # the two lists as prefetched, best first
    sparse: list[Scored]


def gather(
    store: VectorStore,
    dense_query: Sequence[float],
    sparse_query: bm25.SparseVector,
    depth: int,
    filter: SearchFilter | None = None,
    windows: Sequence[Window] = (),
) -> Gathered:
    """Both lists ``depth`` deep, the pool's points read once, each a ``Candidate``."""
    found = store.prefetch(dense_query, sparse_query, limit=depth, filter=filter)
    ids = pool([h.id for h in found.dense], [h.id for h in found.sparse])
    # A point deleted since the prefetch is simply left out.
    points = {hit.id: hit for hit in store.score(dense_query, ids)} if ids else {}
    dense_rank = {h.id: r for r, h in enumerate(found.dense)}
    bm25_rank = {h.id: r for r, h in enumerate(found.sparse)}
    bm25_score = {h.id: h.score for h in found.sparse}
    candidates = [
        Candidate(
            id=i,
            similarity=float(points[i].similarity or 0.0),
            dense_rank=dense_rank.get(i),
            bm25_score=bm25_score.get(i),
            bm25_rank=bm25_rank.get(i),
            session=_session(points[i].payload),
            chars=indexed_chars(points[i].payload),
            in_window=within(_ts(points[i].payload), list(windows)),
        )
        for i in ids
        if i in points
    ]
    coverage = lexical_coverage(sparse_query, _sparse_of(store, found.sparse[0].id)) if found.sparse else 0.0
    return Gathered(candidates, coverage, points, found.dense, found.sparse)


def _sparse_of(store: VectorStore, point: str) -> bm25.SparseVector | None:
    """One point's BM25 vector (a small read: BM25's first hit, for the query's coverage)."""
    found = store.get([point], with_vectors=True)
    return found[0].sparse if found else None


def indexed_chars(payload: Mapping[str, Any]) -> int:
    """The length of the text a point was indexed from: its passage's span, else its text."""
    span = payload.get("span")
    if isinstance(span, list | tuple) and len(span) == 2 and all(isinstance(v, int) for v in span):
        return max(0, int(span[1]) - int(span[0]))
    text = payload.get("text")
    return len(text) if isinstance(text, str) else 0


def _session(payload: Mapping[str, Any]) -> str | None:
    """The point's session, with its site: two sites' agents may both name a session "default"."""
    session = payload.get("session")
    return f"{payload.get('site')}/{session}" if session not in (None, "") else None


def _ts(payload: Mapping[str, Any]) -> int | None:
    ts = payload.get("ts")
    return int(ts) if isinstance(ts, int | float) and not isinstance(ts, bool) else None
