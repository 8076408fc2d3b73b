"""sd_notify end to end: a real daemon started the way systemd starts a Type=notify unit, with
NOTIFY_SOCKET pointing at a datagram socket this test owns."""

from __future__ import annotations

import pytest

from daemon.loop.notify import Notifier, watchdog_interval


@pytest.mark.parametrize(
    ("environ", "pid", "expected"),
    [
        ({}, 10, None),
        ({"WATCHDOG_USEC": "0"}, 10, None),
        ({"WATCHDOG_USEC": "junk"}, 10, None),
        ({"WATCHDOG_USEC": "60000000"}, 10, 30.0),
        ({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "10"}, 10, 30.0),
        ({"WATCHDOG_USEC": "60000000", "WATCHDOG_PID": "11"}, 10, None),  # meant for another process
    ],
)
def test_the_watchdog_pings_at_half_the_interval_systemd_asks_for(
    environ: dict[str, str], pid: int, expected: float | None
) -> None:
    assert watchdog_interval(environ, pid) == expected


def test_without_notify_socket_nothing_is_sent_and_the_variables_are_not_inherited() -> None:
    environ = {"WATCHDOG_USEC": "1000000"}
    notifier = Notifier(environ)
    assert not notifier.enabled
    notifier.ready("x")
    notifier.alive()
    assert environ == {}, "a child (the warm worker) must not see the watchdog variables"
