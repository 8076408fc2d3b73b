"""Linux's inotify, through ctypes: file events with no polling at all.

watchfiles (the portable watcher, used where this is unavailable) checks for events every ``step``
milliseconds and takes the GIL each time. While an agent writes, that check ran every 5 ms and was
more than half of the daemon's CPU; a blocking read of an inotify descriptor costs nothing until an
event arrives, and is woken within microseconds when one does.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os
import struct
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
IN_ONLYDIR = 0x01000000
# A folder's names changing: a file created, renamed in or out, deleted. Not its files' writes: a
# folder watch with IN_MODIFY wakes us for every write to every file in it (a hub beside the AgentDB
# file woke the watcher for each of the daemon's own commits, and tripled its CPU). The writes of
# the files that matter are watched on the files themselves (``FILE_WRITES``).
FOLDER_NAMES = IN_CREATE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE
# What a writer does to a watched file: append or rewrite in place (IN_MODIFY), finish (IN_CLOSE_WRITE),
# lose a link (IN_ATTRIB: renamed over or deleted).
FILE_WRITES = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE
# The watched thing itself going away: its watch ends (IN_IGNORED follows).
GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
_HEADER = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name


class InotifyUnavailable(OSError):
    pass


@functools.cache
def _libc() -> Any:
    if not sys.platform.startswith("linux"):
        raise InotifyUnavailable("inotify is Linux's")
    libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    for name in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch"):
        if not hasattr(libc, name):
            raise InotifyUnavailable(f"this C library has no {name}")
    libc.inotify_add_watch.argtypes = (ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32)
    return libc


class Inotify:
    """One inotify descriptor watching folders (not recursively) and files; non-blocking, for select()."""

    def __init__(self) -> None:
        libc = _libc()
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            errno = ctypes.get_errno()
            raise InotifyUnavailable(errno, f"inotify_init1: {os.strerror(errno)}")
        self._fd = int(fd)
        self.watched: dict[int, Path] = {}  # by watch descriptor: a folder, or a file

    def fileno(self) -> int:
        return self._fd

    def watch(self, folder: Path) -> int:
        """The names in ``folder`` (created, renamed, deleted)."""
        return self._add(folder, FOLDER_NAMES | GONE | IN_ONLYDIR)

    def watch_file(self, path: Path, mask: int = FILE_WRITES) -> int:
        """The writes to the file at ``path`` now (its inode: after a rename over it, watch it again).
        Watching the same inode again gives the same descriptor."""
        return self._add(path, mask | GONE)

    def _add(self, path: Path, mask: int) -> int:
        wd = _libc().inotify_add_watch(self._fd, os.fsencode(path), mask)
        if wd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"cannot watch {path}: {os.strerror(errno)}")
        self.watched[wd] = path
        return int(wd)

    def read(self) -> Iterator[tuple[Path | None, int, str]]:
        """The events waiting now: (watched path, mask, file name; "" for an event of a watched file
        itself). The path is None on a queue overflow (events were lost: treat everything as changed)."""
        try:
            data = os.read(self._fd, 64 * 1024)
        except BlockingIOError:
            return
        offset = 0
        while offset + _HEADER.size <= len(data):
            wd, mask, _cookie, length = _HEADER.unpack_from(data, offset)
            offset += _HEADER.size
            name = os.fsdecode(data[offset : offset + length].rstrip(b"\0"))
            offset += length
            watched = self.watched.get(wd)
            if mask & IN_IGNORED:
                self.watched.pop(wd, None)
            yield (None if mask & IN_Q_OVERFLOW else watched), mask, name

    def close(self) -> None:
        os.close(self._fd)
