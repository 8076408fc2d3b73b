"""Search: a query in, ranked episodes out, the same whether the CLI or the daemon runs it.

The pipeline, in order: the query is embedded twice (dense by the collection's own model, BM25 as
Qdrant computes it); the store runs a dense and a BM25 prefetch under the same filter, in one engine
call; the pool of both lists is ranked by the learned model (``sync.search.query.learned``, the default:
both lists' scores and ranks, the session's strength, the length, the time the query names), or
the two lists are fused by hand-set weights (``sync.search.query.fusion``: relative scores, or RRF); the
winners are read back with their payloads and cosine similarity; the fused scores are decayed by
age, gated by similarity (``sync.search.query.rank``); a long episode's passages are grouped under it, its
best passage ranking it and shown with it (``by_episode``);
near-duplicates collapse to their best member (on by default); then, on request, Voyage reranks the
survivors and MMR trades a little relevance for diversity. More candidates than asked for are
fetched, so that collapsing and MMR still leave ``limit`` results.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from typing import Final

from sync.search.embedders import bm25
from sync.search.embedders.base import Embedder
from sync.search.payload import DUPLICATE_KEY, PARENT_KEY, PASSAGE_KEY, SPAN_KEY, TEXT_KEY, TS_KEY, passage_count
from sync.search.query.fusion import Fusion, FusionSpec, fuse, lexical_coverage, spec_of
from sync.search.query.learned import LEARNED, Learned, learned_hybrid
from sync.search.query.query_time import windows
from sync.search.query.rank import Ranked, apply_decay, collapse_duplicates, mmr
from sync.search.query.rerank import Reranker
from sync.search.request import Passage, SearchFilter, SearchRequest, SearchResult
from sync.search.stores import Hit, Scored, VectorStore

# Where ``by_episode`` leaves which passage matched, in a result's payload (never stored).
MATCH_KEY: Final = "_match"

# λ = 0.5, the even trade of Carbonell & Goldstein's MMR: whoever asks for --mmr wants variety, and
# at 0.3 a near-twin with the same fused score still beats anything under 70% of the top score.
MMR_DIVERSITY: Final = 0.5

# How the dense and BM25 lists become one ranking: the learned model (the default), or a fusion.
Ranking = Learned | Fusion | FusionSpec
DEFAULT_RANKING: Final[Ranking] = LEARNED


def candidates_for(request: SearchRequest) -> int:
    """How many fused results to fetch: enough that collapsing and MMR still fill ``limit``."""
    return min(max(request.limit * 4, 40), 200)


def hybrid(
    store: VectorStore,
    dense_query: Sequence[float],
    sparse_query: bm25.SparseVector,
    limit: int,
    filter: SearchFilter | None = None,
    fusion: Ranking = DEFAULT_RANKING,
) -> list[Hit]:
    """The best ``limit`` of the dense and BM25 lists, ranked (learned) or fused, best first: each
    hit's score is its ranking score, its similarity its cosine to the query."""
    if fusion == LEARNED:
        return learned_hybrid(store, dense_query, sparse_query, limit, filter)
    spec = spec_of(fusion)
    found = store.prefetch(dense_query, sparse_query, limit=max(spec.depth, limit), filter=filter)
    weight = spec.weight(best_lexical_coverage(store, sparse_query, found.sparse) if spec.adaptive else None)
    winners = fuse(found.dense, found.sparse, spec.method, alpha=weight, k=spec.k, rrf_weight=weight, head=spec.head)[
        :limit
    ]
    # A winner deleted since the prefetch is simply left out.
    points = {hit.id: hit for hit in store.score(dense_query, [w.id for w in winners])}
    return [replace(points[w.id], score=w.score) for w in winners if w.id in points]


def best_lexical_coverage(store: VectorStore, sparse_query: bm25.SparseVector, sparse: Sequence[Scored]) -> float:
    """How much of the query BM25's first hit holds (``sync.search.query.fusion.lexical_coverage``),
    read from that point's own sparse vector: one point, so one small read. 0 when BM25 found
    nothing."""
    if not sparse:
        return 0.0
    points = store.get([sparse[0].id], with_vectors=True)
    return lexical_coverage(sparse_query, points[0].sparse) if points else 0.0


