"""The daemon's side of the warm layer: it holds the control socket and starts the worker process
(``daemon.search_worker.worker``) when there is work, so that an idle daemon holds no embedding stack.

Work is: a search or reindex request (it waits in the socket's backlog, the worker takes it), new
episodes this site just pushed (the run loop pokes), another site's episodes on the embedded hub
(the hub file's change pokes), or an index behind the backbone's change feed, looked for every
``catch_up_interval`` while no worker runs (this is how another site's episodes arrive on Convex),
or a purge the index still owes (the cursor file says so; ``sync.search.service.index``).
While the worker runs it does all of that itself; pokes are passed on to it.

While no worker runs, the daemon optimizes the index in a child process of its own
(``daemon.search_worker.optimizer``: the HNSW graph, once the index has taken in episodes since
the last run and the worker has been gone ``warm.optimize_after`` seconds); work that arrives kills
it first, which the engine survives with the collection whole.

A worker that fails is started again with the project's one backoff; while it is backing off, a
request is answered with what went wrong instead of being left to time out. A configuration error
(exit 78) is not retried until the daemon restarts: only a person can fix it.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO

import structlog

from daemon.config import Settings
from daemon.control.server import listen, unlink
from daemon.search_worker.files import Collections, cursor_file, read_status
from daemon.search_worker.optimizer import optimize_due
from sync.backbone.base import ChangeFeed
from sync.errors import MemsyncError
from sync.resilience.pacing import Backoff
from sync.resilience.problems import ProblemLog
from sync.resilience.retry import RetryPolicy

log = structlog.get_logger("memsync.warm")

EX_CONFIG = 78
# Starting the worker costs about a second of CPU: never more often than this, even when it fails.
WORKER_BACKOFF = RetryPolicy(initial=2.0, maximum=300.0, jitter=1.0)
# How often the host looks whether a running optimizer has finished.
OPTIMIZER_POLL_S = 1.0


class _PipeEvent(threading.Event):
    """An Event that also wakes a select() on its pipe: the file watcher sets it like any other."""

    def __init__(self) -> None:
        super().__init__()
        self.reader, self._writer = os.pipe()
        os.set_blocking(self.reader, False)
        os.set_blocking(self._writer, False)

    def set(self) -> None:
        super().set()
        with contextlib.suppress(BlockingIOError):  # already has a wake-up waiting
            os.write(self._writer, b"\0")

    def drain(self) -> None:
        self.clear()
        with contextlib.suppress(BlockingIOError):
            while os.read(self.reader, 4096):
                pass

    def close(self) -> None:
        os.close(self.reader)
        os.close(self._writer)


class WarmHost:
    def __init__(
        self,
        settings: Settings,
        backbone: ChangeFeed,
        *,
        stop: threading.Event,
        worker_argv: Callable[[int], list[str]] | None = None,
        optimizer_argv: Callable[[], list[str]] | None = None,
    ) -> None:
        self.settings = settings
        self.backbone = backbone
        self.stop = stop
        self.poked = _PipeEvent()
        self._listener = listen(settings.socket_path)
        self._worker_argv = worker_argv or self._default_argv
        self._worker: subprocess.Popen[bytes] | None = None
        self._optimizer_argv = optimizer_argv or self._default_optimizer_argv
        self._optimizer: subprocess.Popen[bytes] | None = None
        self._optimizing_through = 0  # the feed position the running optimizer started at
        self._optimized_through: int | None = None  # ... the last one that finished started at
        self._idle_since = time.monotonic()  # when the last worker exited (or the host started)
        self._next_look = time.monotonic() + settings.catch_up_interval  # when to look at the feed again
        self._alive_fd: int | None = None
        self._pushed = False  # the run loop pushed: there is work without asking the backbone
        self._backoff = Backoff(WORKER_BACKOFF)  # the one backoff (sync.resilience.pacing)
        self.problems = ProblemLog(log)
        self._not_before = 0.0  # monotonic: no worker before this (backing off after a failure)
        self._config_error: str | None = None
        self.starts = 0  # workers started (status and the benchmarks read it)
        self._thread = threading.Thread(target=self._run, name="memsync-warm-host", daemon=True)

    def start(self) -> WarmHost:
        self._thread.start()
        return self

    def summary(self) -> str:
        """The search index's state in a few words, for systemd's STATUS= line."""
        if self._config_error is not None:
            return f"search index stopped: {self._config_error}"
        if self._backoff.failing:
            return "search index failing, restarting with backoff"
        if self._worker is not None:
            return "search index worker running"
        return "search index optimizing" if self._optimizer is not None else "search index idle"

    def poke(self) -> None:
        """This site pushed episodes: index them now."""
        self._pushed = True
        self.poked.set()

    def close(self) -> None:
        self.stop.set()
        self.poked.set()
        self._thread.join(timeout=60)
        self._stop_optimizer()
        self._stop_worker()
        self._listener.close()
        unlink(self.settings.socket_path)
        self.poked.close()

    # -- the loop ------------------------------------------------------------------------------------
    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                if self._worker is None:
                    self._wait_for_work()
                else:
                    self._watch_worker()
            except Exception:
                log.exception("warm layer supervisor failed; trying again")
                self.stop.wait(WORKER_BACKOFF.maximum / 10)

    def _wait_for_work(self) -> None:
        now = time.monotonic()
        timeout = max(0.0, self._next_look - now)
        backing_off = now < self._not_before
        if backing_off:
            timeout = min(timeout, self._not_before - now)
        if self._optimizer is not None:
            timeout = min(timeout, OPTIMIZER_POLL_S)
        elif self._optimize_due(idle_for=float("inf")):
            timeout = min(timeout, max(0.0, self._idle_since + self.settings.warm.optimize_after - now))
        listener = self._listener.fileno()
        ready, _, _ = select.select([listener, self.poked.reader], [], [], timeout)
        if self.stop.is_set():
            return
        self.poked.drain()
        pushed, self._pushed = self._pushed, False
        if self._config_error is not None or time.monotonic() < self._not_before:
            self._pushed = pushed and self._config_error is None  # kept for when the wait is over
            if listener in ready:
                self._refuse_one()
            return
        if listener in ready:
            self._start_worker("a request")
        elif pushed:
            self._start_worker("new episodes")
        elif (ready or time.monotonic() >= self._next_look) and self._behind():
            self._start_worker("the index is behind the backbone")
        else:
            self._tend_optimizer()

    def _watch_worker(self) -> None:
        assert self._worker is not None
        assert self._alive_fd is not None
        ready, _, _ = select.select([self._alive_fd, self.poked.reader], [], [])
        if self.poked.reader in ready:
            self._pushed = False
            self.poked.drain()
            if not self.stop.is_set():
                self._pass_poke_on()
        if self._alive_fd in ready:  # end of file: the worker exited
            self._reap()

    def _behind(self) -> bool:
        """Is there anything in the backbone's change feed that the index has not taken in, or
        anything the index still owes (a purge of forgotten episodes' bytes, a collection an
        interrupted rebuild left)? The latter needs no change in the feed: a daemon that stopped
        mid-purge purges when it starts."""
        self._next_look = time.monotonic() + self.settings.catch_up_interval
        active = Collections(self.settings).active()
        cursors = cursor_file(self.settings)
        if cursors.owes_work(active):
            return True
        try:
            end = self.backbone.feed_end()
        except MemsyncError as exc:
            log.debug("cannot look at the change feed now", error=str(exc))
            return False
        return end > cursors.read(active)

    # -- the worker ----------------------------------------------------------------------------------
    def _default_argv(self, listen_fd: int) -> list[str]:
        argv = [sys.executable, "-m", "daemon.search_worker.worker", "--listen-fd", str(listen_fd)]
        if self.settings.config_file is not None:
            argv += ["--config", str(self.settings.config_file)]
        return argv

    def _start_worker(self, why: str) -> None:
        self._stop_optimizer()  # the worker needs the store the optimizer holds
        listen_fd = self._listener.fileno()
        alive_r, alive_w = os.pipe()  # the worker holds the write end: EOF here when it exits
        try:
            self._worker = subprocess.Popen(
                self._worker_argv(listen_fd),
                stdin=subprocess.PIPE,
                pass_fds=(listen_fd, alive_w),
                # Started in its own process group, so a Ctrl-C at a terminal reaches only the
                # daemon, which then stops the worker in order.
                start_new_session=True,
            )
        except OSError as exc:
            os.close(alive_r)
            os.close(alive_w)
            self._failed(f"could not start the warm layer's process: {exc}")
            return
        os.close(alive_w)
        self._alive_fd = alive_r
        self.starts += 1
        log.debug("warm layer process started", why=why, pid=self._worker.pid)

    def _pass_poke_on(self) -> None:
        stdin: IO[bytes] | None = None if self._worker is None else self._worker.stdin
        if stdin is None:
            return
        try:
            stdin.write(b"\n")
            stdin.flush()
        except OSError:
            pass  # it is exiting: the alive pipe tells us, and the next poke starts another

    def _reap(self) -> None:
        assert self._worker is not None
        code = self._worker.wait()
        self._close_worker_pipes()
        self._worker = None
        self._idle_since = time.monotonic()
        if code == 0:
            self._backoff.succeeded()
            self.problems.recovered("warm")
            if not self.stop.is_set() and self._behind():
                self._start_worker("the index is behind the backbone")  # work arrived as it left
            return
        if code == EX_CONFIG:
            self._config_error = _detail(self.settings) or "configuration error"
            log.error("warm layer stopped: fix its configuration and restart", detail=self._config_error)
            return
        self._failed(f"the warm layer's process exited with status {code}: {_detail(self.settings) or 'see the log'}")

    def _failed(self, message: str) -> None:
        self._pushed = True  # the work it was started for is still to do: start again after the wait
        delay = self._backoff.failed()
        self._not_before = time.monotonic() + delay
        # Once when it starts failing (and when the reason changes), not once a restart.
        self.problems.problem("warm", f"the warm layer failed; starting it again with backoff: {message}")

    def _refuse_one(self) -> None:
        """Answer a request that arrived while no worker can run, rather than leave it to time out."""
        with contextlib.suppress(OSError):
            conn, _ = self._listener.accept()
            with conn:
                conn.settimeout(1.0)
                # Read the request first: closing with it unread would reset the connection, and
                # the client could lose the answer.
                with contextlib.suppress(OSError):
                    conn.recv(65536)
                kind = "config" if self._config_error is not None else "transient"
                detail = self._config_error or _detail(self.settings) or "the warm layer is restarting"
                message = {"ok": False, "error": f"the search index is unavailable: {detail}", "kind": kind}
                conn.sendall(json.dumps(message).encode() + b"\n")

    def _stop_worker(self) -> None:
        worker = self._worker
        if worker is None:
            return
        with contextlib.suppress(ProcessLookupError):
            worker.terminate()  # it finishes the requests in flight, then exits
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        self._close_worker_pipes()
        self._worker = None

    def _close_worker_pipes(self) -> None:
        if self._alive_fd is not None:
            os.close(self._alive_fd)
            self._alive_fd = None
        if self._worker is not None and self._worker.stdin is not None:
            with contextlib.suppress(OSError):
                self._worker.stdin.close()

    # -- the optimizer -------------------------------------------------------------------------------
    def _default_optimizer_argv(self) -> list[str]:
        argv = [sys.executable, "-m", "daemon.search_worker.optimizer"]
        if self.settings.config_file is not None:
            argv += ["--config", str(self.settings.config_file)]
        return argv

    def _position(self) -> int:
        return cursor_file(self.settings).read(Collections(self.settings).active())

    def _optimize_due(self, idle_for: float) -> bool:
        warm = self.settings.warm
        if warm.store != "edge" or not warm.optimize_after:
            return False  # before reading the cursor file: nothing to decide
        if self._config_error is not None or time.monotonic() < self._not_before:
            return False  # the worker is in trouble: leave the store alone
        return optimize_due(
            store=warm.store,
            after=warm.optimize_after,
            idle_for=idle_for,
            position=self._position(),
            optimized_through=self._optimized_through,
        )

    def _tend_optimizer(self) -> None:
        """Reap an optimizer that finished, or start one when it is due."""
        if self._optimizer is not None:
            code = self._optimizer.poll()
            if code is None:
                return
            self._optimizer = None
            # Done or failed (it logged why), not tried again before the next episodes arrive.
            self._optimized_through = self._optimizing_through
            if code != 0:
                log.debug("search index optimizer exited", status=code)
            return
        if not self._optimize_due(time.monotonic() - self._idle_since):
            return
        self._optimizing_through = self._position()
        try:
            self._optimizer = subprocess.Popen(self._optimizer_argv(), stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            self._optimized_through = self._optimizing_through
            log.warning("could not start the search index's optimizer", error=str(exc))
            return
        log.debug("search index optimizer started", pid=self._optimizer.pid)

    def _stop_optimizer(self) -> None:
        """Kill it outright: the engine keeps the collection whole through a kill, and the work
        waiting for the store should not wait for the graph."""
        optimizer, self._optimizer = self._optimizer, None
        if optimizer is None:
            return
        with contextlib.suppress(ProcessLookupError):
            optimizer.kill()
        optimizer.wait()
        log.debug("search index optimizer stopped for work", pid=optimizer.pid)

    @property
    def optimizer_pid(self) -> int | None:
        return None if self._optimizer is None else self._optimizer.pid

    @property
    def worker_pid(self) -> int | None:
        return None if self._worker is None else self._worker.pid


def _detail(settings: Settings) -> str | None:
    """What the worker last said went wrong, from its status file."""
    status = read_status(settings) or {}
    detail = status.get("detail")
    return detail if isinstance(detail, str) and detail else None
