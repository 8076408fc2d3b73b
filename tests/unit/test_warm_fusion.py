"""Fusion of the dense and BM25 lists (sync.search.query.ranking.fusion), from tables of cases: pure, no store."""

from __future__ import annotations

import pytest

from sync.search.embedders.bm25 import SparseVector
from sync.search.query.ranking.fusion import (
    DENSE_WEIGHT_FULL_MATCH,
    DENSE_WEIGHT_NO_MATCH,
    FusionSpec,
    adaptive_weight,
    fuse,
    lexical_coverage,
    relative_scores,
    spec_of,
)
from sync.search.query.ranking.fusion import RELATIVE_ALPHA as A
from sync.search.stores import Scored


def dense(*scored: tuple[str, float]) -> list[Scored]:
    return [Scored(i, s) for i, s in scored]


bm25 = dense  # the same shape; two names keep the tables readable


def order(hits: list[Scored]) -> list[str]:
    return [h.id for h in hits]


@pytest.mark.parametrize(
    ("hits", "expected"),
    [
        ([], {}),
        (bm25(("a", 7.0)), {"a": 1.0}),
        (dense(("a", 0.5), ("b", 0.5)), {"a": 1.0, "b": 1.0}),  # level: nobody is behind
        (dense(("a", 0.9), ("b", 0.8), ("c", 0.5)), {"a": 1.0, "b": 0.75, "c": 0.0}),
        (bm25(("a", 12.0), ("b", 3.0), ("c", 2.0)), {"a": 1.0, "b": 0.1, "c": 0.0}),
    ],
)
def test_relative_scores_min_max_over_the_list(hits: list[Scored], expected: dict[str, float]) -> None:
    assert relative_scores(hits) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("d", "s", "method", "expected_order", "expected_scores"),
    [
        # Relative: A x dense + (1 - A) x BM25, a list a point is missing from counting 0.
        (
            dense(("a", 0.9), ("b", 0.8), ("c", 0.5)),
            bm25(("c", 10.0), ("a", 2.0)),
            "relative",
            ["a", "b", "c"],
            [A, A * 0.75, 1 - A],
        ),
        # A far BM25 lead (an exact identifier) beats a near dense lead (its near-twin)...
        (
            dense(("twin", 0.9), ("answer", 0.899), ("other", 0.1)),
            bm25(("answer", 12.0), ("twin", 3.0), ("other", 2.0)),
            "relative",
            ["answer", "twin", "other"],
            [A * 0.99875 + (1 - A), A + (1 - A) * 0.1, 0.0],
        ),
        # ...and a far dense lead (a paraphrase) beats BM25's barely-ahead first hit.
        (
            dense(("answer", 0.5), ("common", 0.3), ("x", 0.1)),
            bm25(("common", 10.0), ("answer", 9.5), ("x", 0.0)),
            "relative",
            ["answer", "common", "x"],
            [A + (1 - A) * 0.95, A * 0.5 + (1 - A), 0.0],
        ),
        # RRF as Qdrant computes it: sum of 1 / (rank + 2), rank from 0.
        (
            dense(("a", 0.9), ("b", 0.8), ("c", 0.5)),
            bm25(("c", 10.0), ("a", 2.0)),
            "rrf",
            ["a", "c", "b"],
            [1 / 2 + 1 / 3, 1 / 4 + 1 / 2, 1 / 3],
        ),
        # Swapped top two tie exactly under RRF; the larger relative score goes first.
        (
            dense(("twin", 0.9), ("answer", 0.899), ("other", 0.1)),
            bm25(("answer", 12.0), ("twin", 3.0), ("other", 2.0)),
            "rrf",
            ["answer", "twin", "other"],
            [1 / 2 + 1 / 3, 1 / 2 + 1 / 3, 2 / 4],
        ),
        (
            dense(("answer", 0.9), ("twin", 0.2), ("other", 0.1)),
            bm25(("twin", 12.0), ("answer", 11.9), ("other", 2.0)),
            "rrf",
            ["answer", "twin", "other"],
            [1 / 2 + 1 / 3, 1 / 2 + 1 / 3, 2 / 4],
        ),
        # Complete ties (one list, level scores) fall back to the id: the same order on every engine.
        (dense(("b", 0.5), ("a", 0.5)), [], "relative", ["a", "b"], [A, A]),
        ([], bm25(("z", 1.0)), "rrf", ["z"], [0.5]),
        ([], [], "relative", [], []),
    ],
)
def test_fuse(
    d: list[Scored], s: list[Scored], method: str, expected_order: list[str], expected_scores: list[float]
) -> None:
    fused = fuse(d, s, method)  # type: ignore[arg-type]  # the table's strings are the Literal's values
    assert order(fused) == expected_order
    assert [h.score for h in fused] == pytest.approx(expected_scores)