def by_episode(store: VectorStore, hits: Sequence[Hit]) -> list[Hit]:
    """Hits (best first) as episodes: each episode once, at its best passage's place and score, with
    its own payload (read for those whose best hit was a further passage) and that passage's index
    and span under ``MATCH_KEY``. An episode deleted since the search is left out."""
    best: dict[str, Hit] = {}
    for hit in hits:
        best.setdefault(str(hit.payload.get(PARENT_KEY) or hit.id), hit)
    wanted = [episode for episode, hit in best.items() if hit.id != episode]
    held = {p.id: p.payload for p in store.get(wanted)} if wanted else {}
    out: list[Hit] = []
    for episode, hit in best.items():
        payload = hit.payload if hit.id == episode else held.get(episode)
        if payload is None:
            continue
        match = {MATCH_KEY: (int(hit.payload.get(PASSAGE_KEY) or 0), hit.payload.get(SPAN_KEY))}
        out.append(replace(hit, id=episode, payload=payload | match))
    return out


def _hits(
    store: VectorStore, embedder: Embedder, request: SearchRequest, wanted: int, fusion: Ranking, now_ms: int
) -> list[Hit]:
    if request.mode == "bm25":
        return store.sparse_search(bm25.embed_query(request.query), limit=wanted, filter=request.filter)
    dense = embedder.embed_query(request.query)
    if request.mode == "dense":
        return store.dense_search(dense, limit=wanted, filter=request.filter)
    sparse = bm25.embed_query(request.query)
    if fusion == LEARNED:
        return learned_hybrid(store, dense, sparse, wanted, request.filter, windows=windows(request.query, now_ms))
    return hybrid(store, dense, sparse, wanted, request.filter, fusion)


def search(
    store: VectorStore,
    embedder: Embedder,
    request: SearchRequest,
    *,
    now_ms: int,
    reranker: Reranker | None = None,
    fusion: Ranking = DEFAULT_RANKING,
    decay: bool = True,
) -> list[SearchResult]:
    request.check()
    if request.rerank and reranker is None:
        raise ValueError("--rerank needs a Voyage API key (warm.rerank_api_key or MEMSYNC_WARM__RERANK_API_KEY)")
    hits = by_episode(store, _hits(store, embedder, request, candidates_for(request), fusion, now_ms))
    ranked = [Ranked(h.id, h.score, h.similarity, _int(h.payload.get(TS_KEY)), h.payload) for h in hits]
    if decay:
        ranked = apply_decay(ranked, now_ms)
    members = Counter(str(r.payload.get(DUPLICATE_KEY) or r.id) for r in ranked)
    if request.collapse:
        ranked = collapse_duplicates(ranked, DUPLICATE_KEY)
    if request.rerank and reranker is not None and ranked:
        order = reranker.rerank(request.query, [str(r.payload.get(TEXT_KEY, "")) for r in ranked])
        ranked = [replace(ranked[index], score=score) for index, score in order]
    if request.mmr and ranked:
        vectors = {p.id: p.dense for p in store.get([r.id for r in ranked], with_vectors=True)}
        ranked = mmr([replace(r, vector=vectors.get(r.id)) for r in ranked], request.limit, MMR_DIVERSITY)
    return [
        _result(r, members[str(r.payload.get(DUPLICATE_KEY) or r.id)] - 1 if request.collapse else 0)
        for r in ranked[: request.limit]
    ]


def _int(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _result(r: Ranked, duplicates: int) -> SearchResult:
    return SearchResult.from_payload(
        r.id, r.payload, score=r.score, similarity=r.similarity, duplicates=duplicates, passage=_passage(r.payload)
    )


def _passage(payload: dict[str, object]) -> Passage | None:
    """The matching passage of a long episode; None for an episode of one passage."""
    count, match, text = passage_count(payload), payload.get(MATCH_KEY), str(payload.get(TEXT_KEY, ""))
    if count == 1 or not isinstance(match, tuple):
        return None
    index, span = match
    if not (isinstance(span, list | tuple) and len(span) == 2):
        return None
    start, end = int(span[0]), int(span[1])
    return Passage(index=int(index), count=count, start=start, end=end, text=text[start:end])
