"""The process's heap, where glibc's defaults cost the daemon: two calls, no-ops without glibc.

A whole-file AgentDB snapshot allocates two buffers the size of the file (our read, SQLite's copy)
and frees them at the end of the pass. Above 128 KB glibc serves such blocks from fresh mappings,
so every pass page-faulted the whole file in twice: 6,500 faults and 15 ms of a 20 ms snapshot of
a 13 MB file. ``reuse_large_buffers`` keeps them on the heap, where the next pass finds them;
``release_free_memory`` hands what the heap holds free back to the system once the writer has gone
quiet, so an idle daemon does not keep the busy spell's peak.
"""

from __future__ import annotations

import ctypes
import functools
import sys
from typing import Any

# mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
# Blocks below this come from the heap and stay there when freed: a 64 MB AgentDB file's snapshot.
LARGE_BUFFER_LIMIT = 64 << 20


def reuse_large_buffers() -> None:
    """Serve blocks up to LARGE_BUFFER_LIMIT from the heap and keep freed ones for reuse (until
    ``release_free_memory``). For a long-lived process that snapshots one file over and over."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(_M_MMAP_THRESHOLD, LARGE_BUFFER_LIMIT)
        libc.mallopt(_M_TRIM_THRESHOLD, LARGE_BUFFER_LIMIT)


def release_free_memory() -> None:
    """Hand memory the process has freed back to the system. glibc keeps freed blocks for reuse, so
    after a busy spell RSS would stay at its peak; malloc_trim returns them."""
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.cache
def _glibc() -> Any:
    if sys.platform != "linux":
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt  # noqa: B018 - musl has no mallopt: probe before use
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc
