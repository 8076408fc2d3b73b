"""Tier: unit. Hybrid search ranked by the learned model (sync.search.query.ranking.learned) on the real engine
(qdrant-edge, in process): what it reads into each candidate, when the fusion ranks instead, and the
shipped model through ``hybrid``'s default."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from sync.search.embedders import bm25
from sync.search.query.pipeline import hybrid
from sync.search.query.query_time import windows
from sync.search.query.ranking.learned import gather, indexed_chars, learned_hybrid
from sync.search.query.ranking.rerank_model import LinearModel
from sync.search.stores import EdgeStore, Hit, WarmPoint, point_id

DIMS = 4
DAY = 86_400_000
NOW = 1_790_000_000_000
# (id, session, text, dense vector, days old)
EPISODES = [
    ("1", "s1", "deploy the payments service with blue green rollout", [1.0, 0.0, 0.0, 0.0], 1),
    ("2", "s1", "payments rollout finished, error rate flat", [0.9, 0.1, 0.0, 0.0], 1),
    ("3", "s2", "payments dashboard colours", [0.0, 1.0, 0.0, 0.0], 30),
    ("4", "s3", "rotate the TLS certificate on the proxy", [0.0, 0.0, 1.0, 0.0], 400),
    (
        "5",
        "s3",
        "a much longer note about the proxy certificate, its chain and the renewal job that failed",
        [0.0, 0.0, 0.9, 0.1],
        400,
    ),
]


def model(weights: dict[str, float], min_coverage: float = 0.0) -> LinearModel:
    names = tuple(weights)
    return LinearModel(names, (0.0,) * len(names), (1.0,) * len(names), tuple(weights.values()), 0.0, 10, min_coverage)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EdgeStore]:
    opened = EdgeStore(tmp_path / "q")
    opened.open_or_create("c", "test-model", DIMS)
    opened.upsert(
        [
            WarmPoint(
                point_id("laptop", sid),
                vector,
                bm25.embed_document(text),
                {
                    "site": "laptop",
                    "sourceId": sid,
                    "session": session,
                    "text": text,
                    "ts": NOW - age * DAY,
                    "tags": [],
                },
            )
            for sid, session, text, vector, age in EPISODES
        ]
    )
    yield opened
    opened.close()


def ids(hits: Sequence[Hit]) -> list[str]:
    return [str(h.payload["sourceId"]) for h in hits]


def test_gather_reads_both_lists_into_each_candidate(store: EdgeStore) -> None:
    found = gather(store, [1.0, 0.0, 0.0, 0.0], bm25.embed_query("payments rollout"), 10)
    by_source = {found.points[c.id].payload["sourceId"]: c for c in found.candidates}
    assert set(by_source) == {"1", "2", "3", "4", "5"}  # the dense list holds every point
    first, second, dashboard, tls = by_source["1"], by_source["2"], by_source["3"], by_source["4"]
    assert first.dense_rank == 0
    assert first.similarity == pytest.approx(1.0)
    assert {first.bm25_rank, second.bm25_rank} == {0, 1}  # both hold both words
    assert dashboard.bm25_rank == 2
    assert dashboard.bm25_score is not None
    assert tls.bm25_rank is None
    assert tls.bm25_score is None
    assert first.session == "laptop/s1"
    assert first.chars == len(EPISODES[0][2])
    assert found.coverage == 1.0  # BM25's first hit holds both words


def test_the_model_orders_the_pool_with_probabilities(store: EdgeStore) -> None:
    # BM25 alone would put 1 and 2 first; a model that reads only the length puts 5 first.
    hits = learned_hybrid(
        store, [1.0, 0.0, 0.0, 0.0], bm25.embed_query("payments rollout"), 3, model=model({"length": 1.0})
    )
    assert ids(hits) == ["5", "1", "2"]
    assert all(0 < h.score < 1 for h in hits)
    assert hits[1].similarity == pytest.approx(1.0)  # the cosine, not the score


def test_the_session_lifts_a_weak_candidate_beside_a_strong_one(store: EdgeStore) -> None:
    # "dashboard" (3) and 2 are equally far in meaning from this query; 2's session holds the best hit.
    query = [0.5, 0.5, 0.0, 0.0]
    hits = learned_hybrid(store, query, bm25.embed_query("zzz"), 5, model=model({"session_best": 1.0}))
    assert ids(hits)[:2] == ["1", "2"] or ids(hits)[:2] == ["2", "1"]
    assert ids(hits).index("3") > ids(hits).index("2")


def test_a_window_the_query_names_marks_its_candidates(store: EdgeStore) -> None:
    named = windows("what did we do yesterday", NOW)
    hits = learned_hybrid(
        store, [0.0, 0.0, 1.0, 0.0], bm25.embed_query("certificate"), 2, windows=named, model=model({"in_window": 5.0})
    )
    assert set(ids(hits)) == {"1", "2"}  # the only episodes of yesterday, whatever the query's words


def test_a_query_outside_the_training_keeps_the_fusion(store: EdgeStore) -> None:
    # One of three words held by BM25's first hit: below min_coverage, so the fusion's order, exactly.
    dense, sparse = [0.0, 0.0, 1.0, 0.0], bm25.embed_query("payments kubernetes zebra")
    gated = learned_hybrid(store, dense, sparse, 5, model=model({"length": 1.0}, min_coverage=0.5))
    fused = hybrid(store, dense, sparse, 5, fusion="relative")
    assert [h.id for h in gated] == [h.id for h in fused]
    assert [h.score for h in gated] == pytest.approx([h.score for h in fused])
    ungated = learned_hybrid(store, dense, sparse, 5, model=model({"length": 1.0}, min_coverage=0.3))
    assert ids(ungated)[0] == "5"


def test_hybrid_ranks_with_the_shipped_model_by_default(store: EdgeStore) -> None:
    hits = hybrid(store, [1.0, 0.0, 0.0, 0.0], bm25.embed_query("payments rollout"), 5)
    assert ids(hits)[:2] in (["1", "2"], ["2", "1"])
    assert all(0 < h.score < 1 for h in hits)


@pytest.mark.parametrize(
    ("payload", "chars"),
    [
        ({"text": "abc"}, 3),
        ({"text": "abcdef", "span": [2, 5]}, 3),  # a passage: its span
        ({"span": [10, 4]}, 0),
        ({"span": ["a", 3], "text": "xy"}, 2),
        ({}, 0),
    ],
)
def test_indexed_chars(payload: dict[str, object], chars: int) -> None:
    assert indexed_chars(payload) == chars
