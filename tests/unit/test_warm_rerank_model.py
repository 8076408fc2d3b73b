"""Tier: unit. The learned ranking's pure core (sync.search.query.ranking.rerank_model), from tables: features in,
order out; the model file's checks; the shipped model."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from sync.search.query.ranking.rerank_model import (
    DEPTH,
    FEATURES,
    SESSION_TOP,
    Candidate,
    LinearModel,
    features,
    first_stage,
    load_model,
    pool,
    rank,
)


def cand(
    id: str,
    sim: float = 0.5,
    dr: int | None = None,
    bs: float | None = None,
    br: int | None = None,
    session: str | None = None,
    chars: int = 100,
    window: bool = False,
) -> Candidate:
    return Candidate(id, sim, dr, bs, br, session, chars, window)


def one_feature(name: str, weight: float = 1.0) -> LinearModel:
    return LinearModel((name,), (0.0,), (1.0,), (weight,), 0.0)


# -- features ----------------------------------------------------------------------------------------
POOL = [
    cand("a", sim=0.8, dr=0, bs=None, br=None, session="s1", chars=0),
    cand("b", sim=0.6, dr=1, bs=10.0, br=0, session="s1", chars=99),
    cand("c", sim=0.4, dr=None, bs=5.0, br=1, session="s2", chars=9),
    cand("d", sim=0.7, dr=500, bs=None, br=None, session=None, window=True),
]


@pytest.mark.parametrize(
    ("i", "expected"),
    [
        # the best cosine has gap 0; BM25's share is over the best BM25 score; absent lists count as depth
        (0, {"dense_gap": 0.0, "bm25_share": 0.0, "dense_rank": 0.0, "bm25_rank": math.log1p(DEPTH), "in_bm25": 0.0}),
        (1, {"dense_gap": -0.2, "bm25_share": 1.0, "dense_rank": math.log1p(1), "bm25_rank": 0.0, "in_bm25": 1.0}),
        (2, {"dense_gap": -0.4, "bm25_share": 0.5, "dense_rank": math.log1p(DEPTH), "bm25_rank": math.log1p(1)}),
        # a rank past the depth counts as the depth; a window the query names
        (3, {"dense_rank": math.log1p(DEPTH), "in_window": 1.0, "session_best": 0.0, "session_hits": 0.0}),
        # length: log(1 + characters)
        (0, {"length": 0.0}),
        (1, {"length": math.log(100)}),
        # the session's other best first-stage score: a's partner is b (RRF of ranks 1 and 0), b's is a
        (0, {"session_best": 1 / 3 + 1 / 2, "session_hits": math.log1p(1)}),
        (1, {"session_best": 1 / 2, "session_hits": math.log1p(1)}),
        (2, {"session_best": 0.0, "session_hits": 0.0}),  # alone in its session
    ],
)
def test_features_of_a_pool(i: int, expected: dict[str, float]) -> None:
    row = features(POOL)[i]
    assert set(row) == set(FEATURES)
    for name, value in expected.items():
        assert row[name] == pytest.approx(value), name


def test_features_of_nothing() -> None:
    assert features([]) == []


def test_no_bm25_hit_anywhere_gives_zero_shares() -> None:
    rows = features([cand("a", dr=0), cand("b", dr=1)])
    assert [r["bm25_share"] for r in rows] == [0.0, 0.0]


def test_session_hits_counts_only_the_first_stage_top() -> None:
    # SESSION_TOP + 5 candidates of one session, ranked by the dense list: every one sees the top's
    # others (itself excluded when it is in the top).
    many = [cand(str(i).zfill(3), dr=i, session="s") for i in range(SESSION_TOP + 5)]
    rows = features(many)
    assert rows[0]["session_hits"] == pytest.approx(math.log1p(SESSION_TOP - 1))
    assert rows[-1]["session_hits"] == pytest.approx(math.log1p(SESSION_TOP))


@pytest.mark.parametrize(
    ("candidate", "expected"),
    [
        (cand("x", dr=0, br=0), 1.0),
        (cand("x", dr=0), 0.5),
        (cand("x", br=2), 0.25),
        (cand("x"), 0.0),
    ],
)
def test_first_stage_is_reciprocal_rank_fusion(candidate: Candidate, expected: float) -> None:
    assert first_stage(candidate) == pytest.approx(expected)


# -- order -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("model", "order"),
    [
        (one_feature("dense_gap"), ["a", "d", "b", "c"]),
        (one_feature("bm25_share"), ["b", "c", "a", "d"]),  # a and d tie at 0: by id
        (one_feature("length"), ["d", "b", "c", "a"]),
        (one_feature("in_window"), ["d", "a", "b", "c"]),
        (one_feature("dense_gap", -1.0), ["c", "b", "d", "a"]),
    ],
)
def test_rank_orders_by_the_model(model: LinearModel, order: list[str]) -> None:
    ranked = rank(POOL, model)
    assert [i for i, _ in ranked] == order
    assert all(0.0 < s < 1.0 for _, s in ranked)  # a probability


def test_rank_breaks_ties_by_id_whatever_the_input_order() -> None:
    twins = [cand("z"), cand("m"), cand("a")]
    assert [i for i, _ in rank(twins, one_feature("dense_gap"))] == ["a", "m", "z"]


def test_pool_keeps_each_id_once_dense_first() -> None:
    assert pool(["a", "b"], ["c", "a", "d"]) == ["a", "b", "c", "d"]


# -- the model file ------------------------------------------------------------------------------------
def model_json(**overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "format": 1,
        "features": ["dense_gap", "length"],
        "mean": [0.0, 5.0],
        "scale": [0.1, 0.5],
        "weights": [1.0, 0.5],
        "bias": -2.0,
        "depth": 100,
        "min_coverage": 0.5,
    }
    return data | overrides


def test_a_model_survives_its_json() -> None:
    model = LinearModel.from_json(model_json())
    assert LinearModel.from_json(json.loads(json.dumps(model.to_json()))) == model
    row = {"dense_gap": -0.1, "length": 6.0}
    assert model.score(row) == pytest.approx(1 / (1 + math.exp(-(-2.0 + 1.0 * -1.0 + 0.5 * 2.0))))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"format": 2}, "format 1"),
        ({"weights": [1.0]}, "as many"),
        ({"features": ["dense_gap", "vibes"]}, "unknown ranking features"),
        ({"scale": [0.1, 0.0]}, "positive"),
        ({"depth": 0}, "depth"),
        ({"min_coverage": 1.5}, "min_coverage"),
        ({"bias": None}, "mistypes"),
    ],
)
def test_a_bad_model_is_refused_with_what_is_wrong(overrides: dict[str, Any], message: str) -> None:
    data = model_json(**overrides)
    if data["bias"] is None:
        del data["bias"]
    with pytest.raises(ValueError, match=message):
        LinearModel.from_json(data)


@pytest.mark.parametrize(("coverage", "covered"), [(0.0, False), (0.49, False), (0.5, True), (1.0, True)])
def test_the_model_ranks_only_queries_like_its_training(coverage: float, covered: bool) -> None:
    assert LinearModel.from_json(model_json()).covers(coverage) is covered


def test_the_shipped_model_loads_and_ranks_like_a_ranking() -> None:
    model = load_model()
    assert set(model.features) <= set(FEATURES)
    assert model.depth >= 100  # at least search's largest limit
    assert 0.0 < model.min_coverage <= 1.0
    assert model.notes
    assert "recipe" in model.notes
    # What the recipe learned, in the direction the data says: more of both lists' score, better.
    weights = dict(zip(model.features, model.weights, strict=True))
    assert weights["dense_gap"] > 0
    assert weights["bm25_share"] > 0
    ranked = rank(POOL, model)
    assert sorted(i for i, _ in ranked) == ["a", "b", "c", "d"]
