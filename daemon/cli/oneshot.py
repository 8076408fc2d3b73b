"""A command that syncs in its own process (``sync``, ``quarantine retry``) when no daemon runs,
and the ways such a command talks to a daemon that does: a poke (SIGUSR1), and waiting for the
daemon's next pass to finish (``sync --wait``)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from daemon.config import Settings
from daemon.loop.lock import DAEMON, ONCE, SiteLock, lock_holder
from daemon.site import Site, open_backbone, open_sidecar_readonly
from sync.retry import RetryPolicy

WAIT_STEP = 0.02  # seconds between looks at the sidecar while waiting for a daemon's pass


def poke_daemon(settings: Settings) -> int | None:
    """Ask a running daemon for a pass now; returns its pid, or None when no daemon holds the site."""
    holder = lock_holder(settings.lock_path)
    if holder is None or holder.role != DAEMON or holder.pid <= 0:
        return None
    try:
        os.kill(holder.pid, signal.SIGUSR1)
    except ProcessLookupError:
        return None
    return holder.pid


@contextmanager
def one_shot(settings: Settings, timeout: float, *, take_over: bool = False) -> Iterator[tuple[Site, threading.Event]]:
    """The site, opened for one pass by this process: waits for another one-shot to finish first,
    stops cleanly on SIGINT/SIGTERM, and gives up on an unreachable backbone after ``timeout``."""
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # a poke meant for a daemon must not kill us
    retry = RetryPolicy(maximum=settings.sync.retry_max_wait, give_up_after=timeout)
    with SiteLock(settings.lock_path, settings.site.name, role=ONCE, wait=timeout):
        backbone = retry.call(lambda: open_backbone(settings), stop=stop)
        with Site(settings, backbone, retry=retry, take_over=take_over) as site:
            yield site, stop


def wait_for_daemon_pass(settings: Settings, asked_at: float, deadline: float) -> dict[str, str | None] | None:
    """Wait until the daemon has finished a pass that began after ``asked_at`` (so it read the file
    as it was when we asked); its sidecar record then, or None at the deadline."""
    while True:
        sidecar = open_sidecar_readonly(settings)
        if sidecar is not None:
            try:
                meta = {k: sidecar.get(k) for k in ("last_pass_started_at", "backlog", "last_error")}
            finally:
                sidecar.close()
            started = meta.get("last_pass_started_at")
            if started is not None and float(started) >= asked_at:
                return meta
        if time.monotonic() >= deadline:
            return None
        time.sleep(WAIT_STEP)
