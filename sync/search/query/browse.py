"""Episodes read without a query: the latest ones under a filter, and one episode with its session's
neighbours. The daemon's control socket serves them as the ``recent`` and ``episode`` ops (what
``memsync context`` and ``memsync mcp`` ask for); they read the search index's payloads, which hold
every indexed episode's fields and text, so a look costs one ordered scroll and no embedding.

The ops, on the control socket's JSON lines (``daemon.control.server``):

    {"op": "recent", "request": {"limit": 10, "filter": {"site": null, "agent": null,
        "session": null, "tags": [], "since_ms": null}}}
    -> {"ok": true, "result": [result, ...]}
       newest first; each result as in ``search --json``'s "results" (``SearchResult.to_wire``),
       with score 0 and similarity null (no query ranked it); exact repeats folded into the newest,
       counted in "duplicates". ``tags`` matches an episode carrying any of them.

    {"op": "episode", "request": {"id": "<pointId>"} or {"site": "...", "sourceId": "..."},
        "neighbours": 3}}
    (by site and sourceId: the point memsync derives from them, or, for an adopted episode that
    kept its seed's point id, the point whose payload carries them)
    -> {"ok": true, "result": {"episode": result or null, "before": [...], "after": [...]}}
       "before" and "after": up to ``neighbours`` episodes of the same site's session on each side,
       in time order; "episode" null when the index holds no such episode.

A daemon older than these ops answers ``{"ok": false, "kind": "invalid", "error": "unknown op
'recent'; known: ..."}``: a caller reads that as "nothing to show" (``daemon.control.client.ask_recent``).
Bad requests are ``invalid`` with one sentence saying what is wrong.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from sync.search.payload import DUPLICATE_KEY, PARENT_KEY, SESSION_KEY, SITE_KEY, memory_type_of
from sync.search.request import EpisodeRequest, EpisodeView, RecentRequest, SearchFilter, SearchResult
from sync.search.stores import StoredPoint, VectorStore, point_id

# A session's episodes read to find one's neighbours; a longer session shows those in this window.
MAX_SESSION_SCAN: Final = 2000
# Points read for recent activity at most: passages and repeats are skipped, so more than asked.
MAX_RECENT_SCAN: Final = 4000


def episodes_only(points: Sequence[StoredPoint]) -> list[StoredPoint]:
    """Pure. The episodes' own points: a long episode's further passages are left out."""
    return [p for p in points if PARENT_KEY not in p.payload]


def pick_recent(points: Sequence[StoredPoint], limit: int, types: Sequence[str] = ()) -> list[SearchResult]:
    """Pure. Points newest first -> up to ``limit`` episodes (of ``types``, when given), each exact
    repeat (``duplicateOf``) folded into the newest of its group and counted in ``duplicates``."""
    groups: dict[str, list[StoredPoint]] = {}
    for p in episodes_only(points):
        if types and memory_type_of(p.payload) not in types:
            continue
        groups.setdefault(str(p.payload.get(DUPLICATE_KEY) or p.id), []).append(p)
    shown = list(groups.values())[:limit]  # dicts keep the order of first sight: newest first
    return [SearchResult.from_payload(g[0].id, g[0].payload, duplicates=len(g) - 1) for g in shown]


def window(
    session: Sequence[StoredPoint], episode: str, neighbours: int
) -> tuple[list[StoredPoint], list[StoredPoint]]:
    """Pure. A session's episodes in time order -> those just before and just after ``episode``."""
    ids = [p.id for p in session]
    if episode not in ids or neighbours == 0:
        return [], []
    at = ids.index(episode)
    return list(session[max(0, at - neighbours) : at]), list(session[at + 1 : at + 1 + neighbours])


def recent(store: VectorStore, request: RecentRequest) -> list[SearchResult]:
    """The latest ``request.limit`` episodes under the filter, newest first."""
    request.check()
    scan = min(request.limit * 4, MAX_RECENT_SCAN)
    while True:
        points = store.in_time_order(request.filter, limit=scan)
        found = pick_recent(points, request.limit, request.filter.types)
        if len(found) >= request.limit or len(points) < scan or scan >= MAX_RECENT_SCAN:
            return found
        scan = min(scan * 4, MAX_RECENT_SCAN)


def by_key(store: VectorStore, site: str, source_id: str) -> list[StoredPoint]:
    """An episode's first point found by its key in the payload: an adopted episode (``memsync
    adopt``) keeps the point its seed wrote, under the seed's id rather than the one memsync derives
    from the key (``sync.search.indexing.passages.head_id``). Its passages carry the key too: the
    first is the one without ``parent``."""
    points = store.in_time_order(
        SearchFilter(site=site, source_id=source_id, include_merged=True), limit=MAX_SESSION_SCAN
    )
    return episodes_only(points)[:1]


def episode(store: VectorStore, request: EpisodeRequest) -> EpisodeView:
    """One episode (asked for by a passage's id, the episode it belongs to) and its neighbours."""
    request.check()
    found = store.get([request.id or point_id(str(request.site), str(request.source_id))])
    if not found and not request.id:
        found = by_key(store, str(request.site), str(request.source_id))
    if found and PARENT_KEY in found[0].payload:
        found = store.get([str(found[0].payload[PARENT_KEY])])
    if not found:
        return EpisodeView(None)
    head = found[0]
    session = head.payload.get(SESSION_KEY)
    before: list[StoredPoint] = []
    after: list[StoredPoint] = []
    if session and request.neighbours:
        same = SearchFilter(site=str(head.payload.get(SITE_KEY, "")), session=str(session), include_merged=True)
        points = episodes_only(store.in_time_order(same, limit=MAX_SESSION_SCAN, newest_first=False))
        before, after = window(points, head.id, request.neighbours)
    return EpisodeView(
        SearchResult.from_payload(head.id, head.payload),
        [SearchResult.from_payload(p.id, p.payload) for p in before],
        [SearchResult.from_payload(p.id, p.payload) for p in after],
    )
