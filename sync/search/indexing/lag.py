"""How far the search index is behind the backbone: counted in episodes, not feed positions (an
episode edited twice is one change, at its latest position, so positions overcount)."""

from __future__ import annotations

from sync.backbone.base import ChangeFeed

PAGE = 500


def episodes_behind(feed: ChangeFeed, cursor: int, limit: int) -> tuple[int, bool]:
    """(episodes changed after feed position ``cursor``, exact). Counting stops past ``limit``: then
    the count is a lower bound and ``exact`` is False."""
    count, after = 0, cursor
    while count <= limit:
        page = feed.changes(after, PAGE)
        if not page:
            return count, True
        count += len(page)
        after = page[-1].seq
    return count, not feed.changes(after, 1)
