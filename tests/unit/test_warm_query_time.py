"""Tier: unit. The time a query names (sync.search.query.query_time), from a table, with a fixed clock."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sync.search.query.query_time import windows, within

# Monday 21 September 2026, noon UTC.
NOW = int(datetime(2026, 9, 21, 12, tzinfo=UTC).timestamp() * 1000)


def day(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What dish did Nate make on 9 November, 2022?", [("2022-11-08", "2022-11-11")]),
        ("the movie he watched on October 6, 2022", [("2022-10-05", "2022-10-08")]),
        ("the book finished on 8th December, 2023", [("2023-12-07", "2023-12-10")]),
        ("migration 2023-05-08 failed", [("2023-05-07", "2023-05-10")]),
        ("the party in June 2022", [("2022-06-01", "2022-07-01")]),
        ("the ankle injury in 2023", [("2023-01-01", "2024-01-01")]),
        # a date without a year is the last one not after now
        ("camping in June", [("2026-06-01", "2026-07-01")]),
        ("the deal he got in December", [("2025-12-01", "2026-01-01")]),
        ("what happened on 30 September", [("2025-09-29", "2025-10-02")]),
        ("what broke last week", [("2026-09-13", "2026-09-22")]),
        ("what broke yesterday", [("2026-09-19", "2026-09-22")]),
        ("the deploy 3 weeks ago", [("2026-08-26T12:00", "2026-09-05T12:00")]),  # from now, not midnight
        ("the outage last month", [("2026-08-01", "2026-09-01")]),
        ("between August 11 and August 15 2023", [("2026-08-10", "2026-08-13"), ("2023-08-14", "2023-08-17")]),
        # no time named, or words that only look like one
        ("When did Caroline go to the LGBTQ support group?", []),
        ("it may be fine", []),
        ("the error on 31 June", []),
    ],
)
def test_windows_named_by_a_query(query: str, expected: list[tuple[str, str]]) -> None:
    assert windows(query, NOW) == [(day(start), day(end)) for start, end in expected]


@pytest.mark.parametrize(
    ("ts", "inside"),
    [(day("2022-06-01"), True), (day("2022-06-30"), True), (day("2022-07-01"), False), (None, False)],
)
def test_within(ts: int | None, inside: bool) -> None:
    assert within(ts, windows("in June 2022", NOW)) is inside
