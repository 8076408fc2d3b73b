"""Search: a query in, ranked episodes out, the same whether the CLI or the daemon runs it.

The pipeline, in order: the query is embedded twice (dense by the collection's own model, BM25 as
Qdrant computes it); the store runs a dense and a BM25 prefetch under the same filter, in one engine
call; the pool of both lists is ranked by the learned model (``sync.search.query.ranking.learned``, the default:
both lists' scores and ranks, the session's strength, the length, the time the query names), or
the two lists are fused by hand-set weights (``sync.search.query.ranking.fusion``: relative scores, or RRF); the
winners are read back with their payloads and cosine similarity; the fused scores are decayed by
age, gated by similarity (``sync.search.query.ranking.rank``); a long episode's passages are grouped under it, its
best passage ranking it and shown with it (``by_episode``);
near-duplicates collapse to their best member (on by default); then, on request, Voyage reranks the
survivors and MMR trades a little relevance for diversity. More candidates than asked for are
fetched, so that collapsing and MMR still leave ``limit`` results.

``answer`` then judges the first ``limit`` (``sync.search.query.judgement``): why each ranked (the
identifiers it holds verbatim, the query terms its passage holds, its cosine, its places in both
lists), how relevant it is (a probability comparable across queries), and it cuts those under the
floor; it says which identifiers the query names that no memory holds
(``sync.search.query.presence``). ``search`` is ``answer``'s results.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from sync.identifiers import held, identifiers, lookalikes, siblings
from sync.policy.salience import DEFAULT_PARAMS
from sync.search.embedders import bm25
from sync.search.embedders.base import Embedder
from sync.search.payload import (
    DUPLICATE_KEY,
    PARENT_KEY,
    PASSAGE_KEY,
    SITE_KEY,
    SOURCE_ID_KEY,
    SPAN_KEY,
    TEXT_KEY,
    TS_KEY,
    memory_type_of,
    passage_count,
)
from sync.search.query.hops import HOP_SEEDS, follow_one_hop, session_neighbours
from sync.search.query.judgement import (
    Calibration,
    cutoff,
    pool_median,
    relevance,
    shipped_calibration,
    with_sessions,
)
from sync.search.query.presence import presence
from sync.search.query.query_time import Window, windows, within
from sync.search.query.ranking.fusion import Fusion, FusionSpec, fuse, lexical_coverage, spec_of
from sync.search.query.ranking.learned import (
    LEARNED,
    Learned,
    gather,
    learned_hybrid,
    pool_filter,
    shipped_model,
    shown_hits,
    shows,
)
from sync.search.query.ranking.rank import Ranked, apply_decay, apply_salience, collapse_duplicates, mmr
from sync.search.query.ranking.rerank import Reranker
from sync.search.query.ranking.rerank_model import LinearModel
from sync.search.request import (
    Passage,
    Ranker,
    SearchAnswer,
    SearchFilter,
    SearchRequest,
    SearchResult,
    Why,
    outcome_matches,
)
from sync.search.stores import Hit, Scored, VectorStore

# Where ``by_episode`` leaves which passage matched, in a result's payload (never stored): its
# index and span, and its point's id.
MATCH_KEY: Final = "_match"
MATCH_POINT_KEY: Final = "_point"
NAMED_MAX: Final = 8  # identifiers of one query judged at most (a pasted log names dozens)

# λ = 0.5, the even trade of Carbonell & Goldstein's MMR: whoever asks for --mmr wants variety, and
# at 0.3 a near-twin with the same fused score still beats anything under 70% of the top score.
MMR_DIVERSITY: Final = 0.5

# How the dense and BM25 lists become one ranking: the learned model (the default, or one given:
# a benchmark's model trained without the conversations it measures), or a fusion.
Ranking = Learned | LinearModel | Fusion | FusionSpec
DEFAULT_RANKING: Final[Ranking] = LEARNED
# A memory's salience from the fleet's use of it (``sync.policy.salience``), by (site, sourceId, ts):
# given, the ranking weighs it (``rank.apply_salience``), gated by similarity; None, it does not.
SalienceOf = Callable[[str, str, int | None], float]


def candidates_for(request: SearchRequest) -> int:
    """How many fused results to fetch: enough that collapsing and MMR still fill ``limit``, and
    (the types and the outcome are read after the store's filter) that such a filter still finds some."""
    wide = 4 if request.filter.types or request.filter.outcome else 1
    return min(max(request.limit * 4, 40) * wide, 200)


@dataclass(frozen=True, slots=True)
class Pool:
    """What the ranking saw of a query: its ranked points, what ranked them, the two lists it drew
    from (the dense list's scores are cosines) and every payload it read."""

    hits: list[Hit]
    ranker: Ranker
    dense: list[Scored] = field(default_factory=list)
    sparse: list[Scored] = field(default_factory=list)
    payloads: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


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
    if isinstance(fusion, LinearModel):
        return learned_hybrid(store, dense_query, sparse_query, limit, filter, model=fusion)
    if fusion == LEARNED:
        return learned_hybrid(store, dense_query, sparse_query, limit, filter)
    return _fused(store, dense_query, sparse_query, limit, filter, spec_of(fusion)).hits


def _fused(
    store: VectorStore,
    dense_query: Sequence[float],
    sparse_query: bm25.SparseVector,
    limit: int,
    filter: SearchFilter | None,
    spec: FusionSpec,
) -> Pool:
    # What a dream hid is fused with the rest and left out of what is shown (``learned.pool_filter``).
    found = store.prefetch(dense_query, sparse_query, limit=max(spec.depth, limit), filter=pool_filter(filter))
    weight = spec.weight(best_lexical_coverage(store, sparse_query, found.sparse) if spec.adaptive else None)
    fused = fuse(found.dense, found.sparse, spec.method, alpha=weight, k=spec.k, rrf_weight=weight, head=spec.head)
    hits: list[Hit] = []
    start = 0
    while len(hits) < limit and start < len(fused):  # the winners read until ``limit`` are shown
        winners = fused[start : start + limit - len(hits)]
        start += len(winners)
        # A winner deleted since the prefetch is simply left out.
        points = {hit.id: hit for hit in store.score(dense_query, [w.id for w in winners])}
        hits += [
            replace(points[w.id], score=w.score)
            for w in winners
            if w.id in points and shows(filter, points[w.id].payload)
        ]
    return Pool(hits, "fusion", found.dense, found.sparse, {h.id: h.payload for h in hits})


def _learned(
    store: VectorStore,
    dense_query: Sequence[float],
    sparse_query: bm25.SparseVector,
    limit: int,
    filter: SearchFilter | None,
    found_windows: Sequence[Window],
    model: LinearModel,
) -> Pool:
    """``learned_hybrid``, keeping what the judgement reads: the lists, the pool's payloads, and
    whether the model ranked (or, for a query it does not cover, the fusion)."""
    found = gather(store, dense_query, sparse_query, model.depth, pool_filter(filter), found_windows)
    hits = shown_hits(found, model, limit, filter)
    ranker: Ranker = "learned" if model.covers(found.coverage) else "fusion"
    return Pool(hits, ranker, found.dense, found.sparse, {i: h.payload for i, h in found.points.items()})


def best_lexical_coverage(store: VectorStore, sparse_query: bm25.SparseVector, sparse: Sequence[Scored]) -> float:
    """How much of the query BM25's first hit holds (``sync.search.query.ranking.fusion.lexical_coverage``),
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
        match = {
            MATCH_KEY: (int(hit.payload.get(PASSAGE_KEY) or 0), hit.payload.get(SPAN_KEY)),
            MATCH_POINT_KEY: hit.id,
        }
        out.append(replace(hit, id=episode, payload=payload | match))
    return out


def _pool(
    store: VectorStore, embedder: Embedder, request: SearchRequest, wanted: int, fusion: Ranking, now_ms: int
) -> Pool:
    if request.mode == "bm25":
        hits = store.sparse_search(bm25.embed_query(request.query), limit=wanted, filter=request.filter)
        return Pool(hits, "bm25", [], [Scored(h.id, h.score) for h in hits], {h.id: h.payload for h in hits})
    dense = embedder.embed_query(request.query)
    if request.mode == "dense":
        hits = store.dense_search(dense, limit=wanted, filter=request.filter)
        return Pool(hits, "dense", [Scored(h.id, h.score) for h in hits], [], {h.id: h.payload for h in hits})
    sparse = bm25.embed_query(request.query)
    if isinstance(fusion, LinearModel) or fusion == LEARNED:
        model = fusion if isinstance(fusion, LinearModel) else shipped_model()
        return _learned(store, dense, sparse, wanted, request.filter, windows(request.query, now_ms), model)
    return _fused(store, dense, sparse, wanted, request.filter, spec_of(fusion))


def search(
    store: VectorStore,
    embedder: Embedder,
    request: SearchRequest,
    *,
    now_ms: int,
    reranker: Reranker | None = None,
    fusion: Ranking = DEFAULT_RANKING,
    decay: bool = True,
    salience: SalienceOf | None = None,
) -> list[SearchResult]:
    """``answer``'s results."""
    return answer(
        store, embedder, request, now_ms=now_ms, reranker=reranker, fusion=fusion, decay=decay, salience=salience
    ).results


@dataclass(frozen=True, slots=True)
class Shown:
    """What the ranking shows of a query, before any judgement: the first ``limit`` episodes in
    order, the pool they came from, the ranker's own score for each, how many near-duplicates each
    stands for."""

    ranked: list[Ranked]
    pool: Pool
    ranking_score: Mapping[str, float]
    duplicates: Mapping[str, int]


def rank(
    store: VectorStore,
    embedder: Embedder,
    request: SearchRequest,
    *,
    now_ms: int,
    reranker: Reranker | None = None,
    fusion: Ranking = DEFAULT_RANKING,
    decay: bool = True,
    salience: SalienceOf | None = None,
) -> Shown:
    """The query's first ``limit`` episodes, ranked (the pipeline of the module's docstring)."""
    request.check()
    if request.rerank and reranker is None:
        raise ValueError("--rerank needs a Voyage API key (warm.rerank_api_key or MEMSYNC_WARM__RERANK_API_KEY)")
    pool = _pool(store, embedder, request, candidates_for(request), fusion, now_ms)
    hits = by_episode(store, pool.hits)
    if request.filter.types:
        hits = [h for h in hits if memory_type_of(h.payload) in request.filter.types]
    if request.filter.outcome is not None:
        hits = [h for h in hits if outcome_matches(request.filter.outcome, h.payload)]
    ranked = [Ranked(h.id, h.score, h.similarity, _int(h.payload.get(TS_KEY)), h.payload) for h in hits]
    ranking_score = {r.id: r.score for r in ranked}  # before the decay: what the ranker said
    if decay:
        ranked = apply_decay(ranked, now_ms)
    if salience is not None:
        ranked = apply_salience(ranked, lambda r: _salience_of(salience, r), initial=DEFAULT_PARAMS.initial)
    members = Counter(str(r.payload.get(DUPLICATE_KEY) or r.id) for r in ranked)
    if request.collapse:
        ranked = collapse_duplicates(ranked, DUPLICATE_KEY)
    if request.rerank and reranker is not None and ranked:
        order = reranker.rerank(request.query, [str(r.payload.get(TEXT_KEY, "")) for r in ranked])
        ranked = [replace(ranked[index], score=score) for index, score in order]
    if request.mmr and ranked:
        vectors = {p.id: p.dense for p in store.get([r.id for r in ranked], with_vectors=True)}
        ranked = mmr([replace(r, vector=vectors.get(r.id)) for r in ranked], request.limit, MMR_DIVERSITY)
    if request.follow and ranked:
        seeds = ranked[:HOP_SEEDS]
        ranked = follow_one_hop(ranked, session_neighbours(store, seeds), HOP_SEEDS)
    shown = ranked[: request.limit]
    duplicates = {
        r.id: members[str(r.payload.get(DUPLICATE_KEY) or r.id)] - 1 if request.collapse else 0 for r in shown
    }
    return Shown(shown, pool, ranking_score, duplicates)


def answer(
    store: VectorStore,
    embedder: Embedder,
    request: SearchRequest,
    *,
    now_ms: int,
    reranker: Reranker | None = None,
    fusion: Ranking = DEFAULT_RANKING,
    decay: bool = True,
    calibration: Calibration | None = None,
    salience: SalienceOf | None = None,
) -> SearchAnswer:
    """The query's results, judged and cut at the floor, and the identifiers it names that no memory holds."""
    shown = rank(
        store, embedder, request, now_ms=now_ms, reranker=reranker, fusion=fusion, decay=decay, salience=salience
    )
    return judge(store, embedder.name, request, shown, now_ms=now_ms, calibration=calibration)


def judge(
    store: VectorStore,
    model: str,
    request: SearchRequest,
    shown: Shown,
    *,
    now_ms: int,
    calibration: Calibration | None = None,
) -> SearchAnswer:
    """The ranking's results judged (``sync.search.query.judgement``: why each ranked, how relevant
    it is), cut at the floor, and the query's identifiers no memory holds (``presence``); ``model``:
    the embedder's name, whose cosine floor relevance reads."""
    pool = shown.pool
    named = identifiers(request.query)[:NAMED_MAX]
    calibration = calibration or shipped_calibration()
    whys = explain(store, request.query, shown.ranked, pool, shown.ranking_score, named, windows(request.query, now_ms))
    median_cosine = pool_median([s.score for s in pool.dense])
    results = [
        replace(
            _result(r, shown.duplicates.get(r.id, 0)),
            why=why,
            relevance=relevance(why, calibration, model, median_cosine),
        )
        for r, why in zip(shown.ranked, whys, strict=True)
    ]
    judged = pool.ranker in ("learned", "fusion")
    floor = (calibration.cutoff if request.floor is None else request.floor) if judged else None
    kept = cutoff(results, floor) if floor is not None else None
    seen = [str(p.get(TEXT_KEY)) for p in pool.payloads.values() if isinstance(p.get(TEXT_KEY), str)]
    found = presence(store, named, [r.text for r in results] + seen, request.filter)
    alike = [a for r in results if r.why for a in r.why.lookalike if any(siblings(n, a) for n in found.absent)]
    return SearchAnswer(
        results=with_sessions(kept.kept if kept is not None else results),
        cut=kept.cut if kept is not None else 0,
        floor=floor,
        named=named,
        absent=found.absent,
        unchecked=found.unchecked,
        lookalikes=tuple(dict.fromkeys(alike)),
    )


def explain(
    store: VectorStore,
    query: str,
    shown: Sequence[Ranked],
    pool: Pool,
    ranking_score: Mapping[str, float],
    named: Sequence[str],
    found_windows: Sequence[Window],
) -> list[Why]:
    """Why each shown result ranked: what it holds of the query (its identifiers verbatim, the
    query's BM25 terms in its matched passage), its cosine and its lead on the query's nearest,
    its places in both lists, whether its time lies in the time the query names."""
    terms = bm25.query_terms(query)
    points = [str(r.payload.get(MATCH_POINT_KEY) or r.id) for r in shown]
    vectors = {p.id: p.sparse for p in store.get(points, with_vectors=True)} if points and terms else {}
    dense_rank = {s.id: n for n, s in enumerate(pool.dense, 1)}
    keyword_rank = {s.id: n for n, s in enumerate(pool.sparse, 1)}
    median_cosine = pool_median([s.score for s in pool.dense])
    out = []
    for r, point in zip(shown, points, strict=True):
        text = str(r.payload.get(TEXT_KEY, ""))
        sparse = vectors.get(point)
        holds = set(sparse.indices) if sparse is not None else set()
        words = tuple(word for word, tid in terms if tid in holds)
        out.append(
            Why(
                ranker=pool.ranker,
                score=ranking_score.get(r.id, r.score),
                exact=held(text, named),
                lookalike=lookalikes(text, named),
                terms=len(words),
                of=len(terms),
                words=words,
                meaning=r.similarity,
                lead=None if r.similarity is None or median_cosine is None else r.similarity - median_cosine,
                meaning_rank=dense_rank.get(point),
                keyword_rank=keyword_rank.get(point),
                in_window=within(r.ts, list(found_windows)),
            )
        )
    return out


def _salience_of(salience: SalienceOf, r: Ranked) -> float:
    return salience(str(r.payload.get(SITE_KEY) or ""), str(r.payload.get(SOURCE_ID_KEY) or ""), r.ts)


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
