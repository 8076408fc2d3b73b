"""The VectorStore contract, run against both implementations: EdgeStore (the real engine in-process)
and ServerStore on qdrant-client's local mode (the stand-in for a Qdrant server or Qdrant Cloud)."""

from __future__ import annotations

import math
import re
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from qdrant_client import QdrantClient

from sync.errors import (
    CollectionMismatch,
    ConfigError,
    PermanentError,
    StoreLocked,
    StoreRejected,
    StoreUnavailable,
    TransientError,
)
from sync.search.embedders import bm25
from sync.search.query.pipeline import hybrid
from sync.search.query.ranking.fusion import DENSE_WEIGHT_FULL_MATCH
from sync.search.stores import EdgeStore, Hit, SearchFilter, ServerStore, VectorStore, WarmPoint, point_id

DIMS = 8
# EdgeStore keeps dense vectors as float16 (half the memory, a faster scan): a cosine is good to
# about 1e-4. The server path computes in float32.
COSINE_TOLERANCE = 1e-3
COLLECTION = "agent_memory_hybrid"
MODEL = "local-minilm"

Factory = Callable[[], VectorStore]


def unit(*components: float) -> list[float]:
    """A deterministic dense vector: the given leading components, zero-padded to DIMS."""
    vec = [*components, *([0.0] * (DIMS - len(components)))]
    return vec


def axis(i: int) -> list[float]:
    vec = [0.0] * DIMS
    vec[i % DIMS] = 1.0
    return vec


EPISODES = [
    # (source id, text, dense, payload extras)
    ("1", "getUserById returned null for a deleted account", axis(0), {"agent": "coder", "tags": ["bug"]}),
    ("2", "connection dropped with ERR_CONN_RESET during upload", axis(1), {"agent": "ops", "tags": ["net", "bug"]}),
    ("3", "JIRA-4821: migrate the billing cron to the new scheduler", axis(2), {"agent": "coder", "tags": ["plan"]}),
    ("4", "wrote unit tests for the payment retry policy", axis(3), {"agent": "tester", "tags": []}),
    ("5", "deploy failed with error E1234 on step 7", axis(4), {"agent": "ops", "tags": ["deploy"]}),
]


def make_points(site: str = "site-a", session: str = "s1", ts0: int = 1_000) -> list[WarmPoint]:
    return [
        WarmPoint(
            id=point_id(site, source_id),
            dense=dense,
            sparse=bm25.embed_document(text),
            payload={
                "site": site,
                "session": session,
                "ts": ts0 + n * 1_000,
                "reward": 0.5,
                "success": True,
                "contentHash": f"h{source_id}",
                "text": text,
                "sourceId": source_id,
                **extra,
            },
        )
        for n, (source_id, text, dense, extra) in enumerate(EPISODES)
    ]


@pytest.fixture(params=["edge", "server"])
def factory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Factory]:
    """Makes stores of one kind that share backing storage (a folder, or one in-memory client)."""
    opened: list[VectorStore] = []
    if request.param == "edge":

        def make() -> VectorStore:
            store = EdgeStore(tmp_path / "warm")
            opened.append(store)
            return store

    else:
        # One local-mode client per test, shared by every store made, as two processes share a server.
        shared = QdrantClient(location=":memory:")

        def make() -> VectorStore:
            store = ServerStore(client=shared)
            opened.append(store)
            return store

    yield make
    for store in opened:
        store.close()
    if request.param == "server":
        shared.close()


@pytest.fixture
def store(factory: Factory) -> VectorStore:
    s = factory()
    s.open_or_create(COLLECTION, MODEL, DIMS)
    s.upsert(make_points())
    return s


def source_ids(hits: Sequence[Hit]) -> list[str]:
    return [str(h.payload["sourceId"]) for h in hits]


def test_point_id_is_a_deterministic_uuid5_of_site_and_source_id() -> None:
    assert point_id("site-a", "22") == point_id("site-a", "22")
    assert uuid.UUID(point_id("site-a", "22")).version == 5
    assert point_id("site-a", "22") != point_id("site-b", "22")
    assert point_id("a:b", "c") != point_id("a", "b:c")
    # Golden value: a changed namespace or framing would orphan every indexed point.
    assert point_id("site-a", "22") == "a1b9385f-a254-5db7-9c5a-273e4e3554b0"


