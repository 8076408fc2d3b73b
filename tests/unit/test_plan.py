"""The sync decisions: tables of cases, no I/O."""

from __future__ import annotations

import pytest

from sync.errors import QuotaExhausted, TransientError
from sync.push.plan import (
    Decision,
    Occupant,
    ScanPlan,
    Verdict,
    after_conflict,
    batches,
    decide,
    plan_scan,
    window_due,
)
from sync.resilience.retry import RetryPolicy
from sync.source.base import source_id_for

A = Occupant(42, 0, "42", "identity-a", "content-a1")
B = Occupant(42, 1, "42~1", "identity-b", "content-b1")


@pytest.mark.parametrize(
    ("identity", "content", "occupants", "expected"),
    [
        pytest.param("identity-a", "content-a1", [], Decision(Verdict.NEW, "42", 0), id="first sight"),
        pytest.param("identity-a", "content-a1", [A], Decision(Verdict.UNCHANGED, "42", 0), id="unchanged"),
        pytest.param("identity-a", "content-a2", [A], Decision(Verdict.EDIT, "42", 0), id="edited"),
        pytest.param(
            "identity-b",
            "content-b1",
            [A],
            Decision(Verdict.REUSED, "42~1", 1, displaced=A),
            id="id reused by another episode",
        ),
        pytest.param(
            "identity-a",
            "content-a1",
            [A, B],
            Decision(Verdict.UNCHANGED, "42", 0),
            id="writers flip back to the first episode",
        ),
        pytest.param(
            "identity-b", "content-b2", [A, B], Decision(Verdict.EDIT, "42~1", 1), id="edit of the second episode"
        ),
        pytest.param(
            "identity-c", "content-c1", [A, B], Decision(Verdict.REUSED, "42~2", 2, displaced=B), id="a third episode"
        ),
    ],
)
def test_decide(identity: str, content: str, occupants: list[Occupant], expected: Decision) -> None:
    assert decide(42, identity, content, occupants) == expected


@pytest.mark.parametrize(("generation", "expected"), [(0, "5"), (1, "5~1"), (12, "5~12")])
def test_source_ids(generation: int, expected: str) -> None:
    assert source_id_for(5, generation) == expected


def test_a_conflict_moves_to_the_next_generation_and_keeps_what_was_displaced() -> None:
    first = Decision(Verdict.NEW, "42", 0)
    assert after_conflict(42, first) == Decision(Verdict.REUSED, "42~1", 1, None)
    reused = Decision(Verdict.REUSED, "42~1", 1, displaced=A)
    assert after_conflict(42, reused) == Decision(Verdict.REUSED, "42~2", 2, displaced=A)


@pytest.mark.parametrize(
    ("cursor", "last_full", "now", "position", "changed", "expected"),
    [
        pytest.param(1000, None, 100.0, None, True, ScanPlan(744, 0), id="never checked: start a full check"),
        pytest.param(1000, 90.0, 100.0, None, True, ScanPlan(744, None), id="checked recently: the window only"),
        pytest.param(1000, 90.0, 200.0, None, True, ScanPlan(744, 0), id="interval passed and changed: start"),
        pytest.param(1000, 90.0, 200.0, None, False, ScanPlan(744, None), id="interval passed, unchanged: nothing"),
        pytest.param(1000, 90.0, 100.0, 5000, False, ScanPlan(744, 5000), id="one under way: continue it"),
        pytest.param(100, 90.0, 100.0, None, True, ScanPlan(0, None), id="window wider than the file"),
    ],
)
def test_plan_scan(
    cursor: int, last_full: float | None, now: float, position: int | None, changed: bool, expected: ScanPlan
) -> None:
    assert plan_scan(cursor, 256, now, last_full, 60.0, position, changed) == expected


def test_no_window_means_no_window_re_check() -> None:
    assert plan_scan(1000, 0, 100.0, 90.0, 60.0, None, True).window_after == 1000


@pytest.mark.parametrize(
    ("sizes", "max_rows", "max_bytes", "expected"),
    [
        pytest.param([1] * 5, 2, None, [[1, 1], [1, 1], [1]], id="by rows"),
        pytest.param([4, 4, 4], 10, 8, [[4, 4], [4]], id="by bytes"),
        pytest.param([3, 20, 3], 10, 8, [[3], [20], [3]], id="an oversized item goes alone"),
        pytest.param([], 10, 8, [], id="nothing"),
        pytest.param([8, 1], 10, 8, [[8], [1]], id="exactly full"),
    ],
)
def test_batches(sizes: list[int], max_rows: int, max_bytes: int | None, expected: list[list[int]]) -> None:
    assert list(batches(sizes, max_rows, max_bytes, lambda s: s)) == expected


@pytest.mark.parametrize(
    ("attempt", "draw", "expected"),
    [(1, 0.0, 0.2), (2, 0.0, 0.4), (3, 0.5, 1.05), (10, 0.0, 30.0), (30, 0.999, 30.4995)],
)
def test_backoff_doubles_up_to_the_maximum_plus_jitter(attempt: int, draw: float, expected: float) -> None:
    assert RetryPolicy(initial=0.2, maximum=30.0, jitter=0.5).backoff(attempt, draw) == pytest.approx(expected)


def test_the_policy_retries_transient_errors_and_leaves_an_exhausted_quota_to_the_caller() -> None:
    waits: list[float] = []
    policy = RetryPolicy(initial=0.2, jitter=0.0, sleep=waits.append)
    outcomes: list[Exception] = [TransientError("busy", retry_after=5.0), QuotaExhausted("used up", 3000.0, "Voyage")]

    def call() -> None:
        raise outcomes.pop(0)

    with pytest.raises(QuotaExhausted):
        policy.call(call)
    assert waits == [5.0]  # the server's hint for the transient error; none for the quota
    assert outcomes == []


@pytest.mark.parametrize(
    ("now", "checked_at", "read_new_rows", "due"),
    [
        (100.0, None, True, True),  # never checked
        (100.0, 99.5, True, False),  # an agent appending: at most once a second
        (100.0, 99.0, True, True),
        (100.0, 99.9, False, True),  # nothing new: the pass is for this (an edit, an owed check)
    ],
)
def test_the_window_is_re_checked_at_most_once_a_second_while_rows_arrive(
    now: float, checked_at: float | None, read_new_rows: bool, due: bool
) -> None:
    assert window_due(now, checked_at, 1.0, read_new_rows) is due
