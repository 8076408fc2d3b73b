"""A command that syncs in its own process (``sync``, ``quarantine retry``) when no daemon runs,
and the ways such a command talks to a daemon that does: a poke (SIGUSR1), and waiting for the
daemon's next pass to finish (``sync --wait``)."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from daemon.control.lock import DAEMON, ONCE, SiteLock, lock_holder
from sync.push.sidecar import Sidecar

if TYPE_CHECKING:
    from daemon.config import Settings
    from daemon.site import Site

WAIT_STEP = 0.02  # seconds between looks at the sidecar while waiting for a daemon's pass


def poke_daemon(lock: Path) -> int | None:
    """Ask a running daemon for a pass now; returns its pid, or None when no daemon holds the site."""
    holder = lock_holder(lock)
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
    from daemon.paths import check_site
    from daemon.site import Site, open_backbone
    from sync.resilience.retry import RetryPolicy

    check_site(settings)  # before the lock, which lives in the state folder
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)  # a poke meant for a daemon must not kill us
    retry = RetryPolicy(maximum=settings.sync.retry_max_wait, give_up_after=timeout)
    with SiteLock(settings.lock_path, settings.site.name, role=ONCE, wait=timeout):
        backbone = retry.call(lambda: open_backbone(settings), stop=stop)
        with Site(settings, backbone, retry=retry, take_over=take_over) as site:
            yield site, stop
            _fold_uses(settings, site)


def _fold_uses(settings: Settings, site: Site) -> None:
    """The uses noted since (``sync.usage``), sent on as the daemon's loop sends them: a site synced
    by ``memsync sync`` alone (from cron, say) shares its agents' use too. A backbone that cannot
    take them now leaves them for the next pass."""
    from sync.usage.fold import fold
    from sync.usage.spool import spool_path

    # The pass itself went through; a backbone that refuses the uses now leaves them waiting.
    with contextlib.suppress(Exception):
        fold(spool_path(settings.state_path), site.backbone)


def daemon_record(state: Path) -> dict[str, str | None]:
    """What the daemon last recorded about its passes and problems ({} before its first pass)."""
    try:
        sidecar = Sidecar(state, readonly=True)
    except (FileNotFoundError, sqlite3.Error):
        return {}
    try:
        return {k: sidecar.get(k) for k in ("last_pass_started_at", "backlog", "last_error", "source_error")}
    finally:
        sidecar.close()


def wait_for_daemon_pass(state: Path, asked_at: float, deadline: float) -> dict[str, str | None] | None:
    """Wait until the daemon has finished a pass that began after ``asked_at`` (so it read the file
    as it was when we asked); its sidecar record then, or None at the deadline."""
    while True:
        record = daemon_record(state)
        started = record.get("last_pass_started_at")
        if started is not None and float(started) >= asked_at:
            return record
        if time.monotonic() >= deadline:
            return None
        time.sleep(WAIT_STEP)
