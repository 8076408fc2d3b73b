"""systemd's notification protocol (sd_notify), for ``Type=notify`` units: READY=1 once the site
is open, STATUS= when what a person would want to know changes, WATCHDOG=1 while the run loop is
alive, STOPPING=1 on the way out.

About fifteen lines of protocol, written here because ``systemd-python`` does not build everywhere
and ``sdnotify`` is unmaintained: one datagram per message to ``$NOTIFY_SOCKET`` (an abstract
socket when it starts with '@'). Without ``$NOTIFY_SOCKET`` (a terminal, launchd) every call does
nothing. The variables are taken out of the environment so that the warm layer's worker process
never speaks for the daemon (systemd would ignore it anyway with ``NotifyAccess=main``).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, MutableMapping

import structlog

log = structlog.get_logger("memsync.notify")


def watchdog_interval(environ: MutableMapping[str, str], pid: int) -> float | None:
    """Seconds between WATCHDOG=1 pings: half of ``WATCHDOG_USEC``, as sd_watchdog_enabled(3)
    advises; None when systemd asked for none, or asked another process. Pure."""
    usec = environ.get("WATCHDOG_USEC", "")
    owner = environ.get("WATCHDOG_PID", "")
    if not usec.isdigit() or int(usec) == 0 or (owner.isdigit() and int(owner) != pid):
        return None
    return int(usec) / 2 / 1_000_000


class Notifier:
    def __init__(
        self, environ: MutableMapping[str, str] | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        env = os.environ if environ is None else environ
        self.address = env.pop("NOTIFY_SOCKET", None) or None
        self.watchdog = watchdog_interval(env, os.getpid())
        env.pop("WATCHDOG_USEC", None)
        env.pop("WATCHDOG_PID", None)
        self.clock = clock
        self._last_ping = float("-inf")
        self._status: str | None = None
        self._sock: socket.socket | None = None
        self._failed = False

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def send(self, message: str) -> None:
        if self.address is None:
            return
        target = "\0" + self.address[1:] if self.address.startswith("@") else self.address
        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            self._sock.sendto(message.encode(), target)
            self._failed = False
        except OSError as exc:
            if not self._failed:  # once, not once a ping
                log.warning("cannot notify systemd", socket=self.address, error=str(exc))
            self._failed = True

    def ready(self, status: str) -> None:
        self._status = status
        self.send(f"READY=1\nSTATUS={status}\nMAINPID={os.getpid()}")
        self._last_ping = self.clock()

    def status(self, text: str) -> None:
        if text != self._status:
            self._status = text
            self.send(f"STATUS={text}")

    def alive(self) -> None:
        """The run loop is alive: ping the watchdog if one is due."""
        if self.watchdog is not None and self.clock() - self._last_ping >= self.watchdog:
            self._last_ping = self.clock()
            self.send("WATCHDOG=1")

    def next_ping_in(self) -> float | None:
        if self.watchdog is None:
            return None
        return max(0.0, self._last_ping + self.watchdog - self.clock())

    def stopping(self) -> None:
        self.send("STOPPING=1\nSTATUS=stopping: finishing the batch in flight")

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None
