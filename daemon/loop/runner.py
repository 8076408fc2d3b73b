"""The run loop: wait for a change, run a pass, report, repeat, until told to stop.

Shaped like Litestream's: a cheap poll is the source of truth and file events only wake it early.
SIGTERM and SIGINT let the batch in flight finish and then exit cleanly; SIGUSR1 asks for a pass
now (``memsync sync`` and ``memsync quarantine retry`` send it to a running daemon).
A failing pass never ends the loop: the problem is logged once when it starts and once when it
ends, recorded for ``status`` always, and the loop backs off and tries again. What only a person
can fix (a path it cannot use, the credentials refused, another source feeding the site) ends it
with exit 78.

Under systemd (``Type=notify``) it says READY once the site is open, STATUS when that changes, and
pings the watchdog from this loop, including while a retry waits, so that only a loop that is
stuck (a call that never returns) stops the pings and gets the daemon restarted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import structlog

from daemon import modes
from daemon.alerts.watch import Alerts
from daemon.config import Settings
from daemon.control.lock import SiteLock
from daemon.loop.changes import ChangeWaker
from daemon.loop.notify import Notifier
from daemon.paths import agentdb_folder_missing, check_site
from daemon.search_worker.host import WarmHost
from daemon.site import Site, duties_of, open_backbone

if TYPE_CHECKING:
    from daemon.alerts.store import AlertStore
    from daemon.schedule.worker import Scheduler
    from daemon.telegram.worker import AlertWorker
from sync.backbone.base import Backbone
from sync.errors import ConfigError, Interrupted, SnapshotNotReady, SourceConflict, SourceMissing, SourceUnavailable
from sync.memory import release_free_memory, reuse_large_buffers
from sync.push.claim import describe, renew_claim
from sync.push.engine import PassReport
from sync.push.sidecar import Sidecar
from sync.resilience.pacing import Backoff, run_periodically
from sync.resilience.problems import ProblemLog
from sync.resilience.retry import RetryPolicy
from sync.usage.fold import fold
from sync.usage.spool import spool_path

log = structlog.get_logger("memsync.daemon")


@dataclass
class _LoopState:
    last_pass: float
    checked: float  # when the site's source was last checked
    pending: bool = True  # always one pass at start: catch up on whatever arrived while we were down
    journal_pending: bool = True  # the same for the journal of saved memories
    journal_missing: bool = False  # none saved yet: its creation (a change) wakes it, not re-checks
    released: bool = False  # the snapshots' buffers were handed back since the last pass
    folded: float = 0.0  # when the use spool was last folded (0: never; the first step does)


class PassFailed(Exception):
    """A pass failed and was reported: the loop backs off before the next."""


MAX_BACKOFF = 30.0
# After this long without a pass the writer has gone quiet: hand the snapshots' buffers back.
RELEASE_MEMORY_AFTER = 10.0
# Seconds between folds of the use spool: not in step with every hook (a fold writes the hub, which
# wakes the index's catch-up, as the hook exits); a use reaches other sites this much later at most.
FOLD_USES_EVERY = 10.0


class Daemon:
    def __init__(
        self,
        settings: Settings,
        *,
        stop: threading.Event | None = None,
        install_signals: bool = True,
        on_pass: Callable[[PassReport], None] | None = None,
        take_over: bool = False,
        notifier: Notifier | None = None,
    ) -> None:
        self.settings = settings
        self.stop = stop or threading.Event()
        self.wake = threading.Event()
        self.install_signals = install_signals
        self.on_pass = on_pass
        self.take_over = take_over
        self.notify = notifier or Notifier()
        self.asked = threading.Event()  # SIGUSR1: someone wants a pass now (a retry, sync)
        self.problems = ProblemLog(log)
        self.journal_problems = ProblemLog(log)  # the journal's, apart: the AgentDB file's passes end theirs
        self._warm: WarmHost | None = None
        self._waiting_said = False  # "waiting for the AgentDB file" is said once a run
        self.retry = RetryPolicy(maximum=settings.sync.retry_max_wait, sleep=self._sleep)

    def run(self) -> int:
        """Run until stopped. Raises AlreadyRunning if another process syncs this site, and a
        ConfigError (exit 78) for what only a person can fix."""
        if self.install_signals:
            self._install_signals()  # before the lock: a poke that finds us holding it must not kill us
        reuse_large_buffers()
        try:
            return self._run()
        finally:
            self.notify.close()

    def _run(self) -> int:
        check_site(self.settings)  # before the lock, which lives in the state folder
        changed = modes.settle(self.settings)  # an install from before memsync kept its files private
        if changed:
            log.warning(
                "memsync's files and folders had other modes than memsync gives them: set them",
                count=len(changed),
                first=str(changed[0]),
                shared_group=self.settings.backbone.shared_group,
            )
        with SiteLock(self.settings.lock_path, self.settings.site.name):
            backbone = self._open_backbone()
            if backbone is None:
                return 0
            with Site(self.settings, backbone, retry=self.retry, take_over=self.take_over) as site:
                # The backlog the last run left is not this run's: unknown until this run's first pass,
                # so that a heartbeat sent before it never calls the site idle on stale figures.
                site.sidecar.set_many({"daemon_started_at": time.time(), "daemon_pid": os.getpid(), "backlog": None})
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
                store = self._open_alerts()
                alerts = None if store is None else Alerts(self.settings, store)
                scheduler = self._start_scheduler(warm is not None, alerts)
                alerting = self._start_alerts(site, alerts)
                self.notify.ready(f"syncing {self.settings.agentdb.path} to {backbone.description}")
                try:
                    self._loop(site)
                finally:
                    self.notify.stopping()
                    if scheduler is not None:
                        scheduler.stopping.set()  # no job starts a long step from now on
                    waker.stop()
                    if alerting is not None:
                        alerting.stop()
                    if warm is not None:
                        warm.close()  # before the scheduler: an index job waiting on the worker ends now
                    if scheduler is not None:
                        scheduler.stop()
                    if alerts is not None:
                        alerts.store.close()
                    site.sidecar.set_many({"daemon_stopped_at": time.time()})
                log.info("stopped", site=self.settings.site.name)
        return 0

    def _open_alerts(self) -> AlertStore | None:
        """The alerts' store (``daemon/alerts/store.py``). A store that cannot be opened costs the
        alerts, never the sync: said once, and the daemon goes on."""
        if not self.settings.alerts.enabled and not self.settings.telegram.enabled:
            return None
        from daemon.alerts.store import AlertStore

        try:
            return AlertStore(self.settings.alerts_path)
        except Exception as exc:  # noqa: BLE001 - see above
            self.problems.problem("alerts", str(exc))
            return None

    def _start_alerts(self, site: Site, alerts: Alerts | None) -> AlertWorker | None:
        """The alert thread: the site's own signals, the Telegram outbox, button presses on the hub.
        For the presses it has a backbone client of its own, like the scheduler."""
        if alerts is None:
            return None
        from daemon.telegram.worker import AlertWorker

        presses = None
        if self.settings.telegram.enabled:  # where the sites receive them, on a client of their own
            presses = duties_of(self.settings, site.backbone).presses(alerts.store, self._open_backbone)
        return AlertWorker(
            self.settings,
            alerts.store,
            alerts=alerts,
            problems=lambda: {**self.problems.current, **site.engine.problems.current},
            presses=presses,
            on_stop=(lambda: None) if presses is None else presses.close,
        ).start()

    def _start_scheduler(self, indexing: bool, alerts: Alerts | None = None) -> Scheduler | None:
        """The periodic jobs and the registry heartbeat (``daemon/schedule``), on a backbone client of
        their own. Imported here: APScheduler is only the daemon's."""
        if not self.settings.jobs.enabled:
            return None
        from daemon.schedule.beats import Beats
        from daemon.schedule.worker import Scheduler, index_catch_up

        backbone = self._open_backbone()
        if backbone is None:
            return None
        catch_up = (lambda: index_catch_up(self.settings, backbone)) if indexing else None
        scheduler = Scheduler(
            self.settings,
            backbone,
            duties_of(self.settings, backbone).sweeps,
            heartbeat=Beats(self.settings, backbone).beat,
            index_catch_up=catch_up,
            on_stop=backbone.close,
            alerts=alerts,
            dream=lambda now_ms, run: self._dream(backbone, now_ms, run),
        ).start()
        return scheduler

    def _dream(self, backbone: Backbone, now_ms: int, run: str) -> str:
        # Imported when the night's job runs: the dream's planning needs numpy, which an idle daemon
        # must not hold (the embedding stack lives in the search worker's process).
        from daemon.usecases.memory.dream import dream_job

        return dream_job(self.settings, backbone, now_ms, run).summary

    def _start_warm(self, backbone: Backbone) -> WarmHost | None:
        """The control socket, and the warm layer's worker process whenever there is work for it
        (``daemon.search_worker.host``): the embedding stack never loads in this process."""
        if not self.settings.warm.enabled:
            return None
        self._warm = WarmHost(self.settings, backbone, stop=self.stop).start()
        return self._warm

    def _watched(self, warm: WarmHost | None) -> dict[Path, threading.Event]:
        """The files whose changes wake something: the AgentDB file wakes the run loop; the embedded
        hub, where other sites' episodes arrive, wakes the warm layer (Convex has no file to watch,
        so there the warm layer's catch-up interval alone finds them)."""
        watched = {self.settings.agentdb.path: self.wake, self.settings.journal_path: self.wake}
        if warm is not None and self.settings.backbone.kind == "local":
            watched[self.settings.hub_path] = warm.poked
        return watched

    def _open_backbone(self) -> Backbone | None:
        """Opening can fail like any other call to the backbone: retry until it works or we stop."""
        try:
            backbone = self.retry.call(
                lambda: open_backbone(self.settings),
                stop=self.stop,
                on_retry=lambda e, d, n: self._backbone_down(e),
            )
        except Interrupted:
            return None
        self.problems.recovered("backbone")
        return backbone

    def _backbone_down(self, error: BaseException) -> None:
        message = f"backbone unavailable at start: {error}"
        # Recorded where `status` and a hook's `sync --wait` read a daemon's problem: before the
        # site is open there is no pass to record it, and they would only know the daemon is late.
        try:
            sidecar = Sidecar(self.settings.state_path)
            try:
                sidecar.set_many({"last_error": message, "last_error_at": time.time()})
            finally:
                sidecar.close()
        except (sqlite3.Error, OSError) as exc:
            self.problems.problem("state", f"cannot record state in the sidecar: {exc}")
        self.problems.problem("backbone", message)

    def _sleep(self, seconds: float) -> None:
        """A retry's wait: cut short by a stop, and the watchdog pinged meanwhile (waiting out a
        backoff is the loop working as meant, not stuck)."""
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0 and not self.stop.is_set():
            self.notify.alive()
            ping_in = self.notify.next_ping_in()
            self.stop.wait(left if ping_in is None else min(left, max(ping_in, 0.05)))

    def _loop(self, site: Site) -> None:
        """The one periodic loop (``sync.resilience.pacing``): a pass when something changed, then wait for a
        change or the poll; a failing pass backs off poll x 2, x 4 ... up to MAX_BACKOFF. What only
        a person can fix (a ConfigError) ends it."""
        poll = self.settings.agentdb.poll_interval
        state = _LoopState(last_pass=time.monotonic(), checked=time.monotonic())

        def step() -> float:
            self.notify.alive()
            asked = self.asked.is_set()
            self.asked.clear()
            if asked or state.pending or site.reader.has_changed() or site.engine.recheck_due():
                state.pending, ok = self._pass(site)
                state.last_pass, state.released = time.monotonic(), False
                if not ok:
                    raise PassFailed  # reported by _pass; the loop backs off
            journal = site.journal
            if (
                asked
                or state.journal_pending
                or journal.reader.has_changed()
                or (not state.journal_missing and journal.recheck_due())
            ):
                state.journal_pending, state.journal_missing = self._journal_pass(site)
                state.last_pass, state.released = time.monotonic(), False
            elif not state.released and time.monotonic() - state.last_pass >= RELEASE_MEMORY_AFTER:
                release_free_memory()
                state.released = True
            if time.monotonic() - state.folded >= FOLD_USES_EVERY:
                self._fold_uses(site)
                state.folded = time.monotonic()
            # As often as the registry heartbeat: the site is still ours, and its source's "last seen" moves.
            if time.monotonic() - state.checked >= self.settings.jobs.heartbeat_interval:
                self._check_source(site)
                state.checked = time.monotonic()
            return poll

        def cap(wait: float) -> float:
            ping_in = self.notify.next_ping_in()
            return wait if ping_in is None else min(wait, ping_in)

        def unexpected(exc: Exception) -> None:
            if not isinstance(exc, PassFailed):
                self.problems.problem("loop", f"{type(exc).__name__}: {exc}")

        backoff = Backoff(RetryPolicy(initial=2 * poll, maximum=MAX_BACKOFF, jitter=0.0))
        run_periodically(
            step, stop=self.stop, wake=self.wake, backoff=backoff, on_error=unexpected, cap=cap, fatal=(ConfigError,)
        )

    def _fold_uses(self, site: Site) -> None:
        """Send the uses the site's hooks, MCP server and CLI noted (``sync.usage``) to the backbone,
        so that every site sees the fleet's use; a backbone that cannot take them now keeps them for
        the next fold, never failing the pass."""
        try:
            folded = fold(spool_path(self.settings.state_path), site.backbone)
        except Exception as exc:  # noqa: BLE001 - the pass reports an unreachable backbone; uses wait
            self.problems.problem("uses", f"the uses noted here wait for the backbone: {exc}", quiet=True)
            return
        self.problems.recovered("uses")
        if folded.uses or folded.skipped:
            log.debug("uses folded", uses=folded.uses, counted=folded.counted, skipped=folded.skipped)

    def _check_source(self, site: Site) -> None:
        """Stop (exit 78) if another source took the site over since we claimed it."""
        try:
            taken = renew_claim(site.backbone, site.source)
        except Exception as exc:  # noqa: BLE001 - an unreachable backbone is the pass's problem to report
            log.debug("could not check the site's source", error=str(exc))
            return
        if taken is not None:
            raise SourceConflict(
                f"site {self.settings.site.name!r} was taken over by another source ({describe(taken)}); "
                "this daemon stops so that two sources never feed one site. Start it again with --take-over "
                "only if this machine should feed the site"
            )

    def _pass(self, site: Site) -> tuple[bool, bool]:
        """Run one pass; returns (another pass is needed at once, the pass succeeded)."""
        started = time.time()
        try:
            report = site.engine.run_pass(self.stop)
        except Interrupted:
            return False, True
        except SourceMissing as exc:
            # Not a problem (docs/guides/run.md): the agent has not created its file yet. The look is a pass
            # over nothing, so that `sync --wait` returns at once; the file's creation wakes us.
            if not self._waiting_said:
                self._waiting_said = True
                typo = agentdb_folder_missing(self.settings.agentdb.path)
                if typo is not None:  # likelier a wrong path than an agent yet to write
                    log.warning("waiting for the AgentDB file to be created", detail=typo)
                else:
                    log.info("waiting for the AgentDB file to be created", path=str(self.settings.agentdb.path))
            self.problems.recovered("source_error")
            site.sidecar.set_many({"last_pass_started_at": started, "backlog": 0, "source_error": str(exc)})
            return False, True
        except SnapshotNotReady as exc:
            # A busy writer, not a failure: read again on the next change or poll, without backing off.
            # A file that stays unreadable is damaged, which the reader says (SourceUnavailable).
            self._report(site, "last_error", f"AgentDB file not readable yet (a write in progress?): {exc}", quiet=True)
            return True, True
        except ConfigError:
            raise  # e.g. the backbone refused our credentials: only a person can fix that (exit 78)
        except SourceUnavailable as exc:
            # Wait for the file to change (the reader stops re-reading it until then).
            self._report(site, "source_error", str(exc))
            return False, True
        except Exception as exc:
            detail = f"{type(exc).__name__}: {exc}"
            if self._report(site, "last_error", detail):
                log.debug("pass failed", exc_info=True)  # the traceback once, for a developer
            return True, False
        self.problems.recovered()
        synced = f"backlog {report.backlog} (through id {report.cursor})" if report.backlog else "up to date"
        index = "" if self._warm is None else f"; {self._warm.summary()}"
        self.notify.status(f"{synced}{index}")
        if self._warm is not None and (report.inserted or report.updated):
            self._warm.poke()  # index what was just pushed now, not at the next catch-up
        if self.on_pass is not None:
            self.on_pass(report)
        return report.interrupted and not self.stop.is_set(), True

    def _journal_pass(self, site: Site) -> tuple[bool, bool]:
        """A pass over the journal of saved memories (``sync.source.journal``); returns (another
        is needed at once, there is no journal yet). A failure is reported as the journal's
        problem (on the journal's sidecar and in the log, once) and retried on the next poll: the
        AgentDB file's passes go on meanwhile."""
        try:
            report = site.journal.run_pass(self.stop)
        except SourceMissing:
            return False, True
        except Interrupted:
            return False, False
        except SnapshotNotReady:
            return True, False
        except ConfigError:
            raise
        except Exception as exc:  # noqa: BLE001 - said once, retried on the next poll
            message = f"journal: {type(exc).__name__}: {exc}"
            with contextlib.suppress(Exception):
                site.journal_sidecar.set_many({"last_error": message, "last_error_at": time.time()})
            self.journal_problems.problem("journal", message)
            return False, False
        self.journal_problems.recovered("journal")
        if self._warm is not None and (report.inserted or report.updated):
            self._warm.poke()
        return report.interrupted and not self.stop.is_set(), False

    def _report(self, site: Site, key: str, message: str, *, quiet: bool = False) -> bool:
        """Record a problem for status always; log it once when it appears (``ProblemLog``)."""
        try:
            site.sidecar.set_many({key: message, f"{key}_at": time.time()})
        except Exception as exc:  # noqa: BLE001 - the problem is still logged below
            self.problems.problem("state", f"cannot record state in the sidecar: {exc}")
        self.notify.status(f"problem: {message}")
        return self.problems.problem(key, message, quiet=quiet)

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