def test_count_get_and_idempotent_upsert(store: VectorStore) -> None:
    assert store.count() == 5
    store.upsert(make_points())  # same ids again: replaced, not duplicated
    assert store.count() == 5
    pid = point_id("site-a", "3")
    [got] = store.get([pid, point_id("site-a", "missing")], with_vectors=True)
    assert got.id == pid
    assert got.payload["text"].startswith("JIRA-4821")
    assert got.dense is not None
    assert got.dense == pytest.approx(axis(2))
    expected = bm25.embed_document(EPISODES[2][1])
    assert got.sparse is not None
    assert got.sparse.indices == expected.indices
    assert got.sparse.values == pytest.approx(expected.values, abs=1e-6)  # stored as float32
    [bare] = store.get([pid])
    assert bare.dense is None


def test_overwrite_payloads_keeps_vectors_and_skips_missing_points(store: VectorStore) -> None:
    pid = point_id("site-a", "2")
    [before] = store.get([pid], with_vectors=True)
    store.overwrite_payloads([(pid, {"site": "site-b", "tags": ["x"]}), (point_id("site-a", "missing"), {"a": 1})])
    [got] = store.get([pid], with_vectors=True)
    assert got.payload == {"site": "site-b", "tags": ["x"]}  # replaced whole, not merged
    assert got.dense == before.dense
    assert got.sparse == before.sparse
    assert store.count() == 5  # the missing id was not created
    assert store.count(SearchFilter(site="site-b")) == 1  # the indexed fields follow the new payload


def test_edit_replaces_payload_and_vectors(store: VectorStore) -> None:
    pid = point_id("site-a", "1")
    store.upsert([WarmPoint(pid, axis(7), bm25.embed_document("edited text"), {"site": "site-a", "ts": 1})])
    [got] = store.get([pid], with_vectors=True)
    assert got.payload == {"site": "site-a", "ts": 1}
    assert got.dense == pytest.approx(axis(7))
    assert store.count() == 5


def test_delete(store: VectorStore) -> None:
    store.delete([point_id("site-a", "1"), point_id("site-a", "2")])
    store.delete([point_id("site-a", "never-there")])
    assert store.count() == 3
    assert store.get([point_id("site-a", "1")]) == []


@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (SearchFilter(agent="coder"), {"1", "3"}),
        (SearchFilter(tags=("net", "deploy")), {"2", "5"}),
        (SearchFilter(tags=("bug",), agent="ops"), {"2"}),
        (SearchFilter(since_ms=3_000), {"3", "4", "5"}),
        (SearchFilter(site="site-a", session="s1"), {"1", "2", "3", "4", "5"}),
        (SearchFilter(site="site-b"), set()),
    ],
)
def test_filters_apply_to_count_and_every_search(store: VectorStore, flt: SearchFilter, expected: set[str]) -> None:
    assert store.count(flt) == len(expected)
    query = [1.0] * DIMS
    assert set(source_ids(store.dense_search(query, limit=10, filter=flt))) == expected
    found = store.prefetch(query, bm25.embed_query("error deploy JIRA-4821"), limit=10, filter=flt)
    ids = {point_id("site-a", i): i for i in expected}
    assert {s.id for s in found.dense} == set(ids)
    assert {s.id for s in found.sparse} <= set(ids)
    assert set(source_ids(hybrid(store, query, bm25.embed_query("error deploy JIRA-4821"), 10, flt))) == expected
    # A BM25 search only returns points sharing a term: this query has one term from every episode.
    every = bm25.embed_query("getUserById upload JIRA-4821 payment E1234")
    assert set(source_ids(store.sparse_search(every, limit=10, filter=flt))) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [("getUserById", "1"), ("ERR_CONN_RESET", "2"), ("JIRA-4821", "3"), ("E1234", "5")],
)
def test_exact_identifier_wins_through_bm25_when_dense_is_uninformative(
    store: VectorStore, query: str, expected: str
) -> None:
    # The same dense similarity to every episode: only the sparse prefetch can tell them apart.
    flat = [1.0] * DIMS
    hits = hybrid(store, flat, bm25.embed_query(query), 3)
    assert source_ids(hits)[0] == expected
    assert hits[0].score > hits[1].score


