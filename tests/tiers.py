"""The pure tiers' rule, held by the run rather than a comment: a test in tests/unit/ or
tests/contracts/ runs in this one process. Starting a child process there (node, a daemon, the CLI,
the local Convex) or connecting past the loopback fails the test, naming the tier it belongs in
(CONTRIBUTING.md). An in-process server on 127.0.0.1 and a Unix socket are allowed: they are the
lowest seam for a service. (A ``multiprocessing`` spawn bypasses the audit events; none is here.)
"""

from __future__ import annotations

import ipaddress
import platform
import sys
from collections.abc import Generator
from typing import Any, Final

import pytest

PURE: Final = frozenset({"unit", "contracts"})
_SPAWNS: Final = frozenset(
    {"subprocess.Popen", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn", "os.system"}
)
_guarding = False


def _on_this_machine(address: Any) -> bool:
    if not isinstance(address, tuple):
        return True  # a Unix socket's path
    host = address[0]
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _guarding:
        return
    if event in _SPAWNS:
        raise RuntimeError(f"a unit test started a child process ({event}): it belongs in tests/e2e/")
    if event == "socket.connect" and not _on_this_machine(args[1]):
        raise RuntimeError(f"a unit test connected to {args[1]!r}: unit tests stay on the loopback")


sys.addaudithook(_audit)  # an audit hook stays for the process: _guarding says when it acts
# The Voyage client puts platform.uname() in its headers, whose processor field runs `uname -p`
# once a process: a library's probe of the machine, asked here before any test so none pays it.
platform.processor()
# httpcore imports trio when it is installed (Selenium, the browser test's client, brings it), and
# trio's import asks ldconfig once a process: imported here before any test, as above.
import httpcore  # noqa: E402, F401


def _guarded(item: pytest.Item) -> Generator[None, object, object]:
    global _guarding  # noqa: PLW0603
    _guarding = item.path.parent.name in PURE
    try:
        return (yield)
    finally:
        _guarding = False


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Generator[None, object, object]:
    return (yield from _guarded(item))
