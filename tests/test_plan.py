"""The sync decisions: tables of cases, no I/O."""

from __future__ import annotations

import pytest

from sync.plan import Decision, Occupant, ScanPlan, Verdict, after_conflict, batches, decide, plan_scan, source_id_for

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
    ("cursor", "window", "now", "last_full", "interval", "expected"),
    [
        pytest.param(1000, 256, 100.0, None, 60.0, ScanPlan(0, True), id="never checked: everything"),
        pytest.param(1000, 256, 100.0, 90.0, 60.0, ScanPlan(744, False), id="recent: the window"),
        pytest.param(1000, 256, 200.0, 90.0, 60.0, ScanPlan(0, True), id="interval passed: everything"),
        pytest.param(100, 256, 100.0, 90.0, 60.0, ScanPlan(0, False), id="window wider than the file"),
        pytest.param(1000, 0, 100.0, 90.0, 60.0, ScanPlan(1000, False), id="no window"),
    ],
)
def test_plan_scan(
    cursor: int, window: int, now: float, last_full: float | None, interval: float, expected: ScanPlan
) -> None:
    assert plan_scan(cursor, window, now, last_full, interval) == expected


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
