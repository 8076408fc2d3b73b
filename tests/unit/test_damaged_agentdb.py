"""Tier: unit.

An AgentDB file that stays unreadable is damaged, not being rewritten: bytes overwritten in place,
a file truncated for good, a file emptied. The reader says so (SourceUnavailable, naming the damage)
once the file has stayed as it is past ``SETTLED_NS`` of the monotonic clock, its argument, and
reads it again only when it changes; a file that keeps changing is still a writer at work. Nothing
sleeps: the reader's sleep moves the injected clock."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from harness import episodes_file

from sync.agentdb import SETTLED_NS, AgentDBReader
from sync.errors import SnapshotNotReady, SourceUnavailable

PAGE = 4096


class Clock:
    """The reader's monotonic clock, moved by its sleeps (and by the test)."""

    def __init__(self) -> None:
        self.ns = 10**12

    def __call__(self) -> int:
        return self.ns

    def sleep(self, seconds: float) -> None:
        self.ns += int(seconds * 1e9)


def overwrite(path: Path, offset: int, data: bytes) -> None:
    """Bytes written over the file in place, as a faulty disk or a stray program would."""
    with path.open("r+b") as f:
        f.seek(offset)
        f.write(data)


@pytest.fixture
def good(tmp_path: Path) -> bytes:
    return episodes_file(tmp_path / "good.db", 40).read_bytes()


def read_all(reader: AgentDBReader) -> int:
    with reader.snapshot() as snap:
        return len(snap.rows_between(0, None, 1000))


def test_bytes_overwritten_in_place_are_damage_once_the_file_stays_so(tmp_path: Path, good: bytes) -> None:
    path = tmp_path / "agentdb.db"
    path.write_bytes(good)
    clock = Clock()
    reader = AgentDBReader(path, sleep=clock.sleep, monotonic_ns=clock)
    assert read_all(reader) == 40
    overwrite(path, PAGE + 8, b"\xff" * 300)  # the episodes table's root page

    with pytest.raises(SnapshotNotReady, match="malformed"):
        read_all(reader)  # at first it may be a writer at work
    assert reader.has_changed()
    clock.ns += SETTLED_NS
    with pytest.raises(SourceUnavailable) as damaged:
        read_all(reader)
    said = str(damaged.value)
    assert said.startswith(f"{path} is damaged (reading episodes failed: database disk image is malformed)"), said
    assert "has not changed for 2 s" in said
    assert not reader.has_changed(), "not read again until it changes"

    path.write_bytes(good)  # restored from a backup
    assert reader.has_changed()
    assert read_all(reader) == 40


@pytest.mark.parametrize("keep", [PAGE * 3, 50, 0], ids=["pages", "half a header", "empty"])
def test_a_file_truncated_for_good_is_not_kept_changing(tmp_path: Path, good: bytes, keep: int) -> None:
    path = tmp_path / "agentdb.db"
    path.write_bytes(good[:keep])
    clock = Clock()
    reader = AgentDBReader(path, sleep=clock.sleep, monotonic_ns=clock)
    with pytest.raises(SourceUnavailable) as damaged:
        reader.snapshot()
    said = str(damaged.value)
    assert "kept changing" not in said
    if keep == 0:
        assert said == f"{path}: file is empty"
    else:
        assert said.startswith(f"{path} is damaged ("), said
    assert not reader.has_changed()


def test_an_empty_file_ahead_of_the_clock_is_empty(tmp_path: Path) -> None:
    """Its own time cannot say how long it has been empty: a clock stepped back would wait forever."""
    path = tmp_path / "agentdb.db"
    path.write_bytes(b"")
    ahead = 4_000_000_000_000_000_000
    os.utime(path, ns=(ahead, ahead))
    clock = Clock()
    with pytest.raises(SourceUnavailable, match="file is empty"):
        AgentDBReader(path, sleep=clock.sleep, monotonic_ns=clock).snapshot()


def test_a_torn_file_that_keeps_changing_is_a_writer_at_work(tmp_path: Path, good: bytes) -> None:
    path = tmp_path / "agentdb.db"
    clock = Clock()
    sizes = iter(range(200, len(good), 101))

    def writer_at_work(seconds: float) -> None:
        clock.sleep(seconds)
        path.write_bytes(good[: next(sizes)])  # each look finds it longer, still torn

    path.write_bytes(good[:100])
    reader = AgentDBReader(path, attempts=30, sleep=writer_at_work, monotonic_ns=clock)
    with pytest.raises(SnapshotNotReady, match="kept changing while being read"):
        reader.snapshot()
    assert clock.ns - 10**12 > SETTLED_NS, "it went on past the settling time"
