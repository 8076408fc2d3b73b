"""The control socket's client: one request to the daemon, its progress lines, its answer.

Standard library only, and nothing from the rest of memsync but its errors: ``memsync search``
through a running daemon imports this and little else (``daemon.cli.light``), so that an agent's
hook that searches on every prompt pays for a Python start-up, not for the whole CLI. The protocol
is described in ``daemon.control.server``, which serves it.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from sync.errors import ControlError, DaemonNotListening, TransientError

Progress = Callable[[Mapping[str, Any]], None]


def ask(path: Path, request: Mapping[str, Any], *, on_progress: Progress | None = None, timeout: float = 60.0) -> Any:
    """Send one request to the daemon and return its result.

    DaemonNotListening when nobody answers; ControlError with the daemon's message otherwise."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            raise DaemonNotListening(f"no daemon is listening on {path}") from exc
        except OSError as exc:  # no access, a file on the socket's way: a path problem, so named
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        # The other side may answer without reading (a host refusing every request while its
        # worker is down writes why and closes): its answer is still there to read.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(json.dumps(dict(request)).encode() + b"\n")
        with sock.makefile("rb") as replies:
            for line in replies:
                message = json.loads(line)
                if "progress" in message:
                    if on_progress is not None:
                        on_progress(message["progress"])
                    continue
                if message.get("ok"):
                    return message.get("result")
                raise ControlError(str(message.get("error")), str(message.get("kind")))
    except TimeoutError as exc:
        raise TransientError(f"the daemon did not answer within {timeout:g}s on {path}") from exc
    finally:
        sock.close()
    raise TransientError(f"the daemon closed {path} without an answer")
