"""The daemon's control socket: how ``memsync search`` and ``memsync reindex`` reach the process
that owns the embedded vector store.

A Unix socket beside the site's state (mode 0600: only the user who runs the daemon may ask), one
request per connection, JSON lines both ways: the client sends ``{"op": ..., ...}``; the daemon
answers with zero or more ``{"progress": {...}}`` lines and then one ``{"ok": true, "result": ...}``
or ``{"ok": false, "error": "...", "kind": "invalid" | "config" | "transient" | "internal"}``.
Nothing listens on a network port.

The daemon's main process binds the socket at start and keeps it for its whole life; the warm
layer's worker process (``daemon.search_worker.worker``), which does the work, inherits it and serves it
while it runs. A request that arrives while no worker runs waits in the socket's backlog and
starts one (``daemon.search_worker.host``), the way systemd's socket activation does.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import socketserver
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final

import structlog

from daemon.control.client import Progress
from sync.errors import ConfigError, QuotaExhausted, TransientError

log = structlog.get_logger("memsync.control")

# sun_path is 108 bytes on Linux, 104 on macOS.
MAX_SOCKET_PATH: Final = 100
MAX_REQUEST: Final = 1 << 20

Handler = Callable[[Mapping[str, Any], Progress], Any]


def check_path(path: Path) -> None:
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        raise ConfigError(
            f"the control socket path {path} is longer than {MAX_SOCKET_PATH} bytes, which Unix sockets "
            "cannot take: set warm.socket to a shorter path"
        )


def _kind(exc: BaseException) -> str:
    if isinstance(exc, ValueError):
        return "invalid"
    if isinstance(exc, ConfigError):
        return "config"
    # A client asks once and exits: to it an exhausted quota means what a transient error does,
    # try again later (exit 75); only the daemon's indexing loop pauses on its retry_after.
    if isinstance(exc, TransientError | QuotaExhausted):
        return "transient"
    return "internal"


def _parse(line: bytes, handlers: Mapping[str, Handler]) -> dict[str, Any]:
    """A request line, checked; ValueError says what is wrong with it."""
    request = json.loads(line)  # JSONDecodeError is a ValueError
    if not isinstance(request, dict):
        raise ValueError("a request is a JSON object")  # noqa: TRY004 - bad input, answered as "invalid"
    if request.get("op") not in handlers:
        raise ValueError(f"unknown op {request.get('op')!r}; known: {', '.join(sorted(handlers))}")
    return request


class _Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    # Requests in flight finish before the worker exits (server_close joins their threads).
    daemon_threads = False
    block_on_close = True
    handlers: dict[str, Handler]
    busy: Callable[[bool], None]


class _Request(socketserver.StreamRequestHandler):
    server: _Server

    def handle(self) -> None:
        def send(message: Mapping[str, Any]) -> None:
            self.wfile.write(json.dumps(message).encode() + b"\n")
            self.wfile.flush()

        self.server.busy(True)
        try:
            self._answer(send)
        finally:
            self.server.busy(False)

    def _answer(self, send: Callable[[Mapping[str, Any]], None]) -> None:
        line = self.rfile.readline(MAX_REQUEST)
        try:
            request = _parse(line, self.server.handlers)
            result = self.server.handlers[request["op"]](request, lambda p: send({"progress": dict(p)}))
        except BrokenPipeError:
            return  # the client went away
        except Exception as exc:
            if _kind(exc) == "internal":
                log.exception("control request failed")
            with contextlib.suppress(OSError):
                send({"ok": False, "error": str(exc) or type(exc).__name__, "kind": _kind(exc)})
            return
        with contextlib.suppress(OSError):
            send({"ok": True, "result": result})


def listen(path: Path) -> socket.socket:
    """Bind the control socket (mode 0600). The caller holds the site lock, so a socket file left
    at ``path`` is a dead daemon's."""
    check_path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    except BaseException:
        sock.close()
        raise
    finally:
        os.umask(old)
    sock.listen(socketserver.UnixStreamServer.request_queue_size)
    return sock


def unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


class ControlServer:
    """Answers requests on a bound, listening socket (``listen``'s, or one inherited from the main
    process) with ``handlers``; ``busy(True/False)`` is told when a request starts and ends."""

    def __init__(
        self, listener: socket.socket, handlers: Mapping[str, Handler], *, busy: Callable[[bool], None] | None = None
    ) -> None:
        self._server = _Server(listener.getsockname(), _Request, bind_and_activate=False)
        self._server.socket.close()
        self._server.socket = listener
        self._server.handlers = dict(handlers)
        self._server.busy = busy or (lambda _busy: None)
        self._thread = threading.Thread(target=self._server.serve_forever, name="memsync-control", daemon=True)

    def start(self) -> ControlServer:
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop taking requests, finish those in flight, and close this process's copy of the socket
        (requests that arrive later wait in the backlog for whoever serves next)."""
        self._server.shutdown()
        self._server.server_close()
