"""Tier: unit. The judgement on a search's results (sync.search.query.judgement): relevance from what
a hit holds, the floor, why in words, and the answer on the wire, from tables."""

from __future__ import annotations

import math
from typing import Any

import pytest

from sync.search.query.judgement import (
    FEATURES,
    Calibration,
    cutoff,
    features,
    load_calibration,
    logit,
    relevance,
    shares,
    shipped_calibration,
    why_words,
    with_sessions,
)
from sync.search.request import SearchAnswer, SearchResult, Why

MODEL = "a-model"
FLOOR = 0.3


def calibration(**weights: float) -> Calibration:
    """Weights on raw features (mean 0, scale 1), the bias under ``bias``."""
    bias = weights.pop("bias", 0.0)
    names = tuple(weights)
    return Calibration(
        names, (0.0,) * len(names), (1.0,) * len(names), tuple(weights.values()), bias, {MODEL: FLOOR}, 0.01
    )


def result(name: str, rel: float | None, session: str | None = None, why: Why | None = None) -> SearchResult:
    return SearchResult(
        id=name,
        site="laptop",
        source_id=name,
        score=0.5,
        similarity=0.5,
        ts=None,
        agent=None,
        session=session,
        task=None,
        tags=[],
        reward=None,
        success=None,
        text=name,
        relevance=rel,
        why=why or Why("learned"),
    )


@pytest.mark.parametrize(
    ("why", "expected"),
    [
        (Why("learned", terms=1, of=4), True),  # one of its words
        (Why("learned", exact=("E11000",)), True),  # an identifier it names
        (Why("learned", meaning=0.30), True),  # as close as unrelated pairs come 1 time in 20
        (Why("learned", meaning=0.29, of=3), False),  # nothing at all
        (Why("learned"), False),
    ],
)
def test_what_shares_something_with_the_query(why: Why, expected: bool) -> None:
    assert shares(why, FLOOR) is expected


def test_the_features() -> None:
    why = Why("learned", score=0.5, exact=("E11000",), terms=3, of=4, meaning=0.70, lead=0.25)
    row = features(why, FLOOR)
    assert set(row) == set(FEATURES)
    assert row == pytest.approx(
        {"meaning": 0.40, "lead": 0.25, "coverage": 0.75, "exact": 1.0, "lookalike": 0.0, "learned": 0.0, "fused": 0.0}
    )
    fused = features(Why("fusion", score=1.7, lookalike=("ZQX_7781_B",), meaning=0.2), FLOOR)
    assert (fused["learned"], fused["fused"], fused["lookalike"], fused["coverage"]) == (0.0, 1.0, 1.0, 0.0)
    assert fused["lead"] == pytest.approx(-0.1)  # no lead measured: the meaning over the floor


@pytest.mark.parametrize(
    ("why", "expected"),
    [
        (Why("learned", terms=2, of=2, meaning=0.5), 1 / (1 + math.exp(-(0.2 + 1.0)))),
        (Why("fusion", terms=0, of=2, meaning=0.6), 1 / (1 + math.exp(-0.3))),
        (Why("learned", terms=0, of=2, meaning=0.1), 0.0),  # shares nothing: 0, whatever the weights
        (Why("dense", terms=2, of=2, meaning=0.9), None),  # one list alone: not judged
        (Why("bm25", terms=2, of=2), None),
    ],
)
def test_relevance(why: Why, expected: float | None) -> None:
    cal = calibration(meaning=1.0, coverage=1.0)
    found = relevance(why, cal, MODEL, None)
    assert found == (None if expected is None else pytest.approx(expected))


def test_an_embedder_without_a_measured_floor_takes_it_from_the_querys_nearest() -> None:
    cal = Calibration(("meaning",), (0.0,), (1.0,), (1.0,), 0.0, {MODEL: FLOOR}, 0.01, median_above_floor=0.05)
    assert cal.floor_of(MODEL, 0.9) == FLOOR
    assert cal.floor_of("another", 0.45) == pytest.approx(0.40)
    assert cal.floor_of("another", None) == FLOOR  # no nearest to read: the lowest floor measured
    assert relevance(Why("learned", meaning=0.41), cal, "another", 0.45) == pytest.approx(1 / (1 + math.exp(-0.01)))
    assert relevance(Why("learned", meaning=0.39), cal, "another", 0.45) == 0.0


def test_the_cutoff_keeps_the_order_and_counts_what_it_cut() -> None:
    results = [result("a", 0.9), result("b", 0.001), result("c", 0.3), result("d", None), result("e", 0.0)]
    cut = cutoff(results, 0.01)
    assert [r.id for r in cut.kept] == ["a", "c", "d"]  # one without a relevance is kept
    assert cut.cut == 2
    assert cutoff(results, 0.0).cut == 0  # floor 0: everything


