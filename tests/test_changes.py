"""File events (daemon.loop.changes): one watcher wakes each watched SQLite file's own event, on real
file systems' events (inotify on Linux, watchfiles elsewhere). Writes repeat until seen, because the watcher starts
asynchronously and a write before its first look is (rightly) not an event."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from daemon.loop.changes import MISSING_FOLDER_RECHECK_S, ChangeWaker

SEEN_WITHIN_S = 20.0


@contextmanager
def watching(targets: Mapping[Path, threading.Event]) -> Iterator[None]:
    waker = ChangeWaker(targets).start()
    try:
        yield
    finally:
        waker.stop()


def touch_until(path: Path, event: threading.Event, timeout: float = SEEN_WITHIN_S) -> bool:
    deadline = time.monotonic() + timeout
    n = 0
    while time.monotonic() < deadline:
        n += 1
        path.write_text(f"write {n}\n", encoding="utf-8")
        if event.wait(0.5):
            return True
    return False


def test_each_file_wakes_its_own_event_even_with_the_same_name(tmp_path: Path) -> None:
    agentdb, hub = tmp_path / "agent" / "memory.db", tmp_path / "hub" / "memory.db"
    agentdb.parent.mkdir()
    hub.parent.mkdir()
    wake, poke = threading.Event(), threading.Event()
    with watching({agentdb: wake, hub: poke}):
        assert touch_until(Path(f"{hub}-wal"), poke)  # a WAL commit touches only -wal
        assert not wake.is_set()
        poke.clear()
        assert touch_until(agentdb, wake)
        time.sleep(0.5)
        assert not poke.is_set()


def test_other_files_in_a_watched_folder_wake_nothing(tmp_path: Path) -> None:
    agentdb = tmp_path / "agentdb.db"
    wake = threading.Event()
    with watching({agentdb: wake}):
        assert touch_until(agentdb, wake)  # the watcher is up
        wake.clear()
        for name in ("notes.txt", "agentdb.db.bak", "hub.db-wal"):
            (tmp_path / name).write_text("x", encoding="utf-8")
        time.sleep(1.0)
        assert not wake.is_set()


def test_a_folder_created_later_is_watched_once_it_exists(tmp_path: Path) -> None:
    agentdb, hub = tmp_path / "agentdb.db", tmp_path / "later" / "hub.db"
    wake, poke = threading.Event(), threading.Event()
    with watching({agentdb: wake, hub: poke}):
        hub.parent.mkdir()
        assert touch_until(hub, poke, timeout=MISSING_FOLDER_RECHECK_S + SEEN_WITHIN_S)
        assert touch_until(agentdb, wake)


def test_through_a_symlinked_folder(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    wake = threading.Event()
    with watching({tmp_path / "link" / "agentdb.db": wake}):
        assert touch_until(real / "agentdb.db", wake)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: elsewhere watchfiles has no event kinds")
def test_a_write_into_the_database_file_wakes_only_when_the_writer_is_done(tmp_path: Path) -> None:
    """sql.js truncates the file, exports for tens of milliseconds, then writes and closes it: a
    read woken by the truncation would find an empty or half-written file and try again and again.
    Its close is the commit; so is a change to -wal (a WAL writer keeps it open) or -journal."""
    db = tmp_path / "agentdb.db"
    db.write_bytes(b"")
    wake = threading.Event()
    with watching({db: wake}):
        assert touch_until(db, wake)  # the watcher is up: a whole write-and-close wakes it
        wake.clear()
        with db.open("r+b") as writer:
            writer.truncate(0)
            writer.write(b"half a database")
            writer.flush()
            assert not wake.wait(0.5), "woken while the file was still open for writing"
        assert wake.wait(SEEN_WITHIN_S), "its close must wake the loop"
        wake.clear()
        with Path(f"{db}-wal").open("ab") as wal:  # a WAL writer appends frames and keeps it open
            wal.write(b"frame")
            wal.flush()
            assert wake.wait(SEEN_WITHIN_S)
