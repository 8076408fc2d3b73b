"""The one periodic loop with backoff (``sync.pacing``)."""

from __future__ import annotations

import threading

import pytest

from sync.pacing import Backoff, run_periodically
from sync.retry import RetryPolicy


def test_backoff_doubles_to_its_cap_and_resets_on_success() -> None:
    backoff = Backoff(RetryPolicy(initial=1.0, maximum=5.0, jitter=0.0), draw=lambda: 0.0)
    assert [backoff.failed() for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    assert backoff.failures == 5
    backoff.succeeded()
    assert backoff.failures == 0
    assert backoff.failed() == 1.0


def test_the_loop_waits_what_the_step_asks_and_backs_off_while_it_fails() -> None:
    stop, wake = threading.Event(), threading.Event()
    waits: list[float] = []
    outcomes: list[float | Exception] = [2.0, RuntimeError("down"), RuntimeError("still down"), 3.0]
    errors: list[str] = []

    def step() -> float:
        if not outcomes:
            stop.set()
            return 0.0
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def cap(wait: float) -> float:
        waits.append(wait)
        return 0.0  # do not actually wait

    backoff = Backoff(RetryPolicy(initial=0.5, maximum=10.0, jitter=0.0), draw=lambda: 0.0)
    run_periodically(step, stop=stop, wake=wake, backoff=backoff, on_error=lambda e: errors.append(str(e)), cap=cap)
    assert waits == [2.0, 0.5, 1.0, 3.0]
    assert errors == ["down", "still down"]
    assert not backoff.failing, "a step that succeeds again resets the backoff"


@pytest.mark.parametrize("woken", [True, False])
def test_a_wake_cuts_the_wait_short(woken: bool) -> None:
    stop, wake = threading.Event(), threading.Event()
    steps = 0

    def step() -> float:
        nonlocal steps
        steps += 1
        if steps == 2:
            stop.set()
        elif woken:
            wake.set()  # without it, an hour's wait would time the test out
        return 0.05 if not woken else 3600.0

    backoff = Backoff(RetryPolicy())
    run_periodically(step, stop=stop, wake=wake, backoff=backoff, on_error=lambda e: None)
    assert steps == 2
    assert not wake.is_set(), "a wake is consumed by the wait it ended"
