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
# What a writer does to a file in a watched folder: append, rewrite in place, rename over, delete.
FILE_EVENTS = IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE
# The folder itself going away: its watch ends (IN_IGNORED follows).
FOLDER_GONE = IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED
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
    """One inotify descriptor watching folders (not recursively); non-blocking, for select()."""

    def __init__(self) -> None:
        libc = _libc()
        fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            errno = ctypes.get_errno()
            raise InotifyUnavailable(errno, f"inotify_init1: {os.strerror(errno)}")
        self._fd = int(fd)
        self.folders: dict[int, Path] = {}

    def fileno(self) -> int:
        return self._fd

    def watch(self, folder: Path) -> int:
        wd = _libc().inotify_add_watch(self._fd, os.fsencode(folder), FILE_EVENTS | FOLDER_GONE | IN_ONLYDIR)
        if wd < 0:
            errno = ctypes.get_errno()
            raise OSError(errno, f"cannot watch {folder}: {os.strerror(errno)}")
        self.folders[wd] = folder
        return int(wd)

    def read(self) -> Iterator[tuple[Path | None, int, str]]:
        """The events waiting now: (folder, mask, file name). The folder is None on a queue overflow
        (events were lost: treat everything as changed)."""
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
            folder = self.folders.get(wd)
            if mask & IN_IGNORED:
                self.folders.pop(wd, None)
            yield (None if mask & IN_Q_OVERFLOW else folder), mask, name

    def close(self) -> None:
        os.close(self._fd)
