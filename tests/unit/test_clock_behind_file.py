"""Tier: unit.

A clock behind the AgentDB file's time (a clock stepped back, a file from a machine whose clock
runs ahead): the reader waits at most its racy window, never the difference between two clocks,
and says how far ahead the file is. The clock is the reader's argument; the file's time is set
with os.utime, and the waits are recorded, never slept."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from harness import episodes_file

from sync.agentdb import RACY_WINDOW_NS, WAIT_OUT_WINDOW_NS, AgentDBReader

NOW_NS = 1_800_000_000_123_456_789  # this machine's clock, with sub-millisecond digits as Linux has
DAY_NS = 86_400 * 10**9


@pytest.mark.parametrize(
    "ahead_ns",
    [
        pytest.param(40 * 10**9 + 7_654_321, id="40 s"),
        pytest.param(3 * DAY_NS + 7_654_321, id="3 days"),
        pytest.param(20 * 365 * DAY_NS + 7_654_321, id="20 years"),
    ],
)
def test_a_file_ahead_of_the_clock_is_read_without_waiting_out_the_difference(tmp_path: Path, ahead_ns: int) -> None:
    path = episodes_file(tmp_path / "agentdb.db")
    os.utime(path, ns=(NOW_NS + ahead_ns, NOW_NS + ahead_ns))
    waits: list[float] = []
    reader = AgentDBReader(path, sleep=waits.append, clock_ns=lambda: NOW_NS)
    with reader.snapshot() as snap:
        assert snap.count() == 3
    assert sum(waits) * 1e9 <= 2 * WAIT_OUT_WINDOW_NS, waits
    assert reader.ahead_of_clock_s == pytest.approx(ahead_ns / 1e9)
    # Still suspect: read again on every poll, never in place, until this clock passes its time.
    assert reader.has_changed()


def test_a_file_a_moment_ahead_waits_one_window_at_most_and_says_nothing(tmp_path: Path) -> None:
    path = episodes_file(tmp_path / "agentdb.db")
    written = NOW_NS + 5_000_000  # 5 ms ahead: the lag between two clocks, not a skew worth saying
    os.utime(path, ns=(written, written))
    now = [NOW_NS]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += int(seconds * 1e9)

    reader = AgentDBReader(path, sleep=sleep, clock_ns=lambda: now[0])
    reader.snapshot().close()
    assert 0 < sum(waits) * 1e9 <= 2 * WAIT_OUT_WINDOW_NS, waits
    assert reader.ahead_of_clock_s is None


def test_the_skew_is_said_only_past_the_coarse_window_and_forgotten_when_the_clock_passes(tmp_path: Path) -> None:
    path = episodes_file(tmp_path / "agentdb.db")
    written = NOW_NS + 40 * 10**9
    os.utime(path, ns=(written, written))
    now = [NOW_NS]
    reader = AgentDBReader(path, sleep=lambda _s: None, clock_ns=lambda: now[0])
    reader.snapshot().close()
    assert reader.ahead_of_clock_s == pytest.approx(40.0)
    now[0] = written + 2 * RACY_WINDOW_NS  # the clock was put right, or caught up
    reader.snapshot().close()
    assert reader.ahead_of_clock_s is None
    assert not reader.has_changed()


def test_the_real_clock_is_the_default(tmp_path: Path) -> None:
    path = episodes_file(tmp_path / "agentdb.db")
    reader = AgentDBReader(path, sleep=lambda _s: None)
    ahead = time.time_ns() + DAY_NS
    os.utime(path, ns=(ahead, ahead))
    reader.snapshot().close()
    assert reader.ahead_of_clock_s is not None
    assert reader.ahead_of_clock_s > 86_000
