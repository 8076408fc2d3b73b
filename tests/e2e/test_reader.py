"""The AgentDB reader against files written by the real agentdb packages, while they write."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GEN, V3ALPHA, V139, read_agentdb_rows, require_node_modules
from harness import live_agent_argv

from sync.agentdb import AgentDBReader, FileStamp, file_stamp
from sync.errors import SnapshotNotReady, SourceUnavailable


def snapshot_rows(reader: AgentDBReader) -> tuple[str, dict[int, dict[str, Any]]]:
    with reader.snapshot() as snap:
        return snap.mode, {r["id"]: r for r in snap.rows_between(0, None, 1_000_000)}


def test_a_snapshot_returns_exactly_what_the_package_wrote(make_agentdb: Callable[..., Path]) -> None:
    path = make_agentdb(200, edge_cases=True)
    mode, rows = snapshot_rows(AgentDBReader(path))
    stored = read_agentdb_rows(path)
    assert mode == "file"
    assert rows.keys() == stored.keys()
    for local_id, row in rows.items():
        for column, value in stored[local_id].items():
            assert row[column] == value, (local_id, column)


def test_reading_never_writes_to_the_agentdb_file_or_beside_it(make_agentdb: Callable[..., Path]) -> None:
    path = make_agentdb(50)
    before = hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns
    reader = AgentDBReader(path)
    for _ in range(3):
        with reader.snapshot() as snap:
            assert snap.count() == 50
    assert (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_rows_come_in_id_order_in_batches(make_agentdb: Callable[..., Path]) -> None:
    path = make_agentdb(50)
    with AgentDBReader(path).snapshot() as snap:
        first = snap.rows_between(10, None, 7)
        assert [r["id"] for r in first] == list(range(11, 18))
        assert [r["id"] for r in snap.rows_between(10, 12, 100)] == [11, 12]
        assert [r["id"] for r in snap.rows_by_id([5, 3, 99])] == [3, 5]
        assert snap.count_after(45) == 5
        assert snap.max_id() == 50


@pytest.mark.parametrize(
    ("content", "words"),
    [
        pytest.param(b"this is a text file, not a database\n" * 10, "not a SQLite file", id="text"),
        pytest.param(b"\x89PNG\r\n\x1a\n" + b"\x00" * 200, "not a SQLite file", id="png"),
    ],
)
def test_files_that_are_not_sqlite_are_reported_by_name(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "agentdb.db"
    path.write_bytes(content)
    reader = AgentDBReader(path)
    with pytest.raises(SourceUnavailable, match=words) as raised:
        reader.snapshot()
    assert str(path) in str(raised.value)
    assert not reader.has_changed()  # not read again until the file changes
    path.write_bytes(content + b"more")
    assert reader.has_changed()


def test_a_sqlite_file_without_episodes_says_so(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    conn.commit()
    conn.close()
    with pytest.raises(SourceUnavailable, match=r"no episodes table \(tables: notes\)"):
        AgentDBReader(path).snapshot()


def test_a_missing_file_is_reported_and_watched_for(tmp_path: Path, make_agentdb: Callable[..., Path]) -> None:
    path = tmp_path / "later" / "agentdb.db"
    reader = AgentDBReader(path)
    with pytest.raises(SourceUnavailable, match="does not exist"):
        reader.snapshot()
    assert not reader.has_changed()
    path.parent.mkdir()
    path.write_bytes(make_agentdb(5).read_bytes())
    assert reader.has_changed()
    with reader.snapshot() as snap:
        assert snap.count() == 5


def test_a_torn_file_is_retried_and_never_yields_rows(make_agentdb: Callable[..., Path], tmp_path: Path) -> None:
    whole = make_agentdb(50).read_bytes()
    path = tmp_path / "torn.db"
    path.write_bytes(whole[: len(whole) // 2])  # what a reader sees mid-rewrite
    pauses: list[float] = []
    reader = AgentDBReader(path, attempts=4, sleep=pauses.append)
    with pytest.raises(SnapshotNotReady, match="kept changing while being read"):
        reader.snapshot()
    assert len(pauses) == 4
    path.write_bytes(whole)  # the writer finishes
    with reader.snapshot() as snap:
        assert snap.count() == 50


def test_a_stamp_changes_with_every_kind_of_write(make_agentdb: Callable[..., Path]) -> None:
    path = make_agentdb(5)
    reader = AgentDBReader(path, clock_ns=lambda: time.time_ns() + 10**10)  # every write looks old
    reader.snapshot().close()
    assert not reader.has_changed()
    data = path.read_bytes()
    path.write_bytes(data)  # an in-place rewrite with the same bytes still moves mtime/ctime
    os.utime(path, ns=(1, 1))  # even with the clock set back, ctime moves
    assert reader.has_changed()


def test_a_write_in_the_same_clock_tick_is_not_missed(make_agentdb: Callable[..., Path]) -> None:
    """Racy-git: a read right after a write stays suspect until the file is older than the window."""
    path = make_agentdb(5)
    now = [time.time_ns()]
    reader = AgentDBReader(path, clock_ns=lambda: now[0])
    os.utime(path, ns=(now[0], now[0]))
    reader.snapshot().close()
    assert reader.has_changed(), "a file written this instant must be read again"
    now[0] += 3 * 10**9
    reader.snapshot().close()
    assert not reader.has_changed()


def test_snapshots_under_a_live_sqljs_writer_are_always_consistent(tmp_path: Path) -> None:
    """The real package rewrites the whole file in place after every episode; every snapshot taken
    meanwhile must be a prefix of the final rows, identical row by row."""
    require_node_modules(GEN)
    path = tmp_path / "live.db"
    writer = subprocess.Popen(
        live_agent_argv(path, 300, interval_ms=0, seed=3),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert writer.stdout is not None
    first = writer.stdout.readline()  # the file exists once the first save is done
    assert json.loads(first)["id"] == 1
    reader = AgentDBReader(path, attempts=200, pause=0.001)
    seen: list[dict[int, dict[str, Any]]] = []
    not_ready = 0
    while writer.poll() is None:
        try:
            seen.append(snapshot_rows(reader)[1])
        except SnapshotNotReady:
            not_ready += 1
    writer.stdout.read()
    writer.stdout.close()
    assert writer.wait() == 0
    final = read_agentdb_rows(path)
    assert len(final) == 300
    assert len(seen) >= 5, f"only {len(seen)} snapshots taken ({not_ready} not ready)"
    for rows in seen:
        assert list(rows) == list(range(1, len(rows) + 1)), "a snapshot lost or invented a row"
        for local_id, row in rows.items():
            stored = final[local_id]
            assert {k: row[k] for k in stored} == stored, f"row {local_id} differs from what was written"


def _run_writer(folder: Path, db: Path, count: int, interval_ms: int, hold_ms: int) -> subprocess.Popen[str]:
    require_node_modules(folder)
    return subprocess.Popen(
        ["node", str(folder / "writer.mjs"), str(db), str(count), str(interval_ms), str(hold_ms)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )


def test_a_live_wal_writer_is_read_commit_by_commit(tmp_path: Path) -> None:
    """agentdb 1.3.9 commits through better-sqlite3 in WAL mode: the main file stays stale."""
    path = tmp_path / "wal.db"
    writer = _run_writer(V139, path, 12, 150, 4000)
    assert writer.stdout is not None
    counts: list[int] = []
    modes: set[str] = set()
    reader = AgentDBReader(path)
    changes = 0
    for line in writer.stdout:
        event = json.loads(line)
        if "stored" not in event:
            break
        if reader.has_changed():
            changes += 1
        mode, rows = snapshot_rows(reader)
        modes.add(mode)
        counts.append(len(rows))
        assert rows[event["stored"]]["task"] == f"task #{event['i']}".encode()
        if event["i"] == 12:
            assert os.path.exists(f"{path}-wal"), "expected a live WAL"
            assert os.path.getsize(path) <= 8192, "the main file should still be stale"
    writer.stdout.close()
    assert writer.wait(30) == 0
    assert modes == {"wal"}
    assert counts == sorted(counts)
    assert counts[-1] == 12
    assert changes == 12, "every commit must be noticed by the poll"
    mode, rows = snapshot_rows(reader)
    assert mode == "file"
    assert len(rows) == 12


def test_a_rename_writer_is_read_across_inode_changes(tmp_path: Path) -> None:
    """agentdb 3.0.0-alpha saves to a temp file, fsyncs, and renames it over the database."""
    path = tmp_path / "renamed.db"
    writer = _run_writer(V3ALPHA, path, 15, 60, 0)
    assert writer.stdout is not None
    inodes: set[int] = set()
    reader = AgentDBReader(path)
    stop = threading.Event()
    problems: list[str] = []

    def keep_reading() -> None:
        while not stop.is_set():
            try:
                _, rows = snapshot_rows(reader)
                if list(rows) != list(range(1, len(rows) + 1)):
                    problems.append(f"non-contiguous ids {list(rows)}")
            except SnapshotNotReady:
                continue
            except SourceUnavailable:
                continue  # before the first save

    thread = threading.Thread(target=keep_reading)
    thread.start()
    for line in writer.stdout:
        event = json.loads(line)
        if "ino" in event:
            inodes.add(event["ino"])
    writer.stdout.close()
    assert writer.wait(30) == 0
    stop.set()
    thread.join()
    assert problems == []
    assert len(inodes) > 1, "the writer should have replaced the file"
    stamp = file_stamp(path)
    assert stamp is not None
    assert not stamp.has_wal
    mode, rows = snapshot_rows(AgentDBReader(path))
    assert mode == "file"
    assert len(rows) == 15


def test_a_wal_commit_is_seen_by_its_counter_and_our_own_reads_are_not(tmp_path: Path) -> None:
    """In WAL mode the stamp carries SQLite's WAL index header: every commit moves it, whatever the
    clock, and nothing a reader does (opening, reading, closing) does."""
    path = tmp_path / "wal.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("CREATE TABLE episodes (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, task TEXT NOT NULL)")
    writer.execute("INSERT INTO episodes (session_id, task) VALUES ('s', 'first')")
    # Every write looks old: only the counter can tell commits apart.
    reader = AgentDBReader(path, clock_ns=lambda: time.time_ns() + 10**10)
    for expected in (1, 1):
        with reader.snapshot() as snap:
            assert (snap.mode, snap.count()) == ("wal", expected)
        assert not reader.has_changed(), "our own read is not a change"
    stamp = file_stamp(path)
    assert stamp is not None
    assert stamp.wal_index is not None
    writer.execute("BEGIN")
    writer.execute("INSERT INTO episodes (session_id, task) VALUES ('s', 'second')")
    assert not reader.has_changed(), "not committed yet"
    writer.execute("COMMIT")
    assert reader.has_changed()
    with reader.snapshot() as snap:
        assert snap.count() == 2
    assert not reader.has_changed()
    writer.close()


@pytest.mark.parametrize(
    ("mtime_ns", "window_ns"),
    [
        pytest.param(1_700_000_000_123_456_789, 20_000_000, id="nanosecond clock"),
        pytest.param(1_700_000_000_000_000_000, 2_000_000_000, id="whole seconds"),
        pytest.param(1_700_000_000_123_000_000, 50_000_000, id="milliseconds"),
    ],
)
def test_the_racy_window_follows_the_file_systems_clock(mtime_ns: int, window_ns: int) -> None:
    stamp = FileStamp(ino=1, size=4096, mtime_ns=mtime_ns, ctime_ns=mtime_ns)
    assert stamp.racy_window_ns() == window_ns


def test_a_file_rewritten_while_read_in_place_yields_nothing_from_the_new_bytes(
    make_agentdb: Callable[..., Path], tmp_path: Path
) -> None:
    """A whole-file writer's database is read in place, page by page; a rewrite between two queries
    of one pass must stop the pass, not mix two versions of the file."""
    path = tmp_path / "agentdb.db"
    path.write_bytes(make_agentdb(20, name="first.db").read_bytes())
    os.utime(path, ns=(1, 1))  # written long ago: nothing to wait out
    reader = AgentDBReader(path)
    with reader.snapshot() as snap:
        assert (snap.mode, snap.count()) == ("file", 20)
        path.write_bytes(make_agentdb(30, seed=9, name="second.db").read_bytes())  # an agent saves meanwhile
        with pytest.raises(SnapshotNotReady, match="changed while being read"):
            snap.rows_between(0, None, 100)
    assert reader.has_changed()
    with reader.snapshot() as snap:
        assert snap.count() == 30