def test_each_result_names_the_first_of_its_session_before_it() -> None:
    results = [result("a", 0.9, "s1"), result("b", 0.8, "s2"), result("c", 0.7, "s1"), result("d", 0.6, None)]
    assert [r.why.session_of if r.why else None for r in with_sessions(results)] == [None, None, 1, None]


@pytest.mark.parametrize(
    ("why", "words"),
    [
        (
            Why("learned", exact=("E11000",), terms=3, of=4, meaning=0.712, session_of=1),
            "exact E11000 · 3/4 terms · meaning 0.71 · same session as #1",
        ),
        (
            Why("learned", lookalike=("ZQX_7781_B",), terms=1, of=1, meaning=0.2),
            "look-alike ZQX_7781_B · 1/1 terms · meaning 0.20",
        ),
        (Why("fusion", terms=0, of=3, meaning=0.55, in_window=True), "0/3 terms · meaning 0.55 · in the time asked"),
        (Why("bm25", terms=2, of=2), "2/2 terms"),
    ],
)
def test_why_in_words(why: Why, words: str) -> None:
    assert why_words(why) == words


def test_a_calibration_round_trips_and_refuses_what_it_cannot_use() -> None:
    cal = calibration(meaning=1.0, exact=2.0, bias=-1.0)
    assert Calibration.from_json(cal.to_json()) == Calibration(**_fields(cal))
    with pytest.raises(ValueError, match="format"):
        Calibration.from_json({**cal.to_json(), "format": 99})
    with pytest.raises(ValueError, match="unknown relevance features"):
        Calibration(("cosine",), (0.0,), (1.0,), (1.0,), 0.0, {}, 0.0)
    with pytest.raises(ValueError, match="lacks or mistypes"):
        Calibration.from_json({"format": 1, "features": []})
    with pytest.raises(ValueError, match="cutoff"):
        Calibration(("meaning",), (0.0,), (1.0,), (1.0,), 0.0, {}, 1.5)


def _fields(cal: Calibration) -> dict[str, Any]:
    return {name: getattr(cal, name) for name in Calibration.__dataclass_fields__} | {"notes": {}}


def test_the_shipped_calibration_loads_and_says_how_it_was_made() -> None:
    cal = shipped_calibration()
    assert cal == load_calibration()
    assert set(cal.features) <= set(FEATURES)
    assert 0.0 < cal.cutoff < 0.01
    assert "bench.judgement_fit" in str((cal.notes or {}).get("recipe"))
    # What it says of a memory holding every word of the query and its identifier, and of one
    # sharing only a common word, far in meaning, is the right way round.
    floor = min(cal.floors.values())
    strong = Why("learned", score=0.9, exact=("E11000",), terms=3, of=3, meaning=floor + 0.3, lead=0.3)
    weak = Why("learned", score=0.01, terms=1, of=3, meaning=floor - 0.1, lead=-0.05)
    model = next(iter(cal.floors))
    assert (relevance(strong, cal, model, None) or 0.0) > 0.9
    assert (relevance(weak, cal, model, None) or 1.0) < 0.05


def test_logit_is_bounded() -> None:
    assert logit(0.5) == 0.0
    assert logit(0.0) == -12.0
    assert logit(1.0) == 12.0


def test_the_answer_on_the_wire() -> None:
    why = Why("learned", score=0.8, exact=("E11000",), terms=1, of=2, words=("E11000",), meaning=0.6, meaning_rank=2)
    answer = SearchAnswer(
        [result("a", 0.97, why=why)], cut=3, floor=0.0002, named=("E11000", "ZQX"), absent=("ZQX",), unchecked=()
    )
    wire = answer.to_wire()
    assert wire["cut"] == 3
    assert wire["absent"] == ["ZQX"]
    assert wire["results"][0]["relevance"] == 0.97
    assert wire["results"][0]["why"]["meaningRank"] == 2
    assert wire["results"][0]["why"]["exact"] == ("E11000",)
    assert SearchAnswer.from_wire(wire) == answer


def test_an_older_daemons_answer_is_its_results() -> None:
    older = result("a", None, why=None).to_wire()
    del older["relevance"], older["why"]
    answer = SearchAnswer.from_wire([older])
    assert [r.id for r in answer.results] == ["a"]
    assert (answer.cut, answer.floor, answer.absent, answer.results[0].relevance) == (0, None, (), None)
    with pytest.raises(ValueError, match="object"):
        SearchAnswer.from_wire("nonsense")
