"""The run loop: wait for a change, run a pass, report, repeat, until told to stop.

Shaped like Litestream's: a cheap poll is the source of truth and file events only wake it early.
SIGTERM and SIGINT let the batch in flight finish and then exit cleanly; SIGUSR1 asks for a pass
now (``memsync sync --once`` and ``memsync quarantine retry`` send it to a running daemon).
A failing pass never ends the loop: the error goes to the log once, to ``status`` always, and the
loop backs off and tries again.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import structlog

from daemon.changes import ChangeWaker
from daemon.config import Settings
from daemon.lock import SiteLock
from daemon.site import Site, open_backbone, retry_policy
from daemon.warm_host import WarmHost
from sync.backbone.base import Backbone
from sync.engine import PassReport
from sync.errors import ConfigError, SnapshotNotReady, SourceUnavailable
from sync.memory import release_free_memory, reuse_large_buffers
from sync.retry import Interrupted

log = structlog.get_logger("memsync.daemon")

MAX_BACKOFF = 30.0
# After this long without a pass the writer has gone quiet: hand the snapshots' buffers back.
RELEASE_MEMORY_AFTER = 10.0


class Daemon:
    def __init__(
        self,
        settings: Settings,
        *,
        stop: threading.Event | None = None,
        install_signals: bool = True,
        on_pass: Callable[[PassReport], None] | None = None,
    ) -> None:
        self.settings = settings
        self.stop = stop or threading.Event()
        self.wake = threading.Event()
        self.install_signals = install_signals
        self.on_pass = on_pass
        self.asked = threading.Event()  # SIGUSR1: someone wants a pass now (a retry, sync --once)
        self._reported: str | None = None
        self._warm: WarmHost | None = None

    def run(self) -> int:
        """Run until stopped. Raises AlreadyRunning if another process syncs this site."""
        if self.install_signals:
            self._install_signals()  # before the lock: a poke that finds us holding it must not kill us
        reuse_large_buffers()
        with SiteLock(self.settings.lock_path, self.settings.site.name):
            backbone = self._open_backbone()
            if backbone is None:
                return 0
            with Site(self.settings, backbone) as site:
                site.sidecar.set_many({"daemon_started_at": time.time(), "daemon_pid": os.getpid()})
                if site.backbone_changed:
                    log.warning(
                        "backbone changed since the last run: every episode will be pushed again",
                        backbone=backbone.description,
                    )
                log.info(
                    "started",
                    site=self.settings.site.name,
                    agentdb=str(self.settings.agentdb.path),
                    backbone=backbone.description,
                    pid=os.getpid(),
                )
                warm = self._start_warm(backbone)
                waker = ChangeWaker(self._watched(warm)).start()
                try:
                    self._loop(site)
                finally:
                    waker.stop()
                    if warm is not None:
                        warm.close()
                    site.sidecar.set_many({"daemon_stopped_at": time.time()})
                log.info("stopped", site=self.settings.site.name)
        return 0

    def _start_warm(self, backbone: Backbone) -> WarmHost | None:
        """The control socket, and the warm layer's worker process whenever there is work for it
        (``daemon.warm_host``): the embedding stack never loads in this process."""
        if not self.settings.warm.enabled:
            return None
        self._warm = WarmHost(self.settings, backbone, stop=self.stop).start()
        return self._warm

    def _watched(self, warm: WarmHost | None) -> dict[Path, threading.Event]:
        """The files whose changes wake something: the AgentDB file wakes the run loop; the embedded
        hub, where other sites' episodes arrive, wakes the warm layer (Convex has no file to watch,
        so there the warm layer's catch-up interval alone finds them)."""
        watched = {self.settings.agentdb.path: self.wake}
        if warm is not None and self.settings.backbone.kind == "local":
            watched[self.settings.hub_path] = warm.poked
        return watched

    def _open_backbone(self) -> Backbone | None:
        """Opening can fail like any other call to the backbone: retry until it works or we stop."""
        try:
            return retry_policy(self.settings).call(
                lambda: open_backbone(self.settings),
                stop=self.stop,
                on_retry=lambda e, d, n: log.warning(
                    "backbone unavailable at start; retrying", error=str(e), retry_in=round(d, 2)
                ),
            )
        except Interrupted:
            return None

    def _loop(self, site: Site) -> None:
        pending = True  # always one pass at start: catch up on whatever arrived while we were down
        failures = 0
        poll = self.settings.agentdb.poll_interval
        last_pass, released = time.monotonic(), False
        while not self.stop.is_set():
            asked = self.asked.is_set()
            self.asked.clear()
            if asked or pending or site.reader.has_changed() or site.engine.recheck_due():
                pending, ok = self._pass(site)
                failures = 0 if ok else failures + 1
                last_pass, released = time.monotonic(), False
            elif not released and time.monotonic() - last_pass >= RELEASE_MEMORY_AFTER:
                release_free_memory()
                released = True
            timeout = poll if failures == 0 else min(poll * 2 ** min(failures, 10), MAX_BACKOFF)
            if self.wake.wait(timeout):
                self.wake.clear()

    def _pass(self, site: Site) -> tuple[bool, bool]:
        """Run one pass; returns (another pass is needed at once, the pass succeeded)."""
        try:
            report = site.engine.run_pass(self.stop)
        except Interrupted:
            return False, True
        except SnapshotNotReady as exc:
            # A busy writer, not a failure: read again on the next change or poll, without backing off.
            self._report(site, "last_error", f"AgentDB file is being rewritten; will read it again: {exc}", quiet=True)
            return True, True
        except ConfigError:
            raise  # e.g. the backbone refused our credentials: only a person can fix that (exit 78)
        except SourceUnavailable as exc:
            # Wait for the file to change (the reader stops re-reading it until then).
            self._report(site, "source_error", str(exc))
            return False, True
        except Exception as exc:
            log.exception("pass failed", error=str(exc))
            self._report(site, "last_error", f"{type(exc).__name__}: {exc}")
            return True, False
        if self._reported is not None:
            log.info("recovered", previous=self._reported)
            self._reported = None
        if self._warm is not None and (report.inserted or report.updated):
            self._warm.poke()  # index what was just pushed now, not at the next catch-up
        if self.on_pass is not None:
            self.on_pass(report)
        return report.interrupted and not self.stop.is_set(), True

    def _report(self, site: Site, key: str, message: str, *, quiet: bool = False) -> None:
        """Log a problem once when it appears (not once a poll); always record it for status."""
        try:
            site.sidecar.set_many({key: message, f"{key}_at": time.time()})
        except Exception:
            log.exception("cannot record state in the sidecar")
        if message != self._reported:
            (log.info if quiet else log.error)("problem", kind=key, detail=message)
            self._reported = message

    def _install_signals(self) -> None:
        def stop(signum: int, _frame: FrameType | None) -> None:
            log.info("signal received; finishing the batch in flight", signal=signal.Signals(signum).name)
            self.stop.set()
            self.wake.set()

        def asked(_signum: int, _frame: FrameType | None) -> None:
            self.asked.set()
            self.wake.set()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGUSR1, asked)
