"""Tier: unit. The outcome filter (``--outcome``, the viewer's and the MCP tool's): success keeps the
memories that went well, failure those that did not, and one that recorded neither matches neither;
it travels on the wire, and a value outside the two is refused with a sentence."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import edge_store_of

from daemon.usecases.memory.search import search_request
from sync.search.embedders.local import LocalEmbedder
from sync.search.query.pipeline import search
from sync.search.request import SearchRequest, outcome_matches
from sync.search.stores import EdgeStore, SearchFilter

NOW_MS = 1_790_000_000_000
POINTS: list[tuple[str, dict[str, Any]]] = [
    ("Restarted the billing worker after the deploy; the queue drained.", {"success": True}),
    ("Restarting the billing worker did not drain the queue; the deploy was rolled back.", {"success": False}),
    ("The billing worker's queue is drained by the deploy hook.", {}),
    ("Billing worker deploy notes, success unknown.", {"success": "yes"}),  # not a bool: no outcome
]


@pytest.fixture
def store(tmp_path: Path, local: LocalEmbedder) -> Iterator[EdgeStore]:
    opened = edge_store_of(tmp_path / "q", local, POINTS, NOW_MS)
    yield opened
    opened.close()


@pytest.mark.parametrize(
    ("outcome", "expected"), [(None, {"0", "1", "2", "3"}), ("success", {"0"}), ("failure", {"1"})]
)
def test_an_outcome_filter_keeps_the_memories_that_went_that_way(
    store: EdgeStore, local: LocalEmbedder, outcome: str | None, expected: set[str]
) -> None:
    request = SearchRequest("billing worker deploy", limit=10, floor=0.0, filter=SearchFilter(outcome=outcome))
    assert {r.source_id for r in search(store, local, request, now_ms=NOW_MS)} == expected


def test_the_outcome_travels_on_the_wire_and_a_wrong_one_is_refused() -> None:
    wire = SearchRequest("x", filter=SearchFilter(outcome="failure")).to_wire()
    assert SearchRequest.from_wire(wire).filter.outcome == "failure"
    wire["filter"]["outcome"] = "maybe"
    with pytest.raises(ValueError, match="outcome must be success or failure, got 'maybe'"):
        SearchRequest.from_wire(wire)


def test_the_cli_and_the_viewer_build_the_same_outcome_filter() -> None:
    assert search_request("x", now=0, outcome="success").filter.outcome == "success"
    assert search_request("x", now=0, outcome="").filter.outcome is None  # the form's "any"
    with pytest.raises(ValueError, match="outcome must be"):
        search_request("x", now=0, outcome="won")


def test_a_point_without_a_recorded_outcome_matches_no_outcome() -> None:
    assert outcome_matches(None, {})
    assert not outcome_matches("success", {})
    assert not outcome_matches("failure", {"success": 0})
    assert outcome_matches("failure", {"success": False})
