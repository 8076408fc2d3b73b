"""The search pipeline's options on the real engine and the real local model: Voyage reranking
(against a local server speaking Voyage's rerank API), MMR, and the request's wire form."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import edge_store_of
from fake_providers import KEY, FakeProvider, serve
from test_warm_rerank import ranking, rerank_respond

from sync.resilience.retry import RetryPolicy
from sync.search.embedders import bm25
from sync.search.embedders.local import LocalEmbedder
from sync.search.query.pipeline import Ranking, candidates_for, search
from sync.search.query.ranking.rerank import VoyageReranker
from sync.search.request import SearchRequest, SearchResult, when_words
from sync.search.stores import EdgeStore, SearchFilter, WarmPoint, point_id

NOW_MS = 1_790_000_000_000
TEXTS = [
    "The daemon logs every sync to the journal.",
    "Restart the sync daemon after editing its config file.",
    "Edit the config, then restart the daemon so the sync picks it up.",
    "Rotate the TLS certificate on the edge proxy.",
    "Rotate the TLS certificate on the edge proxy!",
    "Rotate the TLS certificates on the edge proxy.",
]


@pytest.fixture
def store(tmp_path: Path, local: LocalEmbedder) -> Iterator[EdgeStore]:
    opened = EdgeStore(tmp_path / "q")
    opened.open_or_create("c", local.name, local.dims)
    vectors = local.embed_documents(TEXTS)
    opened.upsert(
        [
            WarmPoint(
                point_id("laptop", str(i)),
                vector,
                bm25.embed_document(text),
                {"site": "laptop", "sourceId": str(i), "text": text, "ts": NOW_MS, "tags": []}
                | ({"duplicateOf": point_id("laptop", "3")} if i in (4, 5) else {}),
            )
            for i, (text, vector) in enumerate(zip(TEXTS, vectors, strict=True))
        ]
    )
    yield opened
    opened.close()


@pytest.fixture
def voyage() -> Iterator[FakeProvider]:
    yield from serve(rerank_respond)


def test_rerank_orders_the_candidates_as_voyage_does(
    store: EdgeStore, local: LocalEmbedder, voyage: FakeProvider
) -> None:
    reranker = VoyageReranker(KEY, base_url=f"{voyage.url}/v1", retry=RetryPolicy(initial=0.01))
    query = "restart the sync daemon after a config edit"
    plain = search(store, local, SearchRequest(query, limit=3), now_ms=NOW_MS)
    reranked = search(store, local, SearchRequest(query, limit=3, rerank=True), now_ms=NOW_MS, reranker=reranker)
    (request,) = voyage.requests
    assert request.body["query"] == query
    assert request.body["model"] == "rerank-2.5"
    sent: list[str] = request.body["documents"]
    assert len(sent) == 4  # every candidate left after collapsing (the three TLS twins count once)
    expected = [sent[i] for i, _ in ranking(query, sent)][:3]
    assert [r.text for r in reranked] == expected
    assert [r.score for r in reranked] == sorted((r.score for r in reranked), reverse=True)
    assert len(plain) == 3


def test_rerank_without_a_voyage_key_is_a_clear_error(store: EdgeStore, local: LocalEmbedder) -> None:
    with pytest.raises(ValueError, match="needs a Voyage API key"):
        search(store, local, SearchRequest("daemon", rerank=True), now_ms=NOW_MS)


def test_mmr_trades_a_twin_for_something_different(store: EdgeStore, local: LocalEmbedder) -> None:
    query = "rotate the TLS certificate on the proxy and restart the daemon"
    twins = {3, 4, 5}
    # Floor 0: three results whatever their relevance, so that MMR's choice among them shows.
    plain = search(store, local, SearchRequest(query, limit=3, collapse=False, floor=0.0), now_ms=NOW_MS)
    diverse = search(store, local, SearchRequest(query, limit=3, collapse=False, mmr=True, floor=0.0), now_ms=NOW_MS)
    assert len(diverse) == 3
    assert sum(int(r.source_id) in twins for r in diverse) < sum(int(r.source_id) in twins for r in plain)


def test_ranking_is_learned_by_default_relative_and_rrf_on_request(store: EdgeStore, local: LocalEmbedder) -> None:
    query = "restart the sync daemon after editing its config file"  # episode 1, word for word
    learned = search(store, local, SearchRequest(query, limit=3), now_ms=NOW_MS)
    relative = search(store, local, SearchRequest(query, limit=3), now_ms=NOW_MS, fusion="relative")
    rrf = search(store, local, SearchRequest(query, limit=3), now_ms=NOW_MS, fusion="rrf")
    assert learned[0].source_id == relative[0].source_id == rrf[0].source_id == "1"
    # The learned score is the model's probability of relevance, the similarity still the cosine.
    assert all(0.0 < r.score < 1.0 for r in learned)
    assert learned[0].similarity == pytest.approx(relative[0].similarity)
    assert relative[0].when is not None
    assert relative[0].when == when_words(relative[0].ts)
    # First in both lists: relative A x 1 + (1 - A) x 1; RRF 1/(0+2) + 1/(0+2). Nothing decays (ts = now).
    assert relative[0].score == pytest.approx(1.0)
    assert rrf[0].score == pytest.approx(1.0)
    [doc] = local.embed_documents([TEXTS[1]])
    cosine = sum(q * d for q, d in zip(local.embed_query(query), doc, strict=True))
    assert relative[0].similarity == pytest.approx(cosine, abs=1e-5)
    # Below the top the two differ: RRF's scores are sums of 1/(rank + 2), relative's are not.
    ranks = range(len(TEXTS))
    possible = [1 / (a + 2) for a in ranks] + [1 / (a + 2) + 1 / (b + 2) for a in ranks for b in ranks]
    assert all(any(r.score == pytest.approx(p) for p in possible) for r in rrf)
    assert [r.score for r in relative] != [r.score for r in rrf]


@pytest.mark.parametrize(("limit", "expected"), [(1, 40), (10, 40), (25, 100), (100, 200)])
def test_candidates_leave_room_for_collapse_and_mmr(limit: int, expected: int) -> None:
    assert candidates_for(SearchRequest("q", limit=limit)) == expected


def test_the_wire_form_round_trips_and_bad_requests_are_named() -> None:
    request = SearchRequest("q", 5, SearchFilter(site="vm", tags=("a", "b"), since_ms=7), False, True, True, "dense")
    assert SearchRequest.from_wire(request.to_wire()) == request
    result = SearchResult("p", "vm", "3", 0.5, 0.9, 7, "coder", "s", "t", ["a"], 1.0, True, "text", 2)
    assert SearchResult.from_wire(result.to_wire()) == result
    bad: list[tuple[dict[str, Any], str]] = [
        ({}, "malformed search request"),
        ({"query": " "}, "the query is empty"),
        ({"query": "q", "limit": 0}, "limit must be 1..100"),
        ({"query": "q", "limit": "many"}, "malformed search request"),
        ({"query": "q", "mode": "fuzzy"}, "mode must be hybrid, dense or bm25"),
    ]
    for wire, message in bad:
        with pytest.raises(ValueError, match=message):
            SearchRequest.from_wire(wire)


@pytest.mark.parametrize(
    ("ts_ms", "words"),
    [
        (None, None),
        (1_683_554_160_000, "8 May 2023, 1:56 pm UTC"),
        (1_704_067_200_000, "1 January 2024, 12:00 am UTC"),
        (1_704_110_400_000, "1 January 2024, 12:00 pm UTC"),
    ],
)
def test_a_result_says_when_in_words(ts_ms: int | None, words: str | None) -> None:
    """A temporal question ("when did ...?") is answered from the memory's date, as a person writes it."""
    assert when_words(ts_ms) == words
    result = SearchResult("p", "vm", "3", 0.5, 0.9, ts_ms, None, None, None, [], None, None, "text", when=words)
    assert result.to_wire()["when"] == words


