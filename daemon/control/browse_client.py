"""Ask a running daemon for recent episodes or one episode with its neighbours (the ``recent`` and
``episode`` ops, described in ``sync.search.query.browse``), from light code: the standard library,
``daemon.control.client`` and the wire types of ``sync.search.request``, nothing heavier.

``memsync context`` (a hook on every prompt) and ``memsync mcp`` call these. A daemon older than the
ops answers "unknown op": ``ask_recent`` reads that as no recent episodes, never as a failure;
``ask_episode`` as no such episode. DaemonNotListening, TransientError and ControlError reach the
caller as ``client.ask`` raises them.
"""

from __future__ import annotations

from pathlib import Path

from daemon.control.client import ask
from sync.errors import ControlError
from sync.search.request import EpisodeRequest, EpisodeView, RecentRequest, SearchResult


def unknown_op(exc: ControlError) -> bool:
    """The daemon predates the op (its control socket lists the ops it knows)."""
    return exc.kind == "invalid" and str(exc).startswith("unknown op")


def ask_recent(socket: Path, request: RecentRequest, *, timeout: float = 10.0) -> list[SearchResult]:
    """The latest episodes under the request's filter, newest first."""
    try:
        reply = ask(socket, {"op": "recent", "request": request.to_wire()}, timeout=timeout)
    except ControlError as exc:
        if unknown_op(exc):
            return []
        raise
    return [SearchResult.from_wire(r) for r in reply]


def ask_episode(socket: Path, request: EpisodeRequest, *, timeout: float = 10.0) -> EpisodeView:
    """The episode (None when the index holds no such episode) and its session's neighbours."""
    try:
        reply = ask(socket, {"op": "episode", "request": request.to_wire()}, timeout=timeout)
    except ControlError as exc:
        if unknown_op(exc):
            return EpisodeView(None)
        raise
    return EpisodeView.from_wire(reply)
