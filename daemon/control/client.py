"""The control socket's client: ``ControlClient``, one typed method per operation the daemon serves
(``daemon.search_worker.handlers``), the one place a request is written; ``ask``, the exchange
on the wire beneath it (one request, its progress lines, its answer).

Standard library only, and nothing from the rest of memsync but its errors, imported here, and the
wire types (``sync.search.request``, ``daemon.context.wire``), imported by the method that reads
them: ``memsync search`` and ``context`` through a running daemon import this and little else
(``daemon.cli``'s light paths), so that an agent's hook that asks on every prompt pays for a Python
start-up, not for the whole CLI. The protocol is described in
``daemon.control.server``, which serves it.
"""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sync.errors import ControlError, DaemonNotListening, TransientError

if TYPE_CHECKING:
    from daemon.context.wire import BlockAsk, BlockReply
    from sync.search.request import (
        EpisodeRequest,
        EpisodeView,
        RecentRequest,
        SearchAnswer,
        SearchRequest,
        SearchResult,
    )

Progress = Callable[[Mapping[str, Any]], None]

# Seconds the socket waits beyond what a waiting op was given: the daemon answers at its deadline.
WAIT_MARGIN = 5.0


class UnknownOp(ControlError):
    """The daemon predates the op (it answers with the ops it knows): a caller decides whether that
    means nothing to show or a daemon to restart."""


@dataclass(frozen=True, slots=True)
class Indexed:
    """The ``indexed`` op's answer: the index's feed position, the one waited for, and whether it
    got there in time."""

    cursor: int
    through: int
    done: bool


@dataclass(frozen=True, slots=True)
class Purged:
    """The ``purged`` op's answer: the feed position waited for, and whether the index reached it
    and purged its files of what was forgotten in time."""

    through: int
    done: bool


class ControlClient:
    """The running daemon's control socket at ``socket``. Every method raises DaemonNotListening
    when nobody answers, TransientError when the answer does not come within ``timeout`` seconds,
    ``UnknownOp`` from a daemon older than the op, and ControlError with the daemon's message
    (its ``kind``: invalid, config, transient, internal) otherwise."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def answer(self, request: SearchRequest, *, timeout: float = 60.0) -> SearchAnswer:
        """The search's judged answer: its results, what the floor cut, the identifiers it named."""
        from sync.search.request import SearchAnswer

        try:
            return SearchAnswer.from_wire(self._ask({"op": "search", "request": request.to_wire()}, timeout=timeout))
        except ValueError:
            return SearchAnswer([])

    def search(self, request: SearchRequest, *, timeout: float = 60.0) -> list[SearchResult]:
        return self.answer(request, timeout=timeout).results

    def recent(self, request: RecentRequest, *, timeout: float = 10.0) -> list[SearchResult]:
        """The latest episodes under the request's filter, newest first."""
        from sync.search.request import SearchResult

        reply = self._ask({"op": "recent", "request": request.to_wire()}, timeout=timeout)
        return [SearchResult.from_wire(r) for r in reply]

    def episode(self, request: EpisodeRequest, *, timeout: float = 10.0) -> EpisodeView:
        """The episode (None when the index holds no such episode) and its session's neighbours."""
        from sync.search.request import EpisodeView

        return EpisodeView.from_wire(self._ask({"op": "episode", "request": request.to_wire()}, timeout=timeout))

    def block(self, ask: BlockAsk, *, timeout: float = 10.0) -> BlockReply:
        """The context block the daemon composed for ``ask`` (its search, the project's latest
        episodes, the composition: one round trip for an agent's hook)."""
        from daemon.context.wire import BlockReply

        try:
            return BlockReply.from_wire(self._ask({"op": "context", "request": ask.to_wire()}, timeout=timeout))
        except ValueError as exc:
            raise ControlError(str(exc), "internal") from None

    def reindex(self, on_progress: Progress | None = None, *, timeout: float = 24 * 3600) -> dict[str, Any]:
        """Rebuild the index with the configured model; its report (the layer's pass report)."""
        return dict(self._ask({"op": "reindex"}, on_progress=on_progress, timeout=timeout))

    def indexed(self, through: int | None, *, wait: float, timeout: float | None = None) -> Indexed:
        """Wait up to ``wait`` seconds until the index reaches feed position ``through`` (None: the
        feed's end now)."""
        reply = self._ask(
            {"op": "indexed", "through": through, "timeout": wait},
            timeout=wait + WAIT_MARGIN if timeout is None else timeout,
        )
        return Indexed(int(reply.get("cursor") or 0), int(reply.get("through") or 0), bool(reply.get("done")))

    def purged(self, *, wait: float) -> Purged:
        """Wait up to ``wait`` seconds until the index reaches the feed's end and has purged its files
        of what was forgotten."""
        reply = self._ask({"op": "purged", "timeout": wait}, timeout=wait + WAIT_MARGIN)
        return Purged(int(reply.get("through") or 0), bool(reply.get("done")))

    def _ask(self, request: Mapping[str, Any], *, on_progress: Progress | None = None, timeout: float) -> Any:
        try:
            return ask(self.socket, request, on_progress=on_progress, timeout=timeout)
        except ControlError as exc:
            if exc.kind == "invalid" and str(exc).startswith("unknown op"):
                raise UnknownOp(str(exc), exc.kind) from None
            raise


def ask_recent(socket: Path, request: RecentRequest, *, timeout: float = 10.0) -> list[SearchResult]:
    """``ControlClient.recent`` for a caller to whom a daemon older than the op has no recent
    episodes (``memsync context``), not a failure."""
    try:
        return ControlClient(socket).recent(request, timeout=timeout)
    except UnknownOp:
        return []


def ask_episode(socket: Path, request: EpisodeRequest, *, timeout: float = 10.0) -> EpisodeView:
    """``ControlClient.episode`` for a caller to whom a daemon older than the op has no such
    episode, not a failure."""
    try:
        return ControlClient(socket).episode(request, timeout=timeout)
    except UnknownOp:
        from sync.search.request import EpisodeView

        return EpisodeView(None)


def ask(path: Path, request: Mapping[str, Any], *, on_progress: Progress | None = None, timeout: float = 60.0) -> Any:
    """Send one request to the daemon and return its result: the wire beneath ``ControlClient``.

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
