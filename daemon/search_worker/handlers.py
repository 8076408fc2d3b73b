"""What the search index's worker answers on the daemon's control socket: searches, recent
episodes, an agent's context block, one episode with its neighbours, reindex, and waits for the index to reach a feed
position or to purge what was forgotten (``daemon.control.server`` serves them)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from daemon.context.answer import Memories, compose_reply, context_requests
from daemon.context.wire import BlockAsk
from daemon.control.client import Progress
from daemon.control.server import Handler
from sync.errors import MemsyncError
from sync.search.request import EpisodeRequest, RecentRequest, SearchRequest, SearchResult
from sync.search.service.index import IndexService


def warm_handlers(layer: IndexService) -> dict[str, Handler]:
    """What the control socket answers."""

    def do_search(request: Mapping[str, Any], _progress: Progress) -> Any:
        return layer.answer(SearchRequest.from_wire(request.get("request") or {})).to_wire()

    def do_recent(request: Mapping[str, Any], _progress: Progress) -> Any:
        return [r.to_wire() for r in layer.recent(RecentRequest.from_wire(request.get("request") or {}))]

    def do_episode(request: Mapping[str, Any], _progress: Progress) -> Any:
        return layer.episode(EpisodeRequest.from_wire(request.get("request") or {})).to_wire()

    def do_context(request: Mapping[str, Any], _progress: Progress) -> Any:
        """An agent's context block in one request: the search, the project's latest episodes (their
        refusal said in the answer, the search's memories still given) and the composition."""
        ask = BlockAsk.from_wire(request.get("request") or {})
        # The project's latest episodes go in a session's first block only (compose): not asked after.
        latest_of = ask.project if ask.start else None
        search, wanted = context_requests(ask.query, limit=ask.limit, project=latest_of, types=ask.types)
        found = layer.answer(search).results
        latest: list[SearchResult] = []
        refused = None
        if wanted is not None:
            try:
                latest = layer.recent(wanted)
            except (ValueError, MemsyncError) as exc:
                refused = str(exc)
        return compose_reply(Memories(found, latest, refused), ask).to_wire()

    def do_reindex(_request: Mapping[str, Any], progress: Progress) -> Any:
        return asdict(layer.reindex(lambda report: progress(asdict(report))))

    def do_indexed(request: Mapping[str, Any], _progress: Progress) -> Any:
        """Wait until the index reaches feed position ``through`` (default: the feed's end now)."""
        asked = request.get("through")
        through = int(asked) if asked is not None else layer.feed_end()
        cursor = layer.wait_indexed(through, max(0.0, min(float(request.get("timeout") or 0), 3600.0)))
        return {"cursor": cursor, "through": through, "done": cursor >= through}

    def do_purged(request: Mapping[str, Any], _progress: Progress) -> Any:
        """Wait until the index has reached the feed's end and purged what was forgotten."""
        through = layer.feed_end()
        done = layer.wait_purged(through, max(0.0, min(float(request.get("timeout") or 0), 3600.0)))
        return {"through": through, "done": done}

    return {
        "search": do_search,
        "recent": do_recent,
        "episode": do_episode,
        "context": do_context,
        "reindex": do_reindex,
        "indexed": do_indexed,
        "purged": do_purged,
    }
