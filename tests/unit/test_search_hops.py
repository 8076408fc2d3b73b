"""One hop from the best hits (``sync.search.query.hops``): where the neighbours go, from a table,
and the session neighbours read from a real store."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from sync.search.embedders import bm25
from sync.search.query.hops import follow_one_hop, session_neighbours
from sync.search.query.ranking.rank import Ranked
from sync.search.request import SearchRequest
from sync.search.stores import EdgeStore, WarmPoint


def r(pid: str, score: float = 1.0) -> Ranked:
    return Ranked(pid, score, 0.5, None, {})


@pytest.mark.parametrize(
    ("ranked", "neighbours", "seeds", "order"),
    [
        ("abcd", {"a": "x"}, 1, "axbcd"),  # a neighbour right after its seed
        ("abcd", {"a": "c"}, 1, "acbd"),  # one ranked lower moves up
        ("abcd", {"b": "a"}, 2, "abcd"),  # one ranked higher stays
        ("abcd", {"a": "b", "b": "y"}, 2, "abycd"),  # a seed stays a seed, and its own neighbours follow
        ("abcd", {"c": "x"}, 2, "abcd"),  # only the seeds are followed
        ("ab", {"a": "xy", "b": "x"}, 2, "axyb"),  # each episode once
        ("", {}, 3, ""),
    ],
)
def test_where_the_neighbours_go(ranked: str, neighbours: dict[str, str], seeds: int, order: str) -> None:
    scores = {pid: 10.0 - i for i, pid in enumerate(ranked)}
    given = {seed: [r(n, 0.0) for n in ns] for seed, ns in neighbours.items()}
    out = follow_one_hop([r(p, scores[p]) for p in ranked], given, seeds)
    assert "".join(x.id for x in out) == order
    for x in out:
        if x.id not in ranked[:seeds] and any(x.id in ns for ns in neighbours.values()):
            assert x.similarity is None  # the query never matched it


def test_a_seed_s_session_neighbours_come_from_the_index(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path / "qdrant")
    try:
        store.open_or_create("c", "m", 2)
        points = [
            WarmPoint(
                str(uuid.UUID(int=i + 1)),
                [1.0, float(i)],
                bm25.embed_document(f"t{i}"),
                {"site": "a", "session": s, "ts": ts},
            )
            for i, (s, ts) in enumerate([("s1", 10), ("s1", 20), ("s1", 30), ("s2", 25), ("s1", 40)])
        ]
        store.upsert(points)
        seed = Ranked(points[2].id, 3.0, 0.9, 30, dict(points[2].payload))
        found = session_neighbours(store, [seed, Ranked("x", 1.0, None, None, {})])
        assert [n.id for n in found[seed.id]] == [points[1].id, points[4].id]
        assert all(n.score == 3.0 for n in found[seed.id])
        assert "x" not in found
    finally:
        store.close()


def test_the_option_travels_on_the_wire_and_is_off_by_default() -> None:
    assert SearchRequest("q").follow is False
    assert SearchRequest.from_wire(SearchRequest("q", follow=True).to_wire()).follow is True
    assert SearchRequest.from_wire({"query": "q"}).follow is False
