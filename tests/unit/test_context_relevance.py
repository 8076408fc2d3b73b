"""Tier: unit. The context block's relevance floor (daemon.context.relevance): which of the search's
judged results are admitted, from tables."""

from __future__ import annotations

from typing import Any

import pytest

from daemon.context.relevance import Rules, judge
from sync.search.request import SearchResult, Why


def result(name: str, relevance: float | None, text: str = "", **extra: Any) -> SearchResult:
    why = extra.pop("why", None if relevance is None else Why("learned"))
    fields: dict[str, Any] = {
        "id": name,
        "site": "laptop",
        "source_id": name,
        "score": 1.0,
        "similarity": 0.5,
        "ts": None,
        "agent": "claude-code",
        "session": f"s-{name}",
        "task": None,
        "tags": extra.pop("tags", []),
        "reward": None,
        "success": None,
        "text": text or f"memory {name}",
        "relevance": relevance,
        "why": why,
    }
    return SearchResult(**fields, **extra)


RULES = Rules(floor=0.6, margin=0.3, max_entries=3, project=1.5)
FLAT = [0.02, 0.05, 0.01, 0.03]  # results that match nothing well


def admitted(results: list[SearchResult], **kwargs: Any) -> list[str]:
    return [j.result.id for j in judge("a prompt", results, RULES, **kwargs) if j.admitted]


@pytest.mark.parametrize(
    ("relevances", "expected"),
    [
        ([0.95, *FLAT], ["a"]),  # the answer
        ([0.95, 0.80, *FLAT], ["a", "b"]),  # two answers, close to each other
        ([0.95, 0.62, *FLAT], ["a"]),  # one over the floor, but too far below the best
        ([0.55, *FLAT], []),  # the best is under the floor
        (FLAT, []),  # a chatty prompt: nothing
        ([0.60], ["a"]),  # the floor itself passes
    ],
)
def test_the_floor_and_the_margin(relevances: list[float], expected: list[str]) -> None:
    names = "abcdefgh"
    assert admitted([result(names[i], r) for i, r in enumerate(relevances)]) == expected


def test_a_look_alike_of_a_named_identifier_is_left_out_however_relevant() -> None:
    results = [
        result("sib", 0.9, "ZQX_7781_B: new tax calculation", why=Why("learned", lookalike=("ZQX_7781_B",))),
        result("both", 0.8, "ZQX_7781_A and _B", why=Why("learned", exact=("ZQX_7781_A",), lookalike=("ZQX_7781_B",))),
    ]
    judged = {j.result.id: j for j in judge("ZQX_7781_A?", results, RULES)}
    assert not judged["sib"].admitted
    assert judged["sib"].why == "holds ZQX_7781_B, a look-alike of what was asked"
    assert judged["both"].admitted  # it holds the one named too


def test_the_agents_project_tips_a_close_call() -> None:
    results = [
        result("theirs", 0.70, tags=["project:shopctl"]),
        result("mine", 0.30, tags=["project:web"]),  # 0.66 with the project's weight
        *(result(f"f{i}", r) for i, r in enumerate(FLAT)),
    ]
    assert admitted(results) == ["theirs"]
    assert admitted(results, project="web") == ["theirs", "mine"]
    judged = {j.result.id: j for j in judge("x", results, RULES, project="web")}
    assert judged["mine"].relevance == pytest.approx(0.6577, abs=1e-4)


def test_results_come_best_first_and_unjudged_ones_never_pass() -> None:
    results = [result("low", 0.70), result("high", 0.90), result("none", None)]
    judged = judge("deploy", results, RULES)
    assert [j.result.id for j in judged[:2]] == ["high", "low"]
    unjudged = next(j for j in judged if j.result.id == "none")
    assert not unjudged.admitted
    assert "older" in unjudged.why


def test_why_says_what_the_search_saw() -> None:
    why = Why("learned", exact=("E11000",), terms=2, of=3, meaning=0.61)
    (judged,) = judge("E11000 duplicate key", [result("a", 0.97, why=why)], RULES)
    assert judged.why == "relevance 0.97 · exact E11000 · 2/3 terms · meaning 0.61"