def test_every_point_of_either_list_is_ranked_once() -> None:
    fused = fuse(dense(("a", 0.9), ("b", 0.4)), bm25(("a", 5.0), ("c", 4.0)))
    assert sorted(order(fused)) == ["a", "b", "c"]


def test_alpha_moves_the_weight_between_the_lists() -> None:
    d, s = dense(("a", 0.9), ("b", 0.1)), bm25(("b", 9.0), ("a", 1.0))
    assert order(fuse(d, s, alpha=1.0)) == ["a", "b"]
    assert order(fuse(d, s, alpha=0.0)) == ["b", "a"]
    assert [h.score for h in fuse(d, s, alpha=0.5)] == pytest.approx([0.5, 0.5])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"method": "dbsf"}, "fusion must be one of relative, rrf"), ({"alpha": 1.5}, "alpha must be within 0..1")],
)
def test_bad_arguments_are_named(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fuse(dense(("a", 1.0)), [], **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("d", "s", "alpha", "expected_order"),
    [
        # What cost the old default (dense weighted 0.75) its place below BM25 alone on LoCoMo: a
        # conversation's turns sit close together in meaning, so the dense list is a crowd in which
        # a wrong first place is still "far ahead" once min-max scaled, while BM25's clear first place
        # (a name and a rare word of the question) counts a quarter.
        (
            dense(("chat", 0.52), ("x", 0.50), ("answer", 0.46), ("y", 0.45), ("z", 0.30)),
            bm25(("answer", 14.0), ("chat", 8.0), ("x", 3.0)),
            0.75,
            ["chat", "answer", "x", "y", "z"],
        ),
        (
            dense(("chat", 0.52), ("x", 0.50), ("answer", 0.46), ("y", 0.45), ("z", 0.30)),
            bm25(("answer", 14.0), ("chat", 8.0), ("x", 3.0)),
            A,
            ["answer", "chat", "x", "y", "z"],
        ),
    ],
)
def test_weight_cases(d: list[Scored], s: list[Scored], alpha: float, expected_order: list[str]) -> None:
    assert order(fuse(d, s, "relative", alpha=alpha)) == expected_order


def test_the_heads_are_scaled_among_themselves_and_rank_before_the_rest() -> None:
    """With head 2: a, b (dense's best two) and d, e (BM25's) are fused on their own scales and come
    first; c, third in both lists, follows though one scale over the whole lists puts it third (the
    tail's extent, which depends on the collection's size and the depth, no longer sets the scale)."""
    d = dense(("a", 0.90), ("b", 0.60), ("c", 0.58), ("f", 0.10))
    s = bm25(("d", 10.0), ("e", 4.0), ("c", 3.9), ("g", 0.5))
    assert order(fuse(d, s, "relative", alpha=0.5, head=None)) == ["a", "d", "c", "b", "e", "f", "g"]
    fused = fuse(d, s, "relative", alpha=0.5, head=2)
    assert order(fused) == ["a", "d", "b", "e", "c", "f", "g"]
    assert [h.score for h in fused[:4]] == pytest.approx([1.5, 1.5, 1.0, 1.0])  # tier one, lifted by 1
    assert all(h.score <= 1.0 for h in fused[4:])


def test_short_lists_are_one_tier() -> None:
    d, s = dense(("a", 0.9), ("b", 0.1)), bm25(("b", 9.0), ("a", 1.0))
    assert fuse(d, s, head=2) == fuse(d, s, head=None)


def test_rrf_weight_favours_one_list() -> None:
    d, s = dense(("a", 0.9), ("b", 0.8)), bm25(("b", 9.0), ("a", 1.0))
    assert [h.score for h in fuse(d, s, "rrf", rrf_weight=0.5)] == pytest.approx([1 / 2 + 1 / 3] * 2)
    assert order(fuse(d, s, "rrf", rrf_weight=0.3)) == ["b", "a"]
    assert order(fuse(d, s, "rrf", rrf_weight=0.7)) == ["a", "b"]


def terms(*ids: int) -> SparseVector:
    return SparseVector(tuple(sorted(ids)), tuple(1.0 for _ in ids))


@pytest.mark.parametrize(
    ("query", "hit", "expected"),
    [
        (terms(1, 2, 3, 4), terms(1, 2, 3, 4, 9), 1.0),  # every query term (an identifier, say)
        (terms(1, 2, 3, 4), terms(2, 7), 0.25),  # one of four: a paraphrase's chance match
        (terms(1, 2), terms(7, 8), 0.0),
        (terms(), terms(1), 0.0),  # a query of stopwords only
        (terms(1, 2), None, 0.0),  # a point without a sparse vector
    ],
)
def test_lexical_coverage_is_the_share_of_query_terms_the_hit_holds(
    query: SparseVector, hit: SparseVector | None, expected: float
) -> None:
    assert lexical_coverage(query, hit) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("coverage", "expected"),
    [
        (0.0, DENSE_WEIGHT_NO_MATCH),
        (1.0, DENSE_WEIGHT_FULL_MATCH),
        (0.5, A),  # the fixed weight is the middle of the range
        (0.25, 0.7),
        (-1.0, DENSE_WEIGHT_NO_MATCH),  # clamped
        (2.0, DENSE_WEIGHT_FULL_MATCH),
    ],
)
def test_adaptive_weight_falls_as_the_lexical_match_grows(coverage: float, expected: float) -> None:
    assert adaptive_weight(coverage) == pytest.approx(expected)
    assert FusionSpec().weight(coverage) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("coverage", "expected_order"),
    [
        # The labelled set's "RAM keeps climbing in the realtime connection service": BM25's first
        # hit shares two of six terms ("connection", "service") and is a different incident; dense
        # finds the memory leak. At a fixed 0.6 BM25's hit wins; read by its coverage, dense does.
        (2 / 6, ["leak", "pool", "other"]),
        # The same lists when BM25's first hit holds every term of the query: it is the answer.
        (1.0, ["pool", "leak", "other"]),
    ],
)
def test_the_coverage_of_bm25s_best_hit_sets_the_weight(coverage: float, expected_order: list[str]) -> None:
    d = dense(("leak", 0.45), ("pool", 0.33), ("other", 0.21))
    s = bm25(("pool", 9.4), ("other", 5.0), ("leak", 2.3), ("far", 1.0))
    assert order(fuse(d, s, "relative", alpha=A))[0] == "pool"  # the fixed middle weight
    fused = fuse(d, s, "relative", alpha=FusionSpec().weight(coverage))
    assert order(fused)[:3] == expected_order


def test_a_spec_names_the_method_with_its_defaults() -> None:
    assert spec_of("rrf") == FusionSpec(method="rrf")
    assert FusionSpec().adaptive
    assert not FusionSpec(alpha=0.5).adaptive
    assert not FusionSpec(method="rrf").adaptive
    assert FusionSpec().weight() == A
    assert FusionSpec(alpha=0.3).weight(1.0) == 0.3
    assert FusionSpec(method="rrf").weight(1.0) == 0.5
    assert FusionSpec(method="rrf").weight() == 0.5
    assert FusionSpec(method="rrf", alpha=0.3).weight() == 0.3
