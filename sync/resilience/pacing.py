"""The one periodic loop with backoff: do a step, wait for the next, back off while steps fail.

The run loop, the warm layer's indexing loop and the warm worker's supervisor all have this shape
(before, each had its own hand-written doubling); the delays come from ``RetryPolicy.backoff``, the
one backoff formula.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sync.resilience.retry import RetryPolicy


@dataclass
class Backoff:
    """Consecutive failures and the wait they call for: ``policy``'s doubling, capped at its maximum."""

    policy: RetryPolicy
    failures: int = 0
    draw: Callable[[], float] = field(default=random.random, repr=False)  # jitter; a table test passes its own

    def failed(self) -> float:
        """One more failure: the seconds to wait before the next attempt."""
        self.failures += 1
        return self.policy.backoff(self.failures, self.draw())

    def succeeded(self) -> None:
        self.failures = 0

    @property
    def failing(self) -> bool:
        return self.failures > 0


def run_periodically(
    step: Callable[[], float],
    *,
    stop: threading.Event,
    wake: threading.Event,
    backoff: Backoff,
    on_error: Callable[[Exception], None],
    cap: Callable[[float], float] = lambda wait: wait,
    fatal: tuple[type[Exception], ...] = (),
) -> None:
    """Until ``stop``: run ``step``, which returns the seconds until it wants to run again; wait that
    long, or until ``wake``. A step that raises is reported to ``on_error`` and retried after the
    backoff's delay, unless the error is ``fatal`` (only a person can fix it): that ends the loop.
    ``cap`` shortens any wait (a watchdog to ping, a model to let go)."""
    while not stop.is_set():
        try:
            wait = step()
        except fatal:
            raise
        except Exception as exc:  # noqa: BLE001 - the loop must outlive any one step; on_error reports it
            on_error(exc)
            wait = backoff.failed()
        else:
            backoff.succeeded()
        if stop.is_set():
            break
        if wake.wait(cap(wait)):
            wake.clear()
