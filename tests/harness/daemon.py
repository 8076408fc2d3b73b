"""The real daemon and the real CLI in child processes, as a user or a service manager runs them:
start, wait until started, read the log and the status, stop.

Two ways to hold a daemon: the functions (``start_daemon``, ``wait_started``, ``stop_daemon``) on a
bare ``Popen``, which the tests' ``daemons`` fixture hands out and reaps; and ``DaemonProcess``, a
``ChildProcess`` that a ``with`` block starts and stops, as the benchmarks use it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from harness.paths import ROOT
from harness.site import SiteFiles
from harness.waits import ProcessExited, WaitTimedOut, wait_for


# -- the CLI ------------------------------------------------------------------------------------
def memsync(
    *args: str, timeout: float = 120, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real CLI in a child process, as a user would; ``env`` adds to this environment."""
    return subprocess.run(
        [sys.executable, "-m", "daemon", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        check=False,
    )


def status_json(config: Path, **kwargs: Any) -> tuple[int, dict[str, Any]]:
    """``memsync status --json``: its exit code and its report."""
    done = memsync("status", "--json", "--config", str(config), **kwargs)
    try:
        report: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"status --json printed no JSON (exit {done.returncode}): {done.stdout!r} {done.stderr!r}"
        ) from None
    return done.returncode, report


# -- the daemon's log ---------------------------------------------------------------------------
def log_events(log: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects among a daemon's log lines (``[log] format = "json"``), in order; a line
    being written, or one a child process printed as text, is passed over."""
    if not log.exists():
        return
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            yield event


def logged(log: Path, event: str, **fields: Any) -> list[dict[str, Any]]:
    """The log's ``event`` lines whose fields include ``fields``."""
    return [e for e in log_events(log) if e.get("event") == event and all(e.get(k) == v for k, v in fields.items())]


def log_tail(log: Path, lines: int = 20) -> str:
    """The log's last ``lines`` lines, for a message about a process that failed."""
    if not log.exists():
        return "(no log)"
    return "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


# -- the daemon as a bare process ---------------------------------------------------------------
def daemon_argv(config: Path) -> list[str]:
    return [sys.executable, "-m", "daemon", "run", "--config", str(config)]


def start_daemon(
    config: Path, log: Path, *, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """``memsync run`` in a child process, its output appended to ``log``; ``env`` adds to this
    environment. Returns at once: ``wait_started`` waits until it is up."""
    with log.open("ab") as handle:
        return subprocess.Popen(
            daemon_argv(config),
            stdout=handle,
            stderr=handle,
            env=None if env is None else {**os.environ, **env},
            cwd=cwd,
        )


def wait_started(site: SiteFiles, proc: subprocess.Popen[bytes], log: Path, timeout: float = 60) -> None:
    """Until this daemon holds the site lock and has logged "started" (its signal handlers are in
    place); ``ProcessExited`` with its log's tail if it ends first."""
    from daemon.control.lock import holder_pid

    def started() -> bool:
        if proc.poll() is not None:
            raise ProcessExited(f"daemon exited {proc.returncode}: {log_tail(log, 40)}")
        if holder_pid(site.lock) != proc.pid:
            return False
        return bool(logged(log, "started", pid=proc.pid))

    wait_for(started, timeout=timeout, what="the daemon to start")


def stop_daemon(proc: subprocess.Popen[bytes], timeout: float = 20) -> int:
    """SIGTERM, as a service manager stops it; its exit code (``TimeoutExpired`` if it hangs)."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    return proc.wait(timeout)


# -- a child process in a with block ------------------------------------------------------------
class ChildProcess:
    """A long-running program, its output in a log; ``with`` starts it and stops it with SIGTERM
    (then SIGKILL), as a service manager would. ``exit_code`` once stopped."""

    name = "the process"

    def __init__(self, log: Path) -> None:
        self.log = log
        self.proc: subprocess.Popen[bytes] | None = None
        self.exit_code: int | None = None

    def argv(self) -> list[str]:
        raise NotImplementedError

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self) -> Self:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=log, cwd=ROOT)
        return self

    def check_alive(self) -> bool:
        """True while it runs; ``ProcessExited`` with its log's tail once it has ended."""
        if self.proc is not None and self.proc.poll() is not None:
            raise ProcessExited(f"{self.name} exited with {self.proc.returncode}; log:\n{self.log_tail()}")
        return True

    def stop(self, timeout: float = 20.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.exit_code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.exit_code = self.proc.wait(timeout)

    def log_tail(self, lines: int = 20) -> str:
        return log_tail(self.log, lines)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


class DaemonProcess(ChildProcess):
    """``memsync run`` for ``site``, logging to ``site.log``; started once ``wait_started`` says so."""

    name = "the daemon"

    def __init__(self, site: SiteFiles, *, start_timeout: float = 60.0) -> None:
        super().__init__(site.log)
        self.site = site
        self.start_timeout = start_timeout

    def argv(self) -> list[str]:
        return daemon_argv(self.site.config)

    def start(self) -> Self:
        super().start()
        assert self.proc is not None
        try:
            wait_started(self.site, self.proc, self.log, timeout=self.start_timeout)
        except WaitTimedOut:
            self.stop()
            raise WaitTimedOut(
                f"the daemon did not start within {self.start_timeout:g} s; log:\n{self.log_tail()}"
            ) from None
        except ProcessExited:
            self.stop()
            raise
        return self


def start_viewer(config: Path, log: Path, timeout: float = 60) -> tuple[subprocess.Popen[str], str]:
    """``memsync ui --port 0`` in a child process, its stderr in ``log``; the process and the login
    link it printed (``ProcessExited`` with the log when it ends without one)."""
    import re
    import time

    with log.open("w") as errors:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daemon", "ui", "--port", "0", "--config", str(config)],
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            cwd=ROOT,
        )
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if found := re.search(r"http://127\.0\.0\.1:\d+/login\?token=\S+", line):
            return proc, found[0]
        if not line and proc.poll() is not None:
            break
    proc.kill()
    proc.wait()
    proc.stdout.close()
    raise ProcessExited(f"memsync ui printed no login link: {log.read_text()}")


def stop_viewer(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    proc.wait(30)
    if proc.stdout is not None:
        proc.stdout.close()
