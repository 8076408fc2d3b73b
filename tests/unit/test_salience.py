"""Salience from use (``sync.policy.salience``) and its place in ranking (``rank.salience_factor``):
tables of cases, the clock an argument."""

from __future__ import annotations

import pytest

from sync.policy.salience import (
    DAY_MS,
    USE_KINDS,
    SalienceParams,
    Use,
    check_kind,
    salience,
    weighted_uses,
)
from sync.search.query.ranking.rank import Ranked, apply_salience, salience_factor

NOW = 1_800_000_000_000


def days_ago(days: float) -> int:
    return NOW - int(days * DAY_MS)


@pytest.mark.parametrize(
    ("use", "expected"),
    [
        pytest.param(Use(), 0.5, id="nothing known: the initial value"),
        pytest.param(Use(written_ms=NOW), 0.5, id="written now, never used"),
        pytest.param(Use(written_ms=days_ago(30)), 0.3, id="untouched a half-life: half-way to the floor"),
        pytest.param(Use(written_ms=days_ago(60)), 0.2, id="two half-lives"),
        pytest.param(Use(written_ms=days_ago(100_000)), 0.1, id="ages: the floor, never below"),
        pytest.param(Use(written_ms=NOW + 5 * DAY_MS), 0.5, id="a clock behind the memory: no decay, no gain"),
        pytest.param(Use({"mcp_search": 1}, last_used_ms=NOW), 0.575, id="one search by an agent"),
        pytest.param(Use({"get_episode": 1}, last_used_ms=NOW), 0.63875, id="opened counts twice"),
        pytest.param(Use({"context": 2}, last_used_ms=NOW), 0.575, id="two hook hand-overs count as one search"),
        pytest.param(Use({"mcp_search": 1000}, last_used_ms=NOW), 1.0, id="saturates at 1"),
        pytest.param(
            Use({"mcp_search": 1}, last_used_ms=days_ago(30), written_ms=days_ago(400)),
            0.3375,
            id="decays from its last use, not from when it was written",
        ),
        pytest.param(Use(written_ms=days_ago(1000), pinned=True), 1.0, id="pinned never decays"),
        pytest.param(Use({"future_kind": 1}, last_used_ms=NOW), 0.575, id="a kind unknown here counts as 1"),
        pytest.param(Use({"mcp_search": -4}, last_used_ms=NOW), 0.5, id="a negative count counts as none"),
    ],
)
def test_salience_follows_the_table(use: Use, expected: float) -> None:
    assert salience(use, NOW) == pytest.approx(expected)


def test_more_use_never_means_less_salience_and_more_idle_never_more() -> None:
    values = [salience(Use({"mcp_search": n}, last_used_ms=NOW), NOW) for n in range(30)]
    assert values == sorted(values)
    ages = [salience(Use({"mcp_search": 3}, last_used_ms=days_ago(d)), NOW) for d in range(0, 400, 10)]
    assert ages == sorted(ages, reverse=True)
    assert min(ages) >= SalienceParams().floor


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"floor": 0.6}, "floor"),
        ({"initial": 1.2}, "initial"),
        ({"boost": 1.0}, "boost"),
        ({"half_life_days": 0}, "half-life"),
    ],
)
def test_impossible_parameters_are_refused_in_one_sentence(kwargs: dict[str, float], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        SalienceParams(**kwargs)  # type: ignore[arg-type]


def test_kinds_are_checked_and_weighted() -> None:
    assert all(check_kind(kind) == kind for kind in USE_KINDS)
    with pytest.raises(ValueError, match="context, mcp_search"):
        check_kind("peeked")
    assert weighted_uses({"context": 2, "get_episode": 1}) == 3.0


@pytest.mark.parametrize(
    ("value", "similarity", "factor"),
    [
        pytest.param(1.0, 0.9, 1.0, id="a close match is not moved"),
        pytest.param(0.1, 0.85, 1.0, id="0.85 is close"),
        pytest.param(0.5, 0.5, 1.0, id="initial salience: untouched"),
        pytest.param(1.0, 0.5, 1.1, id="most used: +10%"),
        pytest.param(0.1, 0.5, 0.92, id="the floor: -8%"),
        pytest.param(1.0, None, 1.1, id="no similarity known: weighed"),
    ],
)
def test_salience_factor_is_gated_by_similarity(value: float, similarity: float | None, factor: float) -> None:
    assert salience_factor(value, similarity, initial=0.5) == pytest.approx(factor)


def test_salience_moves_near_ties_not_clear_winners() -> None:
    ranked = [
        Ranked("a", 1.00, 0.6, None, {}),
        Ranked("b", 0.98, 0.6, None, {}),  # a near-tie, much used
        Ranked("c", 0.50, 0.6, None, {}),  # far behind, much used
    ]
    used = {"a": 0.1, "b": 1.0, "c": 1.0}
    order = [r.id for r in apply_salience(ranked, lambda r: used[r.id], initial=0.5)]
    assert order == ["b", "a", "c"]