@pytest.mark.parametrize(
    ("query", "expected"),
    [("getUserById", "1"), ("ERR_CONN_RESET", "2"), ("jira-4821", "3"), ("E1234", "5"), ("step 7", "5")],
)
def test_sparse_search_finds_exactly_the_episode_carrying_the_token(
    store: VectorStore, query: str, expected: str
) -> None:
    hits = store.sparse_search(bm25.embed_query(query), limit=10)
    assert source_ids(hits) == [expected]


def test_sparse_search_scores_are_bm25_with_the_collection_idf(store: VectorStore) -> None:
    # "retry" and "payment" are both in episode 4, "deploy" in episode 5; no other episode has any.
    hits = store.sparse_search(bm25.embed_query("Deploy the payment retry"), limit=10)
    assert source_ids(hits) == ["4", "5"]
    # Qdrant's IDF for a term in n of N points: ln(1 + (N - n + 0.5) / (n + 0.5)); here n=1, N=5.
    idf = math.log(1.0 + (5 - 1 + 0.5) / (1 + 0.5))

    def weight(text: str, token: str) -> float:
        doc = bm25.embed_document(text)
        return doc.values[doc.indices.index(bm25.token_id(token))]

    payment, retry = weight(EPISODES[3][1], "payment"), weight(EPISODES[3][1], "retri")
    deploy = weight(EPISODES[4][1], "deploy")
    assert hits[0].score == pytest.approx(idf * (payment + retry), rel=1e-5)
    assert hits[1].score == pytest.approx(idf * deploy, rel=1e-5)
    assert all(h.similarity is None for h in hits)  # no dense query to compare with
    assert hits[0].payload["sourceId"] == "4"
    assert hits[0].id == point_id("site-a", "4")


def test_sparse_search_without_payloads_gives_the_same_ids_and_scores(store: VectorStore) -> None:
    query = bm25.embed_query("getUserById upload JIRA-4821 payment E1234 failed")
    whole = store.sparse_search(query, limit=10)
    bare = store.sparse_search(query, limit=10, with_payload=False)
    assert len(whole) > 1
    assert [(h.id, h.score) for h in bare] == [(h.id, h.score) for h in whole]
    assert all(h.payload == {} for h in bare)
    assert all(h.payload for h in whole)


def test_sparse_search_skips_the_first_offset_hits(store: VectorStore) -> None:
    """``offset=n-1, limit=1``: the n-th hit alone, or nothing when fewer hold the terms (how
    presence asks whether a term is common without reading every holder)."""
    query = bm25.embed_query("getUserById upload JIRA-4821 payment E1234 failed")
    whole = store.sparse_search(query, limit=10, with_payload=False)
    assert len(whole) >= 3
    for offset in range(len(whole) + 2):
        skipped = store.sparse_search(query, limit=1, with_payload=False, offset=offset)
        # Equal scores may come in either order: the place is held by the score.
        assert [h.score for h in skipped] == [h.score for h in whole[offset : offset + 1]], offset


def test_sparse_search_respects_the_limit_best_first(store: VectorStore) -> None:
    every = bm25.embed_query("getUserById upload JIRA-4821 payment E1234 failed")
    hits = store.sparse_search(every, limit=2)
    assert len(hits) == 2
    assert source_ids(hits)[0] == "5"  # the only episode matching two terms (E1234, failed)


@pytest.mark.parametrize("query", ["", "the and of", "kubernetes"])
def test_sparse_search_without_a_shared_term_finds_nothing(store: VectorStore, query: str) -> None:
    assert store.sparse_search(bm25.embed_query(query), limit=10) == []


