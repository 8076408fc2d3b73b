"""The memories that matter for a task or a prompt: the search's results for it and the project's
latest episodes, asked of the running daemon (one ``search`` and one ``recent`` request), composed
into one fenced block of reference data within a budget (``daemon.context.compose``).

``memsync context`` calls it by hand and as an agent tool's hook, on every prompt: it is on the
light path, so it imports the standard library, the control socket's client and the context's
own modules, nothing heavier.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from daemon.context.compose import Block, compose
from daemon.control.client import ControlClient, ask_recent
from sync.errors import ControlError
from sync.search.request import MAX_LIMIT, RecentRequest, SearchFilter, SearchRequest, SearchResult

RECENT_LIMIT: Final = 12
MIN_WAIT: Final = 0.05  # seconds a request is given however late it is asked


@dataclass(frozen=True, slots=True)
class Memories:
    """What the daemon found for a query, and the project's latest episodes."""

    found: list[SearchResult]
    recent: list[SearchResult]
    recent_refused: str | None = None  # why the daemon refused ``recent`` (its words); none then

    def block(
        self, *, budget: int, start: bool, query: str, project: str | None, exclude: frozenset[str] = frozenset()
    ) -> Block:
        """The memories as one block within ``budget`` characters (``start``: a session's first,
        with the project's latest sessions; ``exclude``: ids the session was given already)."""
        return compose(
            self.found, self.recent, budget=budget, start=start, query=query, project=project, exclude=exclude
        )


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
    episodes, from the daemon on ``socket``, each request given what is left until ``deadline``
    (on the ``monotonic`` clock); ``types``: only memories of these types (``sync.source.types``),
    both the search's and the recent ones. A daemon without the ``recent`` op (older than this code), or
    refusing it, has no recent results: the search's memories are worth giving without them.
    ValueError for a query the search refuses; the control client's errors otherwise."""

    def left() -> float:
        return max(MIN_WAIT, deadline - monotonic())

    request = SearchRequest(query=query, limit=max(1, min(MAX_LIMIT, limit)), filter=SearchFilter(types=types))
    request.check()
    found = ControlClient(socket).search(request, timeout=left())
    if not project:
        return Memories(found, [])
    wanted = RecentRequest(limit=RECENT_LIMIT, filter=SearchFilter(tags=(f"project:{project}",), types=types))
    try:
        return Memories(found, ask_recent(socket, wanted, timeout=left()))
    except ControlError as exc:
        return Memories(found, [], str(exc))