def test_salience_moves_weaker_matches_by_the_fleets_use_and_never_a_close_one(
    store: EdgeStore, local: LocalEmbedder
) -> None:
    """Through the real pipeline: the salience lookup gets each result's (site, sourceId, ts); a
    much-used memory rises among weak matches, and the close match stays first however unused."""
    query = TEXTS[1]  # episode 1 itself: a close match
    request = SearchRequest(query, limit=3, floor=0.0)
    asked: list[tuple[str, str, int | None]] = []

    def salience(site: str, source_id: str, ts: int | None) -> float:
        asked.append((site, source_id, ts))
        return {"1": 0.1, "0": 1.0}.get(source_id, 0.5)

    plain = search(store, local, request, now_ms=NOW_MS, fusion="relative")
    weighed = search(store, local, request, now_ms=NOW_MS, fusion="relative", salience=salience)
    assert ("laptop", "1", NOW_MS) in asked
    assert plain[0].source_id == weighed[0].source_id == "1"  # close (cosine >= 0.85): never moved
    assert plain[0].score == weighed[0].score
    used = next(r for r in weighed if r.source_id == "0")
    before = next(r for r in plain if r.source_id == "0")
    assert used.score == pytest.approx(before.score * 1.1)  # most used: +10% (its cosine is under 0.85)


@pytest.mark.parametrize("fusion", ["learned", "relative", "rrf"])
def test_what_a_dream_hid_leaves_the_results_without_reranking_the_rest(
    tmp_path: Path, local: LocalEmbedder, fusion: Ranking
) -> None:
    """A fold's member is left out of what is shown, not out of what ranks: the best match of the
    query is hidden, and every memory shown keeps the place and the score it has beside it (its
    session's support, its share of the best BM25 score, its rank in each list)."""
    turns = [
        ("Jon: Hey Gina! How's the store going? I gotta tell you about my biz.", {"session": "s4", "dream": "merged"}),
        ("Gina: Hey Jon! The store's doing great! It's a wild ride.", {"session": "s4"}),
        ("Gina: Thanks! Store's going good, keeping up with fashion trends.", {"session": "s7"}),
        ("Jon: Whoa, your store looks great! All your hard work paid off.", {"session": "s2"}),
        ("Gina: I launched an ad campaign for my clothing store.", {"session": "s8"}),
        ("Jon: I lost my job as a banker and want to open a dance studio.", {"session": "s1"}),
    ]
    store = edge_store_of(tmp_path / "q", local, turns, NOW_MS)
    try:
        query = "How is Gina's store doing?"
        shown = SearchRequest(query, limit=5, floor=0.0, collapse=False)
        every = replace(shown, limit=6, filter=SearchFilter(include_merged=True))
        default = search(store, local, shown, now_ms=NOW_MS, fusion=fusion)
        everything = search(store, local, every, now_ms=NOW_MS, fusion=fusion)
        assert everything[0].source_id == "0", "the hidden turn is the query's best match"
        assert "0" not in [r.source_id for r in default]
        expected = [r for r in everything if r.source_id != "0"]
        assert [r.source_id for r in default] == [r.source_id for r in expected][: len(default)]
        assert len(default) == min(5, len(expected))
        assert [r.score for r in default] == pytest.approx([r.score for r in expected][: len(default)], rel=1e-9)
    finally:
        store.close()
