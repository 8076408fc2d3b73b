"""Fusion of the dense and BM25 lists (sync.warm.fusion), from tables of cases: pure, no store."""

from __future__ import annotations

import pytest

from sync.warm.fusion import fuse, relative_scores
from sync.warm.store import Scored


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
        # Relative: 0.75 x dense + 0.25 x BM25, a list a point is missing from counting 0.
        (
            dense(("a", 0.9), ("b", 0.8), ("c", 0.5)),
            bm25(("c", 10.0), ("a", 2.0)),
            "relative",
            ["a", "b", "c"],
            [0.75, 0.5625, 0.25],
        ),
        # A far BM25 lead (an exact identifier) beats a near dense lead (its near-twin)...
        (
            dense(("twin", 0.9), ("answer", 0.899), ("other", 0.1)),
            bm25(("answer", 12.0), ("twin", 3.0), ("other", 2.0)),
            "relative",
            ["answer", "twin", "other"],
            [0.75 * 0.99875 + 0.25, 0.75 + 0.025, 0.0],
        ),
        # ...and a far dense lead (a paraphrase) beats BM25's barely-ahead first hit.
        (
            dense(("answer", 0.5), ("common", 0.3), ("x", 0.1)),
            bm25(("common", 10.0), ("answer", 9.5), ("x", 0.0)),
            "relative",
            ["answer", "common", "x"],
            [0.75 + 0.25 * 0.95, 0.75 * 0.5 + 0.25, 0.0],
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
        (dense(("b", 0.5), ("a", 0.5)), [], "relative", ["a", "b"], [0.75, 0.75]),
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
