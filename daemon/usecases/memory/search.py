"""A search as a person asks for it (words, a mode, filters by site, agent, session, tag, project,
time, type, outcome) made into the index's request: what ``memsync search`` and the web viewer
build alike. The search itself is the index's own (``daemon.search_worker.recall``: through the daemon, or in this
process). Light: the standard library and the search's wire types, since ``memsync search`` builds
its request on an agent's hook's path."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from sync.search.query.results_text import parse_since
from sync.search.request import Mode, SearchFilter, SearchRequest
from sync.source.type_names import check_type

# A project is a tag: `memsync context --project P` and the hooks tag a session's episodes so.
PROJECT_TAG: Final = "project:"
MODES: Final[tuple[Mode, ...]] = ("hybrid", "dense", "bm25")


def project_tag(project: str) -> str:
    return f"{PROJECT_TAG}{project}"


def search_request(
    query: str,
    *,
    now: float,
    limit: int = 10,
    site: str | None = None,
    agent: str | None = None,
    session: str | None = None,
    tags: Iterable[str] = (),
    project: str | None = None,
    since: str | None = None,
    mode: Mode = "hybrid",
    everything: bool = False,
    floor: float | None = None,
    rerank: bool = False,
    mmr: bool = False,
    types: Iterable[str] = (),
    include_merged: bool = False,
    follow: bool = False,
    outcome: str | None = None,
) -> SearchRequest:
    """The request these ask for, checked. ``since``: 7d, 12h, 30m or an ISO date, as of ``now``;
    ``project``: its tag, beside (any of) ``tags``; ``everything``: near-duplicates and what the
    relevance floor cuts too; ``types``: memory types (any of them); ``include_merged``: also what the
    dream folded or superseded; ``follow``: one hop from the best hits; ``outcome``: success or failure
    (None or "": any). ValueError says what is wrong."""
    wanted = [t for t in tags if t]
    if project:
        wanted.append(project_tag(project))
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    request = SearchRequest(
        query=query,
        limit=limit,
        filter=SearchFilter(
            site=site or None,
            agent=agent or None,
            session=session or None,
            tags=tuple(dict.fromkeys(wanted)),
            since_ms=None if not since else parse_since(since, now),
            types=tuple(check_type(t) for t in types),
            include_merged=include_merged,
            outcome=outcome or None,
        ),
        collapse=not everything,
        rerank=rerank,
        mmr=mmr,
        mode=mode,
        floor=0.0 if everything else floor,
        follow=follow,
    )
    request.check()
    return request
