"""One syncer per site: an advisory lock on a file beside the sidecar, holding the owner's pid and
role ("daemon" or "once").

flock is released by the kernel when the process dies, even by kill -9, so a stale lock file
never keeps a restarted daemon out. The role lets ``sync --once`` ask a running daemon for a pass
(SIGUSR1) while it waits, instead, for another one-shot to finish: a one-shot has no use for the
signal.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from sync.errors import AlreadyRunning

DAEMON = "daemon"
ONCE = "once"


@dataclass(frozen=True, slots=True)
class Holder:
    pid: int  # -1 when the file does not say
    role: str


class SiteLock:
    def __init__(self, path: Path, site: str, role: str = DAEMON, wait: float = 0.0) -> None:
        """``wait``: seconds to wait for the current holder to let go before giving up."""
        self.path = path
        self.site = site
        self.role = role
        self.wait = wait
        self._fd: int | None = None

    def acquire(self) -> SiteLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                os.close(fd)
                holder = lock_holder(self.path)
                who = f"pid {holder.pid}" if holder and holder.pid > 0 else "another process"
                raise AlreadyRunning(
                    f"memsync is already syncing site {self.site!r} ({who}, lock {self.path}); "
                    "stop it first, or see `memsync status`",
                    holder.pid if holder else None,
                ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()} {self.role}\n".encode())
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


def lock_holder(path: Path) -> Holder | None:
    """Who holds the lock now, or None when nobody does (also when no lock file can be there: a
    folder on its way is a file). Any other OSError (no access) is the caller's to say."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            words = os.read(fd, 64).decode(errors="replace").split()
            pid = int(words[0]) if words and words[0].isdigit() else -1
            return Holder(pid, words[1] if len(words) > 1 else DAEMON)
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def holder_pid(path: Path) -> int | None:
    """The pid of the live process holding the lock (-1 if it does not say), or None."""
    holder = lock_holder(path)
    return None if holder is None else holder.pid
