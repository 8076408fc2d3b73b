"""Tier: unit. When the daemon optimizes the search index (``optimize_due``), from a table."""

from __future__ import annotations

import pytest

from daemon.search_worker.optimizer import optimize_due

CASES = [
    # store, after, idle_for, position, optimized_through, due, why
    ("edge", 30.0, 31.0, 0, None, True, "none yet since the daemon started"),
    ("edge", 30.0, 29.0, 0, None, False, "the worker left less than 30 s ago"),
    ("edge", 30.0, 30.0, 5, None, True, "exactly at the wait"),
    ("edge", 30.0, 500.0, 5, 5, False, "nothing taken in since the last run"),
    ("edge", 30.0, 500.0, 4, 5, False, "a position behind the last run (a reindex restarted it)"),
    ("edge", 30.0, 500.0, 6, 5, True, "episodes taken in since"),
    ("edge", 0.0, 500.0, 6, None, False, "0: never"),
    ("qdrant", 30.0, 500.0, 6, None, False, "a Qdrant server builds its own graph"),
]


@pytest.mark.parametrize(("store", "after", "idle_for", "position", "through", "due", "why"), CASES)
def test_when_the_index_is_optimized(
    store: str, after: float, idle_for: float, position: int, through: int | None, due: bool, why: str
) -> None:
    got = optimize_due(store=store, after=after, idle_for=idle_for, position=position, optimized_through=through)
    assert got is due, why
