"""One daemon per site: an advisory lock on a file beside the sidecar, holding the owner's pid.

flock is released by the kernel when the process dies, even by kill -9, so a stale lock file
never keeps a restarted daemon out.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from sync.errors import AlreadyRunning


class SiteLock:
    def __init__(self, path: Path, site: str) -> None:
        self.path = path
        self.site = site
        self._fd: int | None = None

    def acquire(self) -> SiteLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = holder_pid(self.path)
            who = f"pid {pid}" if pid else "another process"
            raise AlreadyRunning(
                f"memsync is already syncing site {self.site!r} ({who}, lock {self.path}); "
                "stop it first, or see `memsync status`",
                pid,
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SiteLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


def holder_pid(path: Path) -> int | None:
    """The pid of the live process holding the lock, or None when nobody holds it."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.read(fd, 32).decode(errors="replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
