"""Waking the run loop early when the AgentDB file changes.

The poll (a stat of the file and its -wal, see ``sync.agentdb``) is the source of truth: it works
on every file system. File events only cut the wait short. We watch the folder, not the file,
because a WAL commit only touches ``-wal`` and a rename writer replaces the file's inode.

watchfiles checks for events every ``step`` milliseconds, taking the GIL each time: a 5 ms step
costs about 30 CPU-seconds an hour doing nothing. So the waker runs in two gears: a slow step while
the file is quiet (the first event after a quiet spell is seen within 150-300 ms) and a fast
step while a writer is busy (each save seen within milliseconds), dropping back after a quiet spell.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import structlog
import watchfiles

log = structlog.get_logger("memsync.changes")

QUIET_STEP_MS = 150
BUSY_STEP_MS = 5
# How long the fast gear lasts after the last event.
BUSY_FOR_SECONDS = 10.0


class ChangeWaker:
    """Sets ``wake`` whenever the AgentDB file or one of its side files changes."""

    def __init__(self, path: Path, wake: threading.Event) -> None:
        self.path = path
        self.wake = wake
        self._names = {path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"}
        self._stop = threading.Event()
        self._busy_until = 0.0
        self._thread = threading.Thread(target=self._run, name="memsync-watch", daemon=True)

    def start(self) -> ChangeWaker:
        self._thread.start()
        return self

    def _keep(self, _change: watchfiles.Change, path: str) -> bool:
        return Path(path).name in self._names

    def _busy(self) -> bool:
        return time.monotonic() < self._busy_until

    def _run(self) -> None:
        folder = self.path.parent
        while not self._stop.is_set():
            if not folder.is_dir():
                # Nothing to watch yet; the poll still runs. Look again in a while.
                self._stop.wait(5.0)
                continue
            try:
                self._watch(folder, busy=self._busy())
            except (OSError, RuntimeError) as exc:
                log.debug("file events unavailable; polling only", error=str(exc))
                self._stop.wait(5.0)

    def _watch(self, folder: Path, *, busy: bool) -> None:
        """Watch in one gear until the gear should change (or we are stopped)."""
        step = BUSY_STEP_MS if busy else QUIET_STEP_MS
        for changes in watchfiles.watch(
            folder,
            watch_filter=self._keep,
            stop_event=self._stop,
            debounce=max(50, step),
            step=step,
            # In the fast gear, come back now and then to see whether the writer has gone quiet.
            rust_timeout=1000 if busy else 0,
            yield_on_timeout=busy,
            recursive=False,
            raise_interrupt=False,
        ):
            if changes:
                self.wake.set()
                self._busy_until = time.monotonic() + BUSY_FOR_SECONDS
            if self._busy() != busy:
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
