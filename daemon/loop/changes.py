"""Waking a loop early when a SQLite file changes: the run loop on the AgentDB file, the warm
layer on the embedded hub (where other sites' episodes arrive).

Polls are the source of truth (a stat of the AgentDB file and its -wal, see ``sync.source.agentdb.reader``; the
warm layer's catch-up look at the hub's feed): they work on every file system. File events only
cut the wait short. One watcher serves every file, so a second file costs no second wake-up
schedule.

On Linux the watcher blocks on an inotify descriptor (``daemon.loop.inotify``): no CPU at all until an
event, then a few milliseconds' settling so that a burst of writes (a commit's frames, a whole-file
rewrite) wakes the loop once, after it. It wakes only for the watched files and their journals,
whatever else is written beside them: their folder is watched for names only (a ``-wal`` or
``-journal`` appearing or going, a rename writer's temp file renamed over the database, which
replaces its inode), and each of those files, as it exists now, for its writes. A folder watch for
writes would wake it for every write of every file there: with the hub beside the AgentDB file, for
each of the daemon's own commits to the hub, which tripled its CPU.

Elsewhere it uses watchfiles, which checks for events every ``step`` milliseconds, taking the GIL
each time: a 5 ms step costs about 30 CPU-seconds an hour doing nothing. So that watcher runs in
two gears: a slow step while the file is quiet (the first event after a quiet spell is seen within
150-300 ms) and a fast step while a writer is busy (each save seen within milliseconds), dropping
back after a quiet spell.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Mapping
from pathlib import Path

import structlog
import watchfiles

from daemon.loop.inotify import FILE_WRITES, GONE, IN_MODIFY, Inotify, InotifyUnavailable

log = structlog.get_logger("memsync.changes")

QUIET_STEP_MS = 150
BUSY_STEP_MS = 5
# How long the fast gear lasts after the last event.
BUSY_FOR_SECONDS = 10.0


# How often to look again for a watched folder that does not exist yet.
MISSING_FOLDER_RECHECK_S = 5.0
# inotify: after an event, wait until the folder has been quiet this long (at most SETTLE_MAX_S).
SETTLE_S = 0.005
SETTLE_MAX_S = 0.05
# Not -shm: every commit writes -wal, while -shm also moves when a reader (we included) opens the
# database, which would wake us for our own reads.
SIDE_FILES = ("", "-wal", "-journal")
# A write into the database file itself is not a commit yet: a whole-file writer closes it when done
# (sql.js truncates, exports for a while, then writes), a rollback-journal writer deletes -journal, a
# WAL writer writes -wal. So the database file is watched for its close, not its every write.
MAIN_FILE_WRITES = FILE_WRITES & ~IN_MODIFY


class ChangeWaker:
    """Sets a file's event whenever that SQLite file or one of its side files changes."""

    def __init__(self, targets: Mapping[Path, threading.Event]) -> None:
        # Routed by full path (two watched files may share a name in different folders), with the
        # folders' symlinks resolved: we watch the real folders, so events name real paths.
        self._routes: dict[str, threading.Event] = {
            os.path.join(_real_folder(path), path.name + suffix): event
            for path, event in targets.items()
            for suffix in SIDE_FILES
        }
        self._folders = sorted({Path(_real_folder(path)) for path in targets})
        self._main_files = {os.path.join(_real_folder(path), path.name) for path in targets}
        self._stop = threading.Event()
        self._stop_r, self._stop_w = os.pipe()  # wakes a select() on the inotify descriptor
        self._busy_until = 0.0
        # How often the watcher thread woke for file events (routed or not): what the files beside
        # the watched ones cost.
        self.wakeups = 0
        self._thread = threading.Thread(target=self._run, name="memsync-watch", daemon=True)

    def start(self) -> ChangeWaker:
        self._thread.start()
        return self

    def _keep(self, _change: watchfiles.Change, path: str) -> bool:
        return path in self._routes

    def _busy(self) -> bool:
        return time.monotonic() < self._busy_until

    def _run(self) -> None:
        try:
            inotify = Inotify()
        except InotifyUnavailable as exc:
            log.debug("inotify unavailable; watching with watchfiles", error=str(exc))
            self._run_watchfiles()
            return
        try:
            self._run_inotify(inotify)
        finally:
            inotify.close()

    # -- inotify (Linux) ----------------------------------------------------------------------------
    def _run_inotify(self, inotify: Inotify) -> None:
        while not self._stop.is_set():
            missing = self._watch_missing(inotify)
            self._watch_files(inotify)
            timeout = MISSING_FOLDER_RECHECK_S if missing else None
            ready, _, _ = select.select([inotify.fileno(), self._stop_r], [], [], timeout)
            if inotify.fileno() in ready and not self._stop.is_set():
                self.wakeups += 1
                for event in self._settle(inotify):
                    event.set()

    def _watch_files(self, inotify: Inotify) -> None:
        """Watch each file as it is now: one created or renamed in since the last look (its folder's
        event woke us for it) is a new inode; watching one already watched costs one system call."""
        for path in self._routes:
            # One not there (yet) is skipped: its folder's watch says when it appears.
            with contextlib.suppress(OSError):
                inotify.watch_file(Path(path), MAIN_FILE_WRITES if path in self._main_files else FILE_WRITES)

    def _watch_missing(self, inotify: Inotify) -> bool:
        """Watch the folders not watched yet (new, or gone and back); True if some still do not exist."""
        watched = set(inotify.watched.values())
        missing = False
        for folder in self._folders:
            if folder in watched:
                continue
            try:
                inotify.watch(folder)
            except OSError:
                missing = True  # not there (yet); the polls still run
        return missing

    def _settle(self, inotify: Inotify) -> set[threading.Event]:
        """The events for the files that changed, once the burst of writes has settled."""
        hit: set[threading.Event] = set()
        deadline = time.monotonic() + SETTLE_MAX_S
        while True:
            for watched, mask, name in inotify.read():
                if watched is None:  # the kernel's queue overflowed: anything may have changed
                    hit.update(self._routes.values())
                    continue
                if not name and mask & GONE:
                    # A file's old inode let go (renamed over, deleted): its folder's event said so.
                    continue
                path = os.path.join(watched, name) if name else str(watched)
                if (event := self._routes.get(path)) is not None:
                    hit.add(event)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([inotify.fileno()], [], [], min(SETTLE_S, remaining))[0]:
                return hit

    # -- watchfiles (elsewhere) ---------------------------------------------------------------------
    def _run_watchfiles(self) -> None:
        while not self._stop.is_set():
            folders = [f for f in self._folders if f.is_dir()]
            if not folders:
                # Nothing to watch yet; the polls still run. Look again in a while.
                self._stop.wait(MISSING_FOLDER_RECHECK_S)
                continue
            try:
                self._watch(folders, busy=self._busy(), complete=len(folders) == len(self._folders))
            except (OSError, RuntimeError) as exc:
                log.debug("file events unavailable; polling only", error=str(exc))
                self._stop.wait(MISSING_FOLDER_RECHECK_S)

    def _watch(self, folders: list[Path], *, busy: bool, complete: bool) -> None:
        """Watch in one gear until the gear should change, a missing folder may have appeared, or
        we are stopped."""
        step = BUSY_STEP_MS if busy else QUIET_STEP_MS
        # Come back now and then: in the fast gear to see whether the writers have gone quiet,
        # with a folder missing to see whether it exists now.
        timeout_ms = 1000 if busy else 0 if complete else int(MISSING_FOLDER_RECHECK_S * 1000)
        started = time.monotonic()
        for changes in watchfiles.watch(
            *folders,
            watch_filter=self._keep,
            stop_event=self._stop,
            debounce=max(50, step),
            step=step,
            rust_timeout=timeout_ms,
            yield_on_timeout=timeout_ms > 0,
            recursive=False,
            raise_interrupt=False,
        ):
            for _change, path in changes:
                self._routes[path].set()
            if changes:
                self.wakeups += 1
                self._busy_until = time.monotonic() + BUSY_FOR_SECONDS
            if self._busy() != busy:
                return
            if not complete and time.monotonic() - started >= MISSING_FOLDER_RECHECK_S:
                return

    def stop(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            os.write(self._stop_w, b"\0")
        self._thread.join(timeout=5.0)
        for fd in (self._stop_r, self._stop_w):
            os.close(fd)


def _real_folder(path: Path) -> str:
    return os.path.realpath(path.absolute().parent)
