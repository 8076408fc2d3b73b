"""One hop from the best hits (``search --follow``): the episodes just before and after each of the
first ``HOP_SEEDS`` results in its session (the ``led_to`` links of ``contracts/links.json``), placed
right after the result they were reached from. A question whose answer spans two turns of one
conversation often names only the first; its neighbour holds the rest. Off by default:
bench/links.py measures what it does to recall, per LoCoMo category.

The neighbours are read from the index's payloads (session and ts), as ``browse`` reads a
session: the search process has no backbone, and needs none for this kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Final

from sync.search.payload import SESSION_KEY, SITE_KEY
from sync.search.query.browse import MAX_SESSION_SCAN, episodes_only, window
from sync.search.query.ranking.rank import Ranked
from sync.search.request import SearchFilter
from sync.search.stores import VectorStore

HOP_SEEDS: Final = 3  # the results whose neighbours are followed
HOP_NEIGHBOURS: Final = 1  # episodes on each side of a seed


def follow_one_hop(ranked: Sequence[Ranked], neighbours: Mapping[str, Sequence[Ranked]], seeds: int) -> list[Ranked]:
    """Pure. ``ranked`` with each of the first ``seeds`` results' ``neighbours`` right after it (a
    neighbour already ranked lower moves up; one ranked higher, or a seed itself, stays), each taking its seed's score
    and no similarity of its own (the query never matched it)."""
    out: list[Ranked] = []
    placed: set[str] = set()
    top = {r.id for r in ranked[:seeds]}  # a seed stays where it ranked
    for i, r in enumerate(ranked):
        if r.id in placed:
            continue  # pulled up behind its seed
        out.append(r)
        placed.add(r.id)
        if i < seeds:
            for n in neighbours.get(r.id, ()):
                if n.id not in placed and n.id not in top:
                    out.append(replace(n, score=r.score, similarity=None))
                    placed.add(n.id)
    return out


def session_neighbours(store: VectorStore, seeds: Sequence[Ranked]) -> dict[str, list[Ranked]]:
    """Each seed's episodes just before and after it in its site's session, from the index."""
    found: dict[str, list[Ranked]] = {}
    for seed in seeds:
        session, site = seed.payload.get(SESSION_KEY), seed.payload.get(SITE_KEY)
        if not session or not site:
            continue
        same = SearchFilter(site=str(site), session=str(session))
        points = episodes_only(store.in_time_order(same, limit=MAX_SESSION_SCAN, newest_first=False))
        before, after = window(points, seed.id, HOP_NEIGHBOURS)
        found[seed.id] = [Ranked(p.id, seed.score, None, seed.ts, dict(p.payload)) for p in [*before, *after]]
    return found
