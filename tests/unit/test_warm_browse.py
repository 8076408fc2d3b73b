"""Episodes read without a query (``sync.search.query.browse``): recent activity and one episode with its
session's neighbours, against a real qdrant-edge collection holding passages and near-duplicates as
the indexer writes them; and the requests' wire format."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.search.embedders import bm25
from sync.search.payload import DUPLICATE_KEY, PARENT_KEY, PASSAGE_KEY, SPAN_KEY
from sync.search.query.browse import episode, pick_recent, recent, window
from sync.search.request import EpisodeRequest, EpisodeView, RecentRequest, SearchFilter, SearchResult
from sync.search.stores import EdgeStore, ServerStore, StoredPoint, VectorStore, WarmPoint, passage_id, point_id

DIMS = 8


def _point(site: str, source: str, ts: int, session: str, agent: str, **extra: object) -> WarmPoint:
    dense = [0.0] * DIMS
    dense[int(ts / 1000) % DIMS] = 1.0
    text = f"episode {source} of {session}"
    payload = {"site": site, "sourceId": source, "ts": ts, "session": session, "agent": agent, "text": text}
    return WarmPoint(point_id(site, source), dense, bm25.embed_document(text), payload | extra)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EdgeStore]:
    s = EdgeStore(tmp_path / "warm")
    s.open_or_create("browse", "test-model", DIMS)
    points = [
        _point("laptop", "1", 1_000, "s1", "coder", tags=["project:memsync"]),
        _point("laptop", "2", 2_000, "s1", "coder"),
        _point("laptop", "3", 3_000, "s1", "coder", passages=2, span=[0, 10]),
        _point("vm", "1", 3_500, "s1", "ops"),  # the same session id on another site: another session
        _point("laptop", "4", 4_000, "s2", "tester"),
        _point("laptop", "5", 5_000, "s1", "coder"),
        # A retry of episode 5, linked to it by the indexer: recent shows one, counting the other.
        _point("laptop", "6", 6_000, "s1", "coder", **{DUPLICATE_KEY: point_id("laptop", "5")}),
        _point("laptop", "7", 7_000, "s1", "coder", tags=["project:memsync"]),
    ]
    head = point_id("laptop", "3")
    second = WarmPoint(
        passage_id("laptop", "3", 1),
        points[2].dense,
        points[2].sparse,
        {**points[2].payload, PARENT_KEY: head, PASSAGE_KEY: 1, SPAN_KEY: [10, 20]},
    )
    s.upsert([*points, second])
    yield s
    s.close()


def _ids(results: list[SearchResult]) -> list[str]:
    return [f"{r.site}#{r.source_id}" for r in results]


def test_recent_is_newest_first_episodes_only_repeats_folded(store: EdgeStore) -> None:
    found = recent(store, RecentRequest(limit=5))
    assert _ids(found) == ["laptop#7", "laptop#6", "laptop#4", "vm#1", "laptop#3"]
    assert found[1].duplicates == 1, "episode 5 is folded into its newer retry 6"
    assert found[0].score == 0.0
    assert found[0].similarity is None
    assert found[0].when is not None
    assert found[0].tags == ["project:memsync"]


def test_recent_filters_like_search(store: EdgeStore) -> None:
    assert _ids(recent(store, RecentRequest(limit=10, filter=SearchFilter(agent="coder", since_ms=2_500)))) == [
        "laptop#7",
        "laptop#6",
        "laptop#3",
    ]
    assert _ids(recent(store, RecentRequest(limit=10, filter=SearchFilter(site="vm")))) == ["vm#1"]
    tagged = recent(store, RecentRequest(limit=10, filter=SearchFilter(tags=("project:memsync",))))
    assert _ids(tagged) == ["laptop#7", "laptop#1"]
    assert recent(store, RecentRequest(limit=3, filter=SearchFilter(agent="nobody"))) == []


def test_recent_reads_further_when_passages_and_repeats_fill_the_first_look() -> None:
    # Pure: a look of 4 points holding 2 episodes would be short of 3; pick_recent says so.
    points = [
        StoredPoint("a", {"ts": 4}),
        StoredPoint("a2", {"ts": 4, PARENT_KEY: "a"}),
        StoredPoint("b", {"ts": 3, DUPLICATE_KEY: "a"}),
        StoredPoint("c", {"ts": 2}),
    ]
    assert [r.id for r in pick_recent(points, 3)] == ["a", "c"]


def test_episode_by_id_or_by_site_and_source_id_with_its_session_neighbours(store: EdgeStore) -> None:
    view = episode(store, EpisodeRequest(site="laptop", source_id="3", neighbours=2))
    assert view.episode is not None
    assert _ids([view.episode]) == ["laptop#3"]
    assert _ids(view.before) == ["laptop#1", "laptop#2"], "time order, same site's session only"
    assert _ids(view.after) == ["laptop#5", "laptop#6"]
    by_id = episode(store, EpisodeRequest(id=point_id("laptop", "3"), neighbours=1))
    assert (_ids(by_id.before), _ids(by_id.after)) == (["laptop#2"], ["laptop#5"])
    # A further passage's id (a search hit's) leads to its episode.
    via_passage = episode(store, EpisodeRequest(id=passage_id("laptop", "3", 1), neighbours=0))
    assert via_passage.episode is not None
    assert via_passage.episode.id == point_id("laptop", "3")
    assert (via_passage.before, via_passage.after) == ([], [])
    assert episode(store, EpisodeRequest(site="laptop", source_id="404")).episode is None


SEED_POINT = "0b6c1f4e-2d3a-4c5b-8e9f-a1b2c3d4e5f6"  # the point the seed design's action wrote


@pytest.mark.parametrize("engine", ["edge", "server"])
def test_an_adopted_episode_is_found_by_its_key_under_its_seed_point(tmp_path: Path, engine: str) -> None:
    """``memsync adopt`` keeps an episode's seed point: the index writes it under the seed's id
    (``head_id``), so get_episode by site:sourceId (what ``memsync search`` shows) must find it there."""
    s: VectorStore = EdgeStore(tmp_path / "warm") if engine == "edge" else ServerStore(location=":memory:")
    s.open_or_create("browse", "test-model", DIMS)
    before = _point("laptop", "7", 1_000, "s1", "coder")
    adopted = _point("laptop", "8", 2_000, "s1", "coder", passages=2, span=[0, 10])
    after = _point("laptop", "9", 3_000, "s1", "coder")
    passage = WarmPoint(
        passage_id("laptop", "8", 1),
        adopted.dense,
        adopted.sparse,
        {**adopted.payload, PARENT_KEY: SEED_POINT, PASSAGE_KEY: 1, SPAN_KEY: [10, 20]},
    )
    s.upsert([before, WarmPoint(SEED_POINT, adopted.dense, adopted.sparse, adopted.payload), passage, after])
    try:
        for request in (
            EpisodeRequest(site="laptop", source_id="8", neighbours=1),
            EpisodeRequest(id=SEED_POINT, neighbours=1),  # a search hit's pointId
            EpisodeRequest(id=passage_id("laptop", "8", 1), neighbours=1),  # a hit on its second passage
        ):
            view = episode(s, request)
            assert view.episode is not None
            assert view.episode.id == SEED_POINT
            assert _ids([view.episode]) == ["laptop#8"]
            assert (_ids(view.before), _ids(view.after)) == (["laptop#7"], ["laptop#9"])
        assert episode(s, EpisodeRequest(site="laptop", source_id="80")).episode is None
        assert episode(s, EpisodeRequest(site="vm", source_id="8")).episode is None
    finally:
        s.close()


def test_window_at_the_edges() -> None:
    session = [StoredPoint(x, {}) for x in "abcde"]
    assert [[p.id for p in side] for side in window(session, "a", 2)] == [[], ["b", "c"]]
    assert [[p.id for p in side] for side in window(session, "e", 9)] == [["a", "b", "c", "d"], []]
    assert window(session, "zz", 2) == ([], [])


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        ({"limit": 0}, "limit must be 1..100"),
        ({"limit": "many"}, "malformed recent request"),
        ({"limit": 5, "filter": {"since_ms": "yesterday"}}, "malformed recent request"),
    ],
)
def test_bad_recent_requests_say_what_is_wrong(wire: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        RecentRequest.from_wire(wire)


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        ({}, "name the episode by its id"),
        ({"id": "x", "site": "laptop", "sourceId": "1"}, "not both"),
        ({"site": "laptop"}, "name the episode by its id"),
        ({"id": "x", "neighbours": 99}, "neighbours must be 0..20"),
    ],
)
def test_bad_episode_requests_say_what_is_wrong(wire: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        EpisodeRequest.from_wire(wire)


def test_the_wire_round_trips(store: EdgeStore) -> None:
    request = RecentRequest(limit=7, filter=SearchFilter(agent="coder", tags=("a", "b"), since_ms=5))
    assert RecentRequest.from_wire(request.to_wire()) == request
    asked = EpisodeRequest(site="laptop", source_id="3", neighbours=1)
    assert EpisodeRequest.from_wire(asked.to_wire()) == asked
    view = episode(store, asked)
    assert EpisodeView.from_wire(view.to_wire()) == view
    assert set(view.to_wire()["episode"]) >= {"pointId", "sourceSite", "sourceId", "agentName", "sessionId", "when"}


def test_a_daemon_older_than_the_ops_means_nothing_to_show_not_a_failure(short_dir: Path) -> None:
    from daemon.control.client import ask_episode, ask_recent
    from daemon.control.server import ControlServer, listen
    from sync.errors import ControlError

    path = short_dir / "old.sock"
    # What a daemon from before these ops serves: search and nothing of browse.
    server = ControlServer(listen(path), {"search": lambda _request, _progress: []}).start()
    try:
        assert ask_recent(path, RecentRequest(limit=3)) == []
        assert ask_episode(path, EpisodeRequest(id="x")) == EpisodeView(None)
    finally:
        server.close()

    # A daemon that knows the op and refuses the request still says why.
    def refuse(_request: object, _progress: object) -> object:
        raise ValueError("limit must be 1..100")

    server = ControlServer(listen(path), {"recent": refuse}).start()
    try:
        with pytest.raises(ControlError, match="limit must be"):
            ask_recent(path, RecentRequest(limit=3))
    finally:
        server.close()
