"""Serving the viewer: bind 127.0.0.1 (never another address), print the one-time login link, run
uvicorn until interrupted. The login token is in the printed link only: uvicorn's access log,
which would write it, is off, and the token is registered as a secret for memsync's own log."""

from __future__ import annotations

import socket
import sys
from typing import IO, TYPE_CHECKING

from sync.errors import PathProblem

if TYPE_CHECKING:
    from daemon.config import Settings

HOST = "127.0.0.1"


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: any free port); PathProblem, in a sentence,
    when the port is taken or not ours to use."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise PathProblem(
            f"cannot listen on {HOST}:{port} ({exc.strerror}): another program holds it; set ui.port or pass "
            "--port (0 picks a free one)"
        ) from None
    # Accepted connections inherit it: a page's headers and body go at once, not 40 ms apart
    # (Nagle's algorithm waiting on the client's delayed acknowledgement).
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(settings: Settings, port: int, out: IO[str] = sys.stdout) -> None:
    """Serve until interrupted (Ctrl-C, SIGTERM)."""
    import anyio
    import uvicorn

    from daemon import logs
    from daemon.viewer.app import build_app
    from daemon.viewer.auth import Sessions, login_url
    from daemon.viewer.views import Views

    sock = bind(port)
    bound = sock.getsockname()[1]
    sessions = Sessions()
    token = sessions.login_token or ""
    logs.register_secrets([token])
    hosts = {f"{HOST}:{bound}", f"localhost:{bound}"}
    app = build_app(Views(settings), sessions, hosts)
    out.write(
        f"memsync ui: serving site {settings.site.name} on http://{HOST}:{bound}/\n"
        f"open this link once to log in (it works once; a restart prints a new one):\n"
        f"    {login_url(bound, token)}\n"
    )
    out.flush()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=2)
    try:
        anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))
    finally:
        sock.close()
