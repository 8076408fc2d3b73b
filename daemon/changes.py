"""Waking the run loop early when the AgentDB file changes.

The poll (a stat of the file and its -wal, see ``sync.agentdb``) is the source of truth: it works
on every file system. File events only cut the wait short. We watch the folder, not the file,
because a WAL commit only touches ``-wal`` and a rename writer replaces the file's inode.
"""

from __future__ import annotations

import threading
from pathlib import Path

import structlog
import watchfiles

log = structlog.get_logger("memsync.changes")


class ChangeWaker:
    """Sets ``wake`` whenever the AgentDB file or one of its side files changes."""

    def __init__(self, path: Path, wake: threading.Event) -> None:
        self.path = path
        self.wake = wake
        self._names = {path.name, f"{path.name}-wal", f"{path.name}-shm", f"{path.name}-journal"}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="memsync-watch", daemon=True)

    def start(self) -> ChangeWaker:
        self._thread.start()
        return self

    def _keep(self, _change: watchfiles.Change, path: str) -> bool:
        return Path(path).name in self._names

    def _run(self) -> None:
        folder = self.path.parent
        while not self._stop.is_set():
            if not folder.is_dir():
                # Nothing to watch yet; the poll still runs. Look again in a while.
                self._stop.wait(5.0)
                continue
            try:
                # step/debounce small: a writer that saves every 50 ms must not starve the batch.
                for _ in watchfiles.watch(
                    folder,
                    watch_filter=self._keep,
                    stop_event=self._stop,
                    debounce=50,
                    step=5,
                    rust_timeout=5000,
                    recursive=False,
                    raise_interrupt=False,
                ):
                    self.wake.set()
            except (OSError, RuntimeError) as exc:
                log.debug("file events unavailable; polling only", error=str(exc))
                self._stop.wait(5.0)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
