"""Near-duplicates: an episode whose first passage is at least ``DEFAULT_DUPLICATE_THRESHOLD``
alike (cosine) an earlier episode's is linked to its group's head (``duplicateOf`` in its payload),
never dropped; search collapses a group to its best member. Links are found when an episode is
embedded, within its page first, then among the episodes already in the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from sync.search.indexing.passages import ToEmbed
from sync.search.payload import DUPLICATE_KEY, PARENT_KEY
from sync.search.query.ranking.rank import cosine
from sync.search.stores import VectorStore

DEFAULT_DUPLICATE_THRESHOLD: Final = 0.95


def canonical_of(own_id: str, match_id: str, match_payload: Mapping[str, Any]) -> str | None:
    """The point a near-duplicate links to: the head of the match's group, never itself (an edited
    head that now resembles one of its own duplicates heads its group still)."""
    head = str(match_payload.get(DUPLICATE_KEY) or match_id)
    return None if own_id in (head, match_id) else head


def link_within_page(
    items: Sequence[ToEmbed], vectors: Sequence[Sequence[float]], threshold: float
) -> list[str | None]:
    """For each item, the earlier item of the same page it nearly duplicates (its group's head), if any."""
    links: list[str | None] = []
    for i, vector in enumerate(vectors):
        link = None
        for j in range(i):
            if cosine(vector, vectors[j]) >= threshold:
                link = canonical_of(items[i].point_id, items[j].point_id, {DUPLICATE_KEY: links[j]})
                if link is not None:
                    break
        links.append(link)
    return links


def link_to_store(store: VectorStore, own_id: str, vector: Sequence[float], threshold: float) -> str | None:
    """The group head an episode's first point links to among the episodes already in ``store``,
    if one is at least ``threshold`` alike (a further passage is never a match)."""
    for hit in store.dense_search(vector, limit=3, score_threshold=threshold):
        if PARENT_KEY in hit.payload:
            continue
        link = canonical_of(own_id, hit.id, hit.payload)
        if link is not None:
            return link
    return None
