"""An agent's context block from what the daemon found: the search's results and the project's
latest episodes (``Memories``), the requests that find them (``context_requests``) and the reply
to the control socket's ``context`` op (``compose_reply``: the block, or a tool's hook stdout for
it, and what it hands the agent). Pure: results in, text out; the daemon's search worker and
``memsync context``, for a daemon older than that op, both compose with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from daemon.context.compose import Block, compose
from daemon.context.hook import fitted
from daemon.context.wire import BlockAsk, BlockReply
from sync.search.request import MAX_LIMIT, RecentRequest, SearchFilter, SearchRequest, SearchResult

RECENT_LIMIT: Final = 12


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


def context_requests(
    query: str, *, limit: int, project: str | None, types: tuple[str, ...] = ()
) -> tuple[SearchRequest, RecentRequest | None]:
    """The search a block asks for and, with a ``project``, the request for its latest episodes;
    ValueError for a query or a type the search refuses."""
    request = SearchRequest(query=query, limit=max(1, min(MAX_LIMIT, limit)), filter=SearchFilter(types=types))
    request.check()
    if not project:
        return request, None
    return request, RecentRequest(limit=RECENT_LIMIT, filter=SearchFilter(tags=(f"project:{project}",), types=types))


def compose_reply(found: Memories, ask: BlockAsk) -> BlockReply:
    """The block ``ask`` wants from these memories: with a tool, that tool's hook stdout for the
    largest block that fits its cap; the memory keys of what the block hands to the agent."""
    exclude = frozenset(ask.exclude)

    def make(budget: int) -> tuple[str, Block]:
        block = found.block(budget=budget, start=ask.start, query=ask.query, project=ask.project, exclude=exclude)
        return block.text, block

    out = ""
    block: Block | None
    if ask.tool is not None:
        out, block = fitted(ask.tool, ask.event, ask.budget, make)
    else:
        _, block = make(ask.budget)
    if block is None:
        return BlockReply("", out, recent_refused=found.recent_refused)
    shown = set(block.ids)
    handed = tuple((r.site, r.source_id) for r in [*found.found, *found.recent] if r.id in shown)
    return BlockReply(block.text, out, block.ids, handed, found.recent_refused)


__all__ = ["RECENT_LIMIT", "Memories", "compose_reply", "context_requests"]
