"""Tier: e2e. A daemon in a child process under a fake systemd notify socket: ready, status pings, stopping."""

from __future__ import annotations

import signal
import socket
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import AgentProcess, SiteFiles, episode, start_daemon, wait_for

WATCHDOG_USEC = 600_000  # pings every 0.3 s


class Listener:
    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(str(path))
        self.sock.settimeout(0.05)
        self.messages: list[tuple[float, str]] = []

    def drain(self) -> list[tuple[float, str]]:
        while True:
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                return self.messages
            self.messages.append((time.monotonic(), data.decode()))

    def has(self, prefix: str) -> bool:
        return any(m.startswith(prefix) or f"\n{prefix}" in m for _, m in self.drain())

    def pings_after(self, moment: float) -> int:
        return sum(1 for t, m in self.drain() if t > moment and "WATCHDOG=1" in m)

    def silent_for(self, seconds: float) -> bool:
        """A ping was read, and none in the last ``seconds``: the loop that pinged has stopped."""
        pings = [t for t, m in self.drain() if "WATCHDOG=1" in m]
        return bool(pings) and time.monotonic() - pings[-1] >= seconds


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[Listener]:
    found = Listener(tmp_path / "notify.sock")
    yield found
    found.sock.close()


def test_a_daemon_under_systemd_says_ready_status_pings_and_stopping(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    agents: Callable[[Path], AgentProcess],
    listener: Listener,
    tmp_path: Path,
) -> None:
    site = site_files("laptop", make_agentdb(5), backbone="busy_timeout_ms = 600000")
    env = {"NOTIFY_SOCKET": str(tmp_path / "notify.sock"), "WATCHDOG_USEC": str(WATCHDOG_USEC)}
    proc = start_daemon(site.config, tmp_path / "daemon.log", env=env)
    try:
        wait_for(lambda: listener.has("READY=1"), timeout=60, what="READY=1")
        ready = next(m for _, m in listener.messages if "READY=1" in m)
        assert f"MAINPID={proc.pid}" in ready
        assert "STATUS=syncing" in ready
        wait_for(lambda: listener.has("STATUS=up to date"), what="a STATUS after the first pass")
        started = time.monotonic()
        wait_for(lambda: listener.pings_after(started) >= 3, timeout=10, what="three watchdog pings")

        # Hold the run loop: the hub is locked by another writer and the daemon's push waits on it.
        holder = sqlite3.connect(site.hub, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        agent = agents(site.agentdb)
        agent.store(episode(100))
        # The pass starts and blocks inside the push: the idle loop pinged every 0.3 s, so four
        # periods without a ping is the loop held (however long the pass took to start).
        ping_every = WATCHDOG_USEC / 2e6
        wait_for(lambda: listener.silent_for(4 * ping_every), timeout=30, what="the loop held in its push")
        held = time.monotonic()
        # On purpose: a duration passes (four watchdog intervals) to show that no ping comes while held.
        time.sleep(4 * WATCHDOG_USEC / 1e6)
        assert listener.pings_after(held) == 0, "a loop held in a call must stop pinging the watchdog"

        holder.execute("ROLLBACK")
        holder.close()
        listener.drain()
        resumed = time.monotonic()
        wait_for(lambda: listener.pings_after(resumed) >= 2, timeout=10, what="pings once the loop runs again")

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert listener.has("STOPPING=1")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
