"""The wait on an observable event that stands in for a sleep, and what a child process that
ended too soon raises: each a failed assertion to pytest and an error to a benchmark."""

from __future__ import annotations

import time
from collections.abc import Callable


class WaitTimedOut(AssertionError, TimeoutError):
    """A wait's event never came: a failed assertion to pytest, a timeout to a benchmark."""


class ProcessExited(AssertionError, RuntimeError):
    """A child process (a daemon, a server) ended while it was waited on or relied upon."""


def wait_for(predicate: Callable[[], bool], timeout: float = 30, interval: float = 0.05, what: str = "") -> None:
    """Until ``predicate()`` holds: poll it every ``interval`` s, give up after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise WaitTimedOut(f"timed out after {timeout}s waiting for {what or predicate}")
