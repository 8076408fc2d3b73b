"""Row digests: what a re-check compares before it converts a row."""

from __future__ import annotations

from typing import Any

import pytest

from sync.digests import RowDigests, row_digest


def row(local_id: int, **values: Any) -> tuple[Any, ...]:
    return tuple({"id": local_id, "task": b"t", "reward": 0.5, "tags": None, **values}.values())


@pytest.mark.parametrize(
    ("before", "after", "same"),
    [
        (row(1), row(1), True),
        (row(1), row(1, task=b"u"), False),
        (row(1), row(1, reward=0.25), False),
        (row(1, reward=1), row(1, reward=1.0), False),  # INTEGER 1 and REAL 1.0 are different bytes
        (row(1, task=b"1"), row(1, task="1"), False),
        (row(1, tags=None), row(1, tags=b""), False),
        (row(1), row(2), False),  # the id is part of the row
    ],
)
def test_a_digest_moves_with_any_value_or_type(before: tuple[Any, ...], after: tuple[Any, ...], same: bool) -> None:
    assert (row_digest(before) == row_digest(after)) is same


def test_only_new_or_moved_rows_are_changed() -> None:
    digests = RowDigests()
    rows = [row(i) for i in (1, 2, 3, 5)]
    assert digests.changed(rows) == rows  # nothing settled yet
    digests.remember(rows)
    assert digests.changed(rows) == []
    edited = [row(1), row(2, task=b"edited"), row(3), row(4), row(5)]
    assert [r[0] for r in digests.changed(edited)] == [2, 4]


def test_ids_out_of_order_are_kept_in_order() -> None:
    digests = RowDigests()
    digests.remember([row(10), row(20)])
    digests.remember([row(15), row(5), row(20, task=b"x")])  # a reinsert below the top, an edit
    assert len(digests) == 4
    assert digests.get(15) == row_digest(row(15))
    assert digests.get(20) == row_digest(row(20, task=b"x"))
    assert digests.get(7) is None
    digests.forget_all()
    assert digests.changed([row(10)]) == [row(10)]


def test_rows_out_of_id_order_never_hide_a_moved_row() -> None:
    """Re-checks read rows in id order; given another order, a row may be reported moved when it
    did not (converted once more), never the other way round."""
    digests = RowDigests()
    digests.remember([row(i) for i in range(1, 6)])
    moved = digests.changed([row(5), row(2, task=b"moved"), row(3), row(9)])
    assert {row(2, task=b"moved"), row(9)} <= set(moved)
    assert row(5) not in moved
