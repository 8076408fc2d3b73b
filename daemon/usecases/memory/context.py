"""The memories that matter for a task or a prompt, as one fenced block of reference data within a
budget: asked of the running daemon, which searches, reads the project's latest episodes and
composes (``daemon.context.answer``) in one request, the control socket's ``context`` op.

``memsync context`` calls it by hand and as an agent tool's hook, on every prompt: it is on the
light path, so it imports the control socket's client and the op's wire types
(``daemon.context.wire``), nothing of the search. A daemon older than the op is asked as before,
one ``search`` and one ``recent`` request, and the block composed here (``memories``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from daemon.context.wire import BlockAsk, BlockReply
from daemon.control.client import ControlClient, UnknownOp, ask_recent
from sync.errors import ControlError

if TYPE_CHECKING:
    from daemon.context.answer import Memories

MIN_WAIT: Final = 0.05  # seconds a request is given however late it is asked


def context_block(
    socket: Path, ask: BlockAsk, *, deadline: float, monotonic: Callable[[], float] = time.monotonic
) -> BlockReply:
    """The block ``ask`` wants from the daemon on ``socket`` within ``deadline`` (on the
    ``monotonic`` clock). ValueError for a query or a type the search refuses; the control client's
    errors otherwise."""
    try:
        return ControlClient(socket).block(ask, timeout=max(MIN_WAIT, deadline - monotonic()))
    except UnknownOp:
        from daemon.context.answer import compose_reply

        found = memories(
            socket,
            ask.query,
            limit=ask.limit,
            project=ask.project if ask.start else None,  # its latest episodes go in a first block only
            deadline=deadline,
            types=ask.types,
            monotonic=monotonic,
        )
        return compose_reply(found, ask)


def memories(
    socket: Path,
    query: str,
    *,
    limit: int,
    project: str | None,
    deadline: float,
    types: tuple[str, ...] = (),
    monotonic: Callable[[], float] = time.monotonic,
) -> Memories:
    """The search's results for ``query`` (up to ``limit``) and, with a ``project``, its recent
    episodes, from a daemon on ``socket`` without the ``context`` op, each request given what is
    left until ``deadline``; ``types``: only memories of these types (``sync.source.types``), both
    the search's and the recent ones. A daemon without the ``recent`` op either, or refusing it, has
    no recent results: the search's memories are worth giving without them. ValueError for a query
    the search refuses; the control client's errors otherwise."""
    from daemon.context.answer import Memories, context_requests

    def left() -> float:
        return max(MIN_WAIT, deadline - monotonic())

    request, wanted = context_requests(query, limit=limit, project=project, types=types)
    found = ControlClient(socket).search(request, timeout=left())
    if wanted is None:
        return Memories(found, [])
    try:
        return Memories(found, ask_recent(socket, wanted, timeout=left()))
    except ControlError as exc:
        return Memories(found, [], str(exc))


__all__ = ["MIN_WAIT", "context_block", "memories"]
