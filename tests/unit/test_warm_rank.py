"""Ranking after fusion: tables of cases, no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from sync.search.query.ranking.rank import DAY_MS, Ranked, apply_decay, collapse_duplicates, decay, mmr

NOW = 1_800_000_000_000


@pytest.mark.parametrize(
    ("similarity", "age_days", "factor"),
    [
        pytest.param(0.90, 400, 1.0, id="close match: no decay at any age"),
        pytest.param(0.85, 400, 1.0, id="0.85 is close"),
        pytest.param(0.80, 3, 1.0, id="related, under 7 days"),
        pytest.param(0.80, 7, 0.995, id="related, 7 days"),
        pytest.param(0.80, 29.9, 0.995, id="related, to 30"),
        pytest.param(0.80, 30, 0.99, id="related, 30 days"),
        pytest.param(0.70, 89, 0.99, id="0.70 is related"),
        pytest.param(0.80, 90, 0.985, id="related, beyond 90"),
        pytest.param(0.69, 3, 1.0, id="distant, under 7 days"),
        pytest.param(0.50, 10, 0.99, id="distant, to 30"),
        pytest.param(0.50, 60, 0.98, id="distant, to 90"),
        pytest.param(0.10, 1000, 0.97, id="distant, beyond"),
        pytest.param(None, 1000, 0.97, id="no similarity known: treated as distant"),
    ],
)
def test_decay_follows_the_table(similarity: float | None, age_days: float, factor: float) -> None:
    assert decay(similarity, age_days) == factor


def hit(id_: str, score: float, similarity: float | None = None, age_days: float = 0, **payload: Any) -> Ranked:
    return Ranked(id_, score, similarity, NOW - int(age_days * DAY_MS), payload)


def test_decay_breaks_near_ties_towards_the_fresh_but_never_buries_a_clearly_better_old_match() -> None:
    ranked = apply_decay(
        [
            hit("old", 1.00, 0.5, age_days=200),  # the one old answer to "when did ...?"
            hit("new", 0.90, 0.5, age_days=1),
            hit("old-level", 0.98, 0.5, age_days=200),  # level with a fresh one: the fresh goes first
            hit("new-level", 0.96, 0.5, age_days=1),
            hit("close-old", 0.95, 0.9, age_days=500),
        ],
        NOW,
    )
    assert [r.id for r in ranked] == ["old", "new-level", "old-level", "close-old", "new"]
    assert [round(r.score, 4) for r in ranked] == [0.97, 0.96, 0.9506, 0.95, 0.9]


def test_ties_are_broken_by_id_and_future_times_do_not_inflate() -> None:
    ranked = apply_decay([hit("b", 0.5, 0.5), hit("a", 0.5, 0.5), hit("c", 0.5, 0.5, age_days=-3)], NOW)
    assert [r.id for r in ranked] == ["a", "b", "c"]
    assert {r.score for r in ranked} == {0.5}


def test_near_duplicates_collapse_to_the_best_ranked_member() -> None:
    results = [
        hit("2", 0.9, duplicateOf="1"),
        hit("1", 0.8),
        hit("3", 0.7),
        hit("4", 0.6, duplicateOf="1"),
        hit("5", 0.5, duplicateOf="3"),
    ]
    assert [r.id for r in collapse_duplicates(results)] == ["2", "3"]


def test_mmr_trades_a_little_relevance_for_diversity() -> None:
    same = [1.0, 0.0]
    results = [
        Ranked("a", 1.00, None, NOW, {}, same),
        Ranked("a-again", 0.99, None, NOW, {}, same),
        Ranked("b", 0.80, None, NOW, {}, [0.0, 1.0]),
    ]
    assert [r.id for r in mmr(results, 2, diversity=0.3)] == ["a", "b"]
    assert [r.id for r in mmr(results, 2, diversity=0.0)] == ["a", "a-again"]  # pure relevance
    assert mmr(results, 0) == []
    assert [r.id for r in mmr(results, 10)] == ["a", "b", "a-again"]
