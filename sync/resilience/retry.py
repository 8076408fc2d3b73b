"""The one retry policy: exponential backoff with jitter on transient errors, honouring a server's
Retry-After, interruptible by a stop event so that SIGTERM never waits out a backoff.

Everything that talks to something outside the process retries through ``RetryPolicy.call``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception_type, stop_after_delay, stop_never

from sync.errors import Interrupted, TransientError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    initial: float = 0.2
    maximum: float = 30.0
    jitter: float = 0.5
    give_up_after: float | None = None  # seconds; None retries until stopped
    # Waits between attempts; by default on the stop event, so that a stop cuts a wait short.
    sleep: Callable[[float], None] | None = field(default=None, compare=False)

    def backoff(self, attempt: int, draw: float) -> float:
        """Seconds before retry number ``attempt`` (1, 2, ...): doubling from ``initial`` up to
        ``maximum``, plus up to ``jitter`` seconds (``draw`` in [0, 1)) so that sites do not retry
        in step. Pure; computed here rather than by tenacity, whose API for it changed in 9.2."""
        return float(min(self.maximum, self.initial * 2.0 ** (attempt - 1)) + self.jitter * draw)

    def call(
        self,
        fn: Callable[[], T],
        *,
        stop: threading.Event | None = None,
        on_retry: Callable[[BaseException, float, int], None] | None = None,
    ) -> T:
        """Run ``fn``, retrying TransientError. Other errors pass straight through, QuotaExhausted
        among them: its wait runs to the provider's reset, for the caller to pause on, not to sleep
        through here."""
        stop_event = stop or threading.Event()

        def wait(state: RetryCallState) -> float:
            delay = self.backoff(state.attempt_number, random.random())  # noqa: S311 - jitter, not secrecy
            outcome = state.outcome
            error = outcome.exception() if outcome is not None else None
            if isinstance(error, TransientError) and error.retry_after is not None and error.retry_after > delay:
                delay = float(error.retry_after)
            return delay

        def before_sleep(state: RetryCallState) -> None:
            outcome = state.outcome
            error = outcome.exception() if outcome is not None else None
            if on_retry is not None and error is not None and state.next_action is not None:
                on_retry(error, state.next_action.sleep, state.attempt_number)

        def interruptible_sleep(seconds: float) -> None:
            if self.sleep is not None:
                self.sleep(seconds)
            else:
                stop_event.wait(seconds)

        def should_stop(state: RetryCallState) -> bool:
            limit = stop_never if self.give_up_after is None else stop_after_delay(self.give_up_after)
            return stop_event.is_set() or bool(limit(state))

        retrying = Retrying(
            retry=retry_if_exception_type(TransientError),
            wait=wait,
            stop=should_stop,
            sleep=interruptible_sleep,
            before_sleep=before_sleep,
            reraise=True,
        )
        try:
            return retrying(fn)
        except TransientError as exc:
            if stop_event.is_set():
                raise Interrupted("stopped while retrying") from exc
            raise