def test_prefetch_returns_the_dense_and_the_bm25_list(store: VectorStore) -> None:
    query = unit(1.0, 0.2)  # closest to episode 1 densely, then episode 2
    found = store.prefetch(query, bm25.embed_query("getUserById upload"), limit=2)
    one, two = point_id("site-a", "1"), point_id("site-a", "2")
    assert [s.id for s in found.dense] == [one, two]  # the rest are level at cosine 0
    norm = math.sqrt(1.0 + 0.2**2)
    assert [s.score for s in found.dense] == pytest.approx([1.0 / norm, 0.2 / norm], abs=COSINE_TOLERANCE)
    assert sorted(s.id for s in found.sparse) == sorted([one, two])  # only episodes sharing a term
    assert all(s.score > 0 for s in found.sparse)


def test_score_reads_the_given_points_with_their_cosine(store: VectorStore) -> None:
    query = unit(1.0, 0.2)
    ids = [point_id("site-a", "5"), point_id("site-a", "2"), point_id("site-a", "1"), point_id("site-a", "gone")]
    hits = store.score(query, ids)
    assert source_ids(hits) == ["1", "2", "5"]  # best first; the missing point left out
    norm = math.sqrt(1.0 + 0.2**2)
    assert [h.score for h in hits] == pytest.approx([1.0 / norm, 0.2 / norm, 0.0], abs=COSINE_TOLERANCE)
    assert all(h.similarity == h.score for h in hits)
    assert hits[0].payload["text"].startswith("getUserById")
    assert store.score(query, []) == []


