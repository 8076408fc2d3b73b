"""The collection lifecycle's decisions (``sync.search.collection.lifecycle``) from tables, and the executor's
leftover drop (``sync.search.indexing.rebuilder``) against the real engine. The rebuild itself, its switch and
its retirements run end to end in test_warm_purge.py (purge, interrupted purge, restart) and
test_warm_daemon.py (another model refused until ``memsync reindex``)."""

from __future__ import annotations

from itertools import product
from pathlib import Path
from typing import Any

import pytest

from sync.search.collection.cursor import CursorFile
from sync.search.collection.lifecycle import (
    ALONE_MISMATCH_WAIT,
    Facts,
    Leftovers,
    Step,
    leftovers,
    mismatch_wait,
    next_step,
    owes_work,
    shown_purge,
)
from sync.search.indexing.rebuilder import Rebuilder
from sync.search.stores import EdgeStore

# reindex asked, mismatch, drained, stopping, purge owed -> the step
STEPS = [
    pytest.param(Facts(), Step.INDEX, id="a pass short of the feed's end, nothing owed"),
    pytest.param(Facts(drained=True), Step.INDEX, id="drained, nothing owed"),
    pytest.param(Facts(purge_owed=True), Step.INDEX, id="purge owed but the feed not drained: after the burst"),
    pytest.param(Facts(drained=True, purge_owed=True), Step.PURGE, id="drained with a purge owed"),
    pytest.param(Facts(drained=True, purge_owed=True, stopping=True), Step.INDEX, id="stopping: the purge waits"),
    pytest.param(Facts(mismatch=True), Step.WAIT_FOR_REINDEX, id="another model built it"),
    pytest.param(
        Facts(mismatch=True, drained=True, purge_owed=True), Step.WAIT_FOR_REINDEX, id="mismatch before the purge"
    ),
    pytest.param(Facts(reindex_asked=True), Step.REBUILD, id="reindex"),
    pytest.param(Facts(reindex_asked=True, mismatch=True), Step.REBUILD, id="reindex fixes a mismatch"),
    pytest.param(Facts(reindex_asked=True, stopping=True), Step.REBUILD, id="reindex while stopping: it says so"),
    pytest.param(Facts(reindex_asked=True, drained=True, purge_owed=True), Step.REBUILD, id="reindex purges too"),
]


@pytest.mark.parametrize(("facts", "step"), STEPS)
def test_next_step(facts: Facts, step: Step) -> None:
    assert next_step(facts) is step


def test_a_purge_only_when_drained_owed_and_not_stopping_and_reindex_wins_everywhere() -> None:
    for asked, mismatch, drained, stopping, owed in product([False, True], repeat=5):
        facts = Facts(asked, mismatch, drained, stopping, owed)
        if asked:
            assert next_step(facts) is Step.REBUILD, facts
        elif mismatch:
            assert next_step(facts) is Step.WAIT_FOR_REINDEX, facts
        else:
            assert (next_step(facts) is Step.PURGE) == (drained and owed and not stopping), facts


@pytest.mark.parametrize(
    ("shared", "interval", "wait"),
    [
        pytest.param(False, 30.0, ALONE_MISMATCH_WAIT, id="alone: only a reindex here (which wakes it) fixes it"),
        pytest.param(True, 30.0, 30.0, id="a shared Qdrant: another site's reindex may have moved the alias"),
        pytest.param(True, 10.0, 10.0, id="shared, on Convex's interval"),
    ],
)
def test_how_long_a_mismatch_waits_before_looking_again(shared: bool, interval: float, wait: float) -> None:
    assert mismatch_wait(shared=shared, catch_up_interval=interval) == wait


LEFTOVERS = [
    pytest.param("c", [], Leftovers(drop=(), keep=()), id="nothing listed"),
    pytest.param("c", ["c-2"], Leftovers(drop=("c-2",), keep=()), id="a half-built one"),
    pytest.param("c-2", ["c-2"], Leftovers(drop=(), keep=("c-2",)), id="switched before the crash: it serves"),
    pytest.param("c-2", ["c", "c-2"], Leftovers(drop=("c",), keep=("c-2",)), id="switched, old not dropped yet"),
    pytest.param("c", ["c-1", "c-2"], Leftovers(drop=("c-1", "c-2"), keep=()), id="two, in listed order"),
]


@pytest.mark.parametrize(("active", "listed", "expected"), LEFTOVERS)
def test_leftovers(active: str, listed: list[str], expected: Leftovers) -> None:
    assert leftovers(active, listed) == expected


@pytest.mark.parametrize(
    ("purge_owed", "listed", "owed"),
    [
        pytest.param(False, [], False, id="nothing"),
        pytest.param(True, [], True, id="a purge"),
        pytest.param(False, ["c"], False, id="only the active one listed: nothing to drop"),
        pytest.param(False, ["c-2"], True, id="a collection to drop"),
    ],
)
def test_owes_work(purge_owed: bool, listed: list[str], owed: bool) -> None:
    assert owes_work("c", purge_owed=purge_owed, to_drop=listed) is owed


@pytest.mark.parametrize(
    ("last", "owed", "shown"),
    [
        pytest.param({}, False, None, id="never purged, nothing owed"),
        pytest.param({}, True, {"state": "owed"}, id="owed"),
        pytest.param({"state": "purged", "copied": 5}, True, {"state": "owed", "copied": 5}, id="purged, owed again"),
        pytest.param({"state": "purged", "copied": 5}, False, {"state": "purged", "copied": 5}, id="purged"),
        pytest.param({"state": "purging"}, True, {"state": "purging"}, id="under way"),
        pytest.param({"state": "failed", "detail": "x"}, True, {"state": "failed", "detail": "x"}, id="failed"),
    ],
)
def test_shown_purge(last: dict[str, Any], owed: bool, shown: dict[str, Any] | None) -> None:
    assert shown_purge(last, owed=owed) == shown


class Pointer:
    """The pointer's contract with the active collection fixed: ``drop_leftovers`` only reads it."""

    drops_at_switch = True

    def building(self, physical: str) -> None:
        pass

    def __init__(self, active: str) -> None:
        self._active = active

    def active(self) -> str:
        return self._active

    def switch(self, physical: str) -> None:
        self._active = physical

    def fresh(self) -> str:
        return f"{self._active}-fresh"


def test_the_executor_drops_what_an_interrupted_rebuild_left_and_keeps_the_serving_one(tmp_path: Path) -> None:
    for name in ("c-half", "c-other"):
        made = EdgeStore(tmp_path / "qdrant")
        made.open_or_create(name, "local-minilm", 8)
        made.close()
    store = EdgeStore(tmp_path / "qdrant")
    cursor_file = CursorFile(tmp_path / "indexer.json")
    try:
        store.open_or_create("c", "local-minilm", 8)  # the serving collection, open as the live handle has it
        for name in ("c-half", "c"):
            cursor_file.drop_unless_active(name)
            cursor_file.write(name, 3)
        cursor_file.owe_purge("c-half")
        Rebuilder(Pointer("c"), cursor_file, lambda: store, lambda: False).drop_leftovers(store)
        assert sorted(p.name for p in (tmp_path / "qdrant").iterdir()) == ["c", "c-other"]
        assert cursor_file.to_drop() == []
        assert not cursor_file.purge_owed("c-half")
        assert (cursor_file.read("c-half"), cursor_file.read("c")) == (0, 3)
        assert not cursor_file.owes_work("c")
    finally:
        store.close()
