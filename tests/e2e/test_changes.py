"""File events (daemon.loop.changes): one watcher wakes each watched SQLite file's own event, on real
file systems' events (inotify on Linux, watchfiles elsewhere). Writes repeat until seen, because the watcher starts
asynchronously and a write before its first look is (rightly) not an event."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import (
    V139,
    SiteFiles,
    hub_episodes,
    require_node_modules,
    stop_daemon,
    wait_for,
    wait_started,
    wal_commits,
)
from harness import sidecar_value

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
        time.sleep(0.5)  # on purpose: an event for the other file would have come by now
        assert not poke.is_set()


def test_other_files_in_a_watched_folder_wake_nothing(tmp_path: Path) -> None:
    agentdb = tmp_path / "agentdb.db"
    wake = threading.Event()
    with watching({agentdb: wake}):
        assert touch_until(agentdb, wake)  # the watcher is up
        wake.clear()
        for name in ("notes.txt", "agentdb.db.bak", "hub.db-wal"):
            (tmp_path / name).write_text("x", encoding="utf-8")
        time.sleep(1.0)  # on purpose: an event for these files would have come by now
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


def commit_often(db: Path, commits: int) -> None:
    """What the daemon does to its hub: commits in WAL mode, from a connection it keeps open."""
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE IF NOT EXISTS t (x TEXT)")
        conn.commit()
        for i in range(commits):
            conn.execute("INSERT INTO t VALUES (?)", (f"row {i}" * 50,))
            conn.commit()
    finally:
        conn.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inotify: watchfiles wakes on its own step")
def test_the_hub_and_other_files_beside_the_agentdb_file_never_wake_the_watcher(tmp_path: Path) -> None:
    """A hub beside the AgentDB file used to wake the watcher for each of the daemon's own commits
    (a folder watch sees every write of every file in it), tripling its CPU. Now the folder is
    watched for names only and the AgentDB file and its journals for their writes: the hub's
    commits, and the writes of other files that already exist there, cost no wake-up at all."""
    agentdb, hub, notes = tmp_path / "agentdb.db", tmp_path / "hub.db", tmp_path / "notes.txt"
    # Held open, as the daemon holds its hub and a WAL writer its database: their -wal and -shm
    # exist before the watch starts and stay.
    held = {path: sqlite3.connect(path) for path in (agentdb, hub)}
    for conn in held.values():
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.commit()
    notes.write_text("x", encoding="utf-8")
    wake = threading.Event()
    waker = ChangeWaker({agentdb: wake}).start()

    def agent_commits_until_seen() -> bool:
        deadline = time.monotonic() + SEEN_WITHIN_S
        while time.monotonic() < deadline:
            held[agentdb].execute("INSERT INTO t VALUES ('episode')")
            held[agentdb].commit()
            if wake.wait(0.5):
                return True
        return False

    try:
        assert agent_commits_until_seen()  # the watcher is up
        time.sleep(0.5)  # the tail of that commit's events (nothing observable says it has ended)
        wake.clear()
        before = waker.wakeups
        commit_often(hub, 100)
        for i in range(20):
            notes.write_text(f"line {i}\n", encoding="utf-8")  # rewritten in place: no new name
        time.sleep(1.0)  # on purpose: a wake-up by these writes would have come by now
        assert waker.wakeups == before, f"woken {waker.wakeups - before} times by files that are not watched"
        assert not wake.is_set()
        assert agent_commits_until_seen(), "the AgentDB file's own commit must still wake it"
        assert waker.wakeups > before
    finally:
        waker.stop()
        for conn in held.values():
            conn.close()


def test_a_temp_file_renamed_over_the_database_wakes_it_and_the_new_file_is_watched(tmp_path: Path) -> None:
    """agentdb 3.0 alpha saves to ``.<name>.<pid>.<uuid>.tmp`` beside the database, fsyncs it and
    renames it over the database (a new inode each save). Writing the temp file wakes nothing; the
    rename does, and so do the writes into the file that now has the name."""
    db = tmp_path / "agentdb.db"
    db.write_bytes(b"first")
    wake = threading.Event()
    with watching({db: wake}):
        assert touch_until(db, wake)
        time.sleep(0.5)  # the tail of those writes' events (nothing observable says it has ended)
        wake.clear()
        for save in range(3):
            temp = tmp_path / f".agentdb.db.4242.{save:08d}-uuid.tmp"
            with temp.open("wb") as file:
                file.write(b"saved %d" % save)
                file.flush()
                os.fsync(file.fileno())
            assert not wake.wait(0.5), "woken by the temp file"
            temp.rename(db)
            assert wake.wait(SEEN_WITHIN_S), f"save {save}: the rename over the database must wake it"
            wake.clear()
        time.sleep(0.5)  # the tail of the renames' events (nothing observable says it has ended)
        wake.clear()
        assert touch_until(db, wake), "a write into the renamed-in file must wake it (its inode is watched)"


def test_a_daemon_with_the_hub_beside_the_agentdb_file_runs_a_pass_per_commit_and_none_for_other_files(
    tmp_path: Path, site_files: Callable[..., SiteFiles], daemons: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """The daemon in a child process, its hub in the AgentDB file's folder, a real agentdb 1.3.9 WAL
    writer: its sync passes (the sidecar's counter) follow the commits, not the daemon's own writes
    to the hub beside them; then other programs' files written in that folder run no pass."""
    require_node_modules(V139)
    files = site_files(agentdb=tmp_path / "wal.db", hub=tmp_path / "hub.db")
    assert files.hub.parent == files.agentdb.parent
    log = tmp_path / "daemon.log"
    proc = daemons(files.config, log)
    wait_started(files, proc, log)
    commits = 30
    try:
        wal_commits(files.agentdb, 1, interval_ms=10, hold_ms=0)  # the schema and a first episode: passes of their own
        wait_for(lambda: len(hub_episodes(files.hub, files.name)) >= 1, what="the first episode in the hub")
        before = settled_passes(files)
        wal_commits(files.agentdb, commits)
        wait_for(lambda: len(hub_episodes(files.hub, files.name)) >= 1 + commits, what="every commit in the hub")
        ran = settled_passes(files) - before
        # One pass per commit at most, give or take the writer's open and close (a checkpoint folds
        # the WAL into the main file) and the window re-check the burst put off. Each pass writes
        # the hub beside the file: were those writes to wake it, each would run another pass.
        assert 1 <= ran <= commits + 5, f"{ran} passes for {commits} commits"
        quiet = settled_passes(files)
        other = tmp_path / "other-program.db"
        commit_often(other, 50)  # another program's SQLite file, with its -wal and -journal
        (tmp_path / "notes.txt").write_text("x" * 10_000, encoding="utf-8")
        (tmp_path / ".wal.db.4242.uuid.tmp").write_bytes(b"a temp file never renamed")
        (tmp_path / "wal.db.bak").write_bytes(files.agentdb.read_bytes())
        time.sleep(2.0)  # on purpose: ten polls' worth, in which no pass may run
        assert passes_of(files) == quiet, "files that are not the AgentDB file's ran passes"
    finally:
        assert stop_daemon(proc) == 0


def passes_of(files: SiteFiles) -> int:
    return int(float(sidecar_value(files.state, "passes") or 0))


def settled_passes(files: SiteFiles, quiet_for: float = 3.0) -> int:
    """The daemon's pass count once it stopped moving for ``quiet_for`` s (a put-off window re-check
    runs within about a second of the last commit)."""
    last, since = passes_of(files), time.monotonic()
    while time.monotonic() - since < quiet_for:
        time.sleep(0.2)
        now = passes_of(files)
        if now != last:
            last, since = now, time.monotonic()
    return last