def test_hybrid_gives_a_bm25_only_hit_its_similarity(store: VectorStore) -> None:
    """A point only the BM25 list holds (beyond the dense prefetch's depth) still gets the cosine the
    recency decay is gated by, and its payload."""
    crowd = [
        WarmPoint(point_id("site-a", f"c{n}"), unit(1.0, 0.01 * n), bm25.embed_document(f"routine note {n}"), {})
        for n in range(60)
    ] + [
        WarmPoint(
            point_id("site-a", "far"),
            unit(-0.3, 0.0, 0.0, 0.0, 0.0, 1.0),
            bm25.embed_document("XQ-77"),
            {"sourceId": "far"},
        )
    ]
    store.upsert(crowd)
    query = axis(0)
    assert point_id("site-a", "far") not in {s.id for s in store.prefetch(query, bm25.embed_query("XQ-77")).dense}
    learned = hybrid(store, query, bm25.embed_query("XQ-77"), 100)  # the default ranking reads it too
    [far] = [h for h in learned if h.id == point_id("site-a", "far")]
    assert far.similarity == pytest.approx(-0.3 / math.sqrt(1.09), abs=COSINE_TOLERANCE)
    assert far.payload == {"sourceId": "far"}
    hits = hybrid(store, query, bm25.embed_query("XQ-77"), 100, fusion="relative")
    [far] = [h for h in hits if h.id == point_id("site-a", "far")]
    assert far.similarity == pytest.approx(-0.3 / math.sqrt(1.09), abs=COSINE_TOLERANCE)
    assert far.payload == {"sourceId": "far"}
    # Relative fusion: first in BM25's best HEAD (tier one, lifted by 1), absent from dense's; it
    # holds every term of the query, so the dense list weighs DENSE_WEIGHT_FULL_MATCH.
    assert far.score == pytest.approx(1.0 + (1.0 - DENSE_WEIGHT_FULL_MATCH))
    assert all(h.similarity is not None for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def test_dense_search_threshold_for_near_duplicates(store: VectorStore) -> None:
    hits = store.dense_search(unit(0.0, 0.0, 1.0, 0.1), limit=5, score_threshold=0.95)
    assert source_ids(hits) == ["3"]
    assert hits[0].score == pytest.approx(1.0 / math.sqrt(1.01), abs=COSINE_TOLERANCE)
    assert hits[0].similarity == hits[0].score
    assert store.dense_search(unit(0.0, 0.0, 1.0, 1.0), limit=5, score_threshold=0.95) == []


def test_empty_text_point_and_query_are_accepted(store: VectorStore) -> None:
    pid = point_id("site-a", "empty")
    store.upsert([WarmPoint(pid, axis(5), bm25.embed_document(""), {"site": "site-a", "sourceId": "empty"})])
    hits = hybrid(store, axis(5), bm25.embed_query(""), 1)
    assert source_ids(hits) == ["empty"]


def test_wrong_vector_size_is_rejected(store: VectorStore) -> None:
    with pytest.raises(StoreRejected, match="7 dims"):
        store.upsert([WarmPoint(point_id("x", "1"), [1.0] * 7, bm25.embed_document("x"), {})])
    with pytest.raises(StoreRejected, match="9 dims"):
        store.dense_search([1.0] * 9)


def test_use_before_open_is_rejected(factory: Factory) -> None:
    with pytest.raises(StoreRejected, match="open_or_create"):
        factory().count()
    with pytest.raises(StoreRejected, match="open_or_create"):
        factory().sparse_search(bm25.embed_query("E1234"))


def test_reopen_with_same_spec_keeps_points(factory: Factory) -> None:
    first = factory()
    first.open_or_create(COLLECTION, MODEL, DIMS)
    first.upsert(make_points())
    first.close()
    second = factory()
    spec = second.open_or_create(COLLECTION, MODEL, DIMS)
    assert (spec.model_name, spec.dims, spec.bm25) == (MODEL, DIMS, bm25.Bm25Config())
    assert second.count() == 5
    assert source_ids(hybrid(second, [1.0] * DIMS, bm25.embed_query("E1234"), 1)) == ["5"]


@pytest.mark.parametrize(
    ("model", "dims", "config", "message"),
    [
        (
            "gemini-embedding-001",
            768,
            bm25.Bm25Config(),
            f"collection {COLLECTION} was built with model local-minilm (8 dims); this site is configured for "
            "gemini-embedding-001 (768 dims): run `memsync reindex`",
        ),
        (
            MODEL,
            16,
            bm25.Bm25Config(),
            "model local-minilm (8 dims); this site is configured for local-minilm (16 dims)",
        ),
        (MODEL, DIMS, bm25.Bm25Config(k=1.5), f"collection {COLLECTION} was built with BM25 settings"),
    ],
)
def test_model_guard_refuses_another_model_dims_or_bm25(
    factory: Factory, model: str, dims: int, config: bm25.Bm25Config, message: str
) -> None:
    first = factory()
    first.open_or_create(COLLECTION, MODEL, DIMS)
    first.upsert(make_points())
    first.close()
    with pytest.raises(CollectionMismatch, match=re.escape(message)) as info:
        factory().open_or_create(COLLECTION, model, dims, config)
    assert isinstance(info.value, ConfigError)
    again = factory()
    again.open_or_create(COLLECTION, MODEL, DIMS)  # the original spec still opens, data intact
    assert again.count() == 5


def test_a_different_collection_name_can_hold_another_model(factory: Factory) -> None:
    factory().open_or_create(COLLECTION, MODEL, DIMS)
    other = factory()
    spec = other.open_or_create(f"{COLLECTION}_v2", "gemini-embedding-001", 16)
    assert spec.dims == 16
    assert other.count() == 0


def test_invalid_collection_name_is_a_config_error(factory: Factory) -> None:
    with pytest.raises(ConfigError, match="invalid collection name"):
        factory().open_or_create("../escape", MODEL, DIMS)


# --- EdgeStore only: the embedded store lives on disk and has one owner ------------------------


def test_edge_store_persists_across_reopen(tmp_path: Path) -> None:
    with EdgeStore(tmp_path) as first:
        first.open_or_create(COLLECTION, MODEL, DIMS)
        first.upsert(make_points())
    record = tmp_path / COLLECTION / EdgeStore.RECORD_FILE
    assert record.exists()
    with EdgeStore(tmp_path) as second:
        second.open_or_create(COLLECTION, MODEL, DIMS)
        assert second.count() == 5
        assert second.count(SearchFilter(tags=("bug",))) == 2
        assert source_ids(hybrid(second, axis(1), bm25.embed_query("ERR_CONN_RESET"), 1)) == ["2"]


def test_a_collection_built_before_a_field_was_indexed_gets_its_index_when_opened(tmp_path: Path) -> None:
    """Every default search leaves out what a dream hid: a collection built before the dream's mark
    was indexed read each candidate's payload for it (half a second a search at 100,000 points)."""
    import qdrant_edge as qe

    from sync.search.payload import DREAM_KEY, STORE_INDEXES

    with EdgeStore(tmp_path) as older:
        older.open_or_create(COLLECTION, MODEL, DIMS)
        older.upsert(make_points())
        shard = older._shard  # as an older memsync left it: the mark not indexed
        shard.update(qe.UpdateOperation.delete_field_index(DREAM_KEY))
        shard.flush()
        assert DREAM_KEY not in shard.info().payload_schema
    with EdgeStore(tmp_path) as opened:
        opened.open_or_create(COLLECTION, MODEL, DIMS)
        assert set(opened._shard.info().payload_schema) == set(STORE_INDEXES)
        assert opened.count() == 5
        assert source_ids(hybrid(opened, axis(1), bm25.embed_query("ERR_CONN_RESET"), 1)) == ["2"]


def test_edge_store_second_opener_is_locked_out_naming_the_path(tmp_path: Path) -> None:
    with EdgeStore(tmp_path) as owner:
        owner.open_or_create(COLLECTION, MODEL, DIMS)
        with pytest.raises(StoreLocked, match=str(tmp_path / COLLECTION / "shard")) as info:
            EdgeStore(tmp_path).open_or_create(COLLECTION, MODEL, DIMS)
        assert isinstance(info.value, TransientError)
        assert info.value.path == tmp_path / COLLECTION / "shard"
        owner.upsert(make_points())  # the owner is unaffected
        assert owner.count() == 5
    with EdgeStore(tmp_path) as later:  # released on close
        later.open_or_create(COLLECTION, MODEL, DIMS)
        assert later.count() == 5


def test_edge_store_refuses_a_shard_with_points_but_no_record(tmp_path: Path) -> None:
    with EdgeStore(tmp_path) as first:
        first.open_or_create(COLLECTION, MODEL, DIMS)
        first.upsert(make_points())
    (tmp_path / COLLECTION / EdgeStore.RECORD_FILE).unlink()
    with pytest.raises(ConfigError, match=r"no memsync-collection\.json"):
        EdgeStore(tmp_path).open_or_create(COLLECTION, MODEL, DIMS)
    with EdgeStore(tmp_path) as again, pytest.raises(ConfigError):  # not StoreLocked: the failed open let go
        again.open_or_create(COLLECTION, MODEL, DIMS)


def test_edge_store_closed_store_is_rejected(tmp_path: Path) -> None:
    store = EdgeStore(tmp_path)
    store.open_or_create(COLLECTION, MODEL, DIMS)
    store.close()
    store.close()  # idempotent
    with pytest.raises(PermanentError):
        store.count()


# --- ServerStore only -------------------------------------------------------------------------


def test_server_store_refuses_a_collection_without_a_record() -> None:
    from qdrant_client import models as qm

    store = ServerStore(location=":memory:")
    store._client.create_collection(
        COLLECTION, vectors_config={"dense": qm.VectorParams(size=DIMS, distance=qm.Distance.COSINE)}
    )
    with pytest.raises(ConfigError, match="no memsync record"):
        store.open_or_create(COLLECTION, MODEL, DIMS)
    store.close()


def test_server_store_records_the_spec_in_collection_metadata() -> None:
    store = ServerStore(location=":memory:")
    store.open_or_create(COLLECTION, MODEL, DIMS)
    metadata = store._client.get_collection(COLLECTION).config.metadata or {}
    assert metadata["memsync"]["model"] == MODEL
    assert metadata["memsync"]["dims"] == DIMS
    assert metadata["memsync"]["bm25"] == bm25.Bm25Config().to_dict()
    store.close()


def test_server_store_needs_exactly_one_location() -> None:
    with pytest.raises(ConfigError):
        ServerStore()
    with pytest.raises(ConfigError):
        ServerStore(url="http://localhost:6333", location=":memory:")


def test_server_store_unreachable_server_is_transient() -> None:
    store = ServerStore(url="http://127.0.0.1:9", timeout=2)  # discard port: nothing listens
    with pytest.raises(TransientError, match="cannot reach Qdrant"):
        store.open_or_create(COLLECTION, MODEL, DIMS)
    store.close()


class _Busy(BaseHTTPRequestHandler):
    """A Qdrant server too busy for anything: 503, and a Retry-After as an HTTP date."""

    def do_GET(self) -> None:
        self._busy()

    def do_POST(self) -> None:
        self._busy()

    def do_PUT(self) -> None:
        self._busy()

    def _busy(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = b'{"status": {"error": "overloaded"}, "time": 0}'
        self.send_response(503)
        self.send_header("Retry-After", "Fri, 15 Jan 2027 08:01:30 GMT")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: object) -> None:
        pass


def test_server_store_counts_a_retry_after_date_from_its_clock() -> None:
    """A busy server's Retry-After date is the seconds from the store's clock (an argument) to it."""
    now = 1_800_000_000.0  # Fri, 15 Jan 2027 08:00:00 GMT
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Busy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    store = ServerStore(url=f"http://127.0.0.1:{server.server_address[1]}", timeout=5, clock=lambda: now)
    try:
        with pytest.raises(StoreUnavailable, match="answered 503") as raised:
            store.open_or_create(COLLECTION, MODEL, DIMS)
        assert raised.value.retry_after == 90.0
    finally:
        store.close()
        server.shutdown()
        server.server_close()
        thread.join()


def test_in_time_order_reads_newest_or_oldest_first_under_a_filter(store: VectorStore) -> None:
    newest = store.in_time_order(limit=3)
    assert [p.payload["sourceId"] for p in newest] == ["5", "4", "3"]
    oldest = store.in_time_order(limit=2, newest_first=False)
    assert [p.payload["sourceId"] for p in oldest] == ["1", "2"]
    coder = store.in_time_order(SearchFilter(agent="coder"), limit=10)
    assert [p.payload["sourceId"] for p in coder] == ["3", "1"]
    assert [p.payload["sourceId"] for p in store.in_time_order(SearchFilter(since_ms=4_000), limit=10)] == ["5", "4"]
    assert newest[0].dense is None, "payloads only"


def test_what_a_dream_step_hides_is_left_out_unless_asked_for(store: VectorStore) -> None:
    """A fold's member and a superseded memory (payload ``dream``) are out of every default search,
    count and listing; ``include_merged`` brings them back; unmarked again, they are back by default."""
    merged, superseded = point_id("site-a", "1"), point_id("site-a", "2")
    [one] = store.get([merged])
    [two] = store.get([superseded])
    store.overwrite_payloads(
        [(merged, dict(one.payload) | {"dream": "merged"}), (superseded, dict(two.payload) | {"dream": "superseded"})]
    )
    query = [1.0] * DIMS
    default, everything = SearchFilter(), SearchFilter(include_merged=True)
    assert set(source_ids(store.dense_search(query, limit=10, filter=default))) == {"3", "4", "5"}
    assert set(source_ids(store.dense_search(query, limit=10, filter=everything))) == {"1", "2", "3", "4", "5"}
    every = bm25.embed_query("getUserById upload JIRA-4821 payment E1234")
    assert set(source_ids(store.sparse_search(every, limit=10, filter=SearchFilter(agent="coder")))) == {"3"}
    assert store.count(default) == 3
    assert store.count(everything) == store.count() == 5  # no filter at all: every point
    assert {str(p.payload["sourceId"]) for p in store.in_time_order(default, limit=10)} == {"3", "4", "5"}
    store.overwrite_payloads([(merged, dict(one.payload))])
    assert store.count(default) == 4


def test_a_result_says_the_dream_hid_it() -> None:
    from sync.search.request import SearchResult

    hidden = SearchResult.from_payload("p", {"site": "a", "sourceId": "1", "text": "t", "dream": "merged"})
    assert hidden.dream == "merged"
    assert SearchResult.from_wire(hidden.to_wire()).dream == "merged"
    assert SearchResult.from_payload("p", {"site": "a", "sourceId": "1", "text": "t"}).dream is None
