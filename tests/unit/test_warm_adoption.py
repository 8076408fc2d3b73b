"""memsync never destroys a collection it did not make (``sync.search.stores.adoption``): which layouts
may be adopted and who made a collection, from tables; then, on qdrant-client's local mode (the
stand-in for a Qdrant server), a seed-shaped collection (named vectors ``dense`` and ``text``, no
memsync record) refused when opened, never dropped whoever asks, adopted when its vectors fit and
then searched and written through its own vector names, and left in place by a rebuild (reindex, and
the purge after a forget) around it."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from conftest import CountingEmbedder
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from sync.backbone.base import Change, PointRecord, PushItem
from sync.backbone.hub import HubBackbone
from sync.episode import canonical_json
from sync.errors import ConfigError, ForeignCollection, NotOurs
from sync.search.collection.cursor import CursorFile
from sync.search.embedders import bm25
from sync.search.embedders.local import LocalEmbedder
from sync.search.indexing.copies import Previous
from sync.search.indexing.indexer import Indexer
from sync.search.indexing.rebuilder import Rebuilder
from sync.search.indexing.text import text_hash
from sync.search.query.pipeline import search
from sync.search.request import SearchFilter, SearchRequest
from sync.search.stores import ServerStore, VectorStore, WarmPoint, point_id
from sync.search.stores.adoption import DenseVector, Layout, Origin, Verdict, foreign_refusal, judge, may_drop, origin

DIMS = 8
MODEL = "gemini/gemini-embedding-001"
SEED = "agent_memory_hybrid"
FULL_PAYLOAD = frozenset({"site", "agent", "session", "tags", "contentHash", "ts", "reward", "success", "text"})

# --- which layouts are adopted: the table ----------------------------------------------------------

COS = DenseVector(DIMS, "cosine")
JUDGED = [
    pytest.param(
        Layout({"dense": COS}, {"text": True}, payload_keys=FULL_PAYLOAD, sampled=3),
        Verdict("dense", "text", (), ()),
        id="the seed's layout: dense + text (IDF)",
    ),
    pytest.param(
        Layout({"dense": COS}, {"bm25": True}), Verdict("dense", "bm25", (), ()), id="memsync's own names, no points"
    ),
    pytest.param(
        Layout({"emb": COS}, {"words": True}), Verdict("emb", "words", (), ()), id="any names when there is one of each"
    ),
    pytest.param(
        Layout({"dense": COS, "other": COS}, {"text": True, "bm25": True}),
        Verdict("dense", "bm25", (), ()),
        id="several fit: memsync's names first",
    ),
    pytest.param(
        Layout({"dense": COS}, {"text": True, "title": True}),
        Verdict("dense", "text", (), ()),
        id="several sparse: the seed's name breaks the tie",
    ),
    pytest.param(
        Layout({"a": COS, "b": COS}, {"text": True}),
        Verdict(None, None, ("several dense vectors fit (a, b) and none is named 'dense'",), ()),
        id="ambiguous dense",
    ),
    pytest.param(
        Layout({"dense": DenseVector(768, "cosine")}, {"text": True}),
        Verdict(
            None, None, ("no named dense vector of 8 dims with cosine distance (it has: 'dense' 768 dims cosine)",), ()
        ),
        id="another model's size",
    ),
    pytest.param(
        Layout({"dense": DenseVector(DIMS, "dot")}, {"text": True}),
        Verdict(None, None, ("no named dense vector of 8 dims with cosine distance (it has: 'dense' 8 dims dot)",), ()),
        id="another distance",
    ),
    pytest.param(
        Layout({"dense": COS}, {"text": False}),
        Verdict(None, None, ("no named sparse vector with the IDF modifier for BM25 (it has: 'text')",), ()),
        id="a sparse vector without IDF",
    ),
    pytest.param(
        Layout({"dense": COS}, {}),
        Verdict(None, None, ("no named sparse vector with the IDF modifier for BM25 (it has: none)",), ()),
        id="dense only",
    ),
    pytest.param(
        Layout({}, {"text": True}, unnamed=True),
        Verdict(
            None,
            None,
            (
                "its dense vector has no name (memsync searches a named dense vector beside a named sparse one)",
                "no named dense vector of 8 dims with cosine distance (it has: none)",
            ),
            (),
        ),
        id="an unnamed vector",
    ),
    pytest.param(
        Layout(
            {"dense": COS}, {"text": True}, payload_keys=frozenset({"sourceSite", "sourceId", "text", "ts"}), sampled=2
        ),
        Verdict("dense", "text", (), ("site", "agent", "session", "tags", "contentHash", "reward", "success")),
        id="adoptable; the seed's payload lacks memsync's filter fields",
    ),
]


@pytest.mark.parametrize(("layout", "verdict"), JUDGED)
def test_judge(layout: Layout, verdict: Verdict) -> None:
    assert judge(layout, DIMS) == verdict
    assert verdict.adoptable == (not verdict.problems)


@pytest.mark.parametrize(
    ("metadata", "made_by", "droppable"),
    [
        pytest.param(None, Origin.FOREIGN, False, id="no metadata"),
        pytest.param({"owner": "seed"}, Origin.FOREIGN, False, id="someone else's metadata"),
        pytest.param({"memsync": "yes"}, Origin.FOREIGN, False, id="a record that is no record"),
        pytest.param({"memsync": {"model": "m"}}, Origin.OURS, True, id="memsync made it"),
        pytest.param({"memsync": {"model": "m", "adopted": True}}, Origin.ADOPTED, False, id="adopted"),
    ],
)
def test_who_made_it_and_whether_it_may_go(metadata: dict[str, Any] | None, made_by: Origin, droppable: bool) -> None:
    assert origin(metadata) is made_by
    assert may_drop(made_by) is droppable


def test_the_refusal_offers_both_ways_forward() -> None:
    said = foreign_refusal(SEED, "https://q.example", configured=SEED)
    assert f"set warm.collection to a name of its own (e.g. {SEED}-memsync)" in said
    assert f"`memsync adopt-collection {SEED}`" in said
    assert "never drops, renames or writes it" in said
    elsewhere = foreign_refusal("theirs", "https://q.example", configured=SEED)
    assert "run `memsync reindex`, which builds memsync's own collection beside it" in elsewhere


# --- on the server stand-in -------------------------------------------------------------------------


def seed_collection(client: QdrantClient, name: str = SEED, dims: int = DIMS, points: int = 3) -> None:
    """The seed design's collection: named vectors ``dense`` and ``text`` (BM25 with IDF), no record."""
    client.create_collection(
        name,
        vectors_config={"dense": qm.VectorParams(size=dims, distance=qm.Distance.COSINE)},
        sparse_vectors_config={"text": qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
    )
    client.upsert(
        name,
        [
            qm.PointStruct(
                id=n + 1,
                vector={
                    "dense": [1.0 if i == n else 0.0 for i in range(dims)],
                    "text": qm.SparseVector(indices=[n], values=[1.0]),
                },
                payload={"sourceSite": "laptop", "sourceId": str(n), "text": f"seed episode {n}"},
            )
            for n in range(points)
        ],
        wait=True,
    )


def untouched(client: QdrantClient, name: str = SEED, points: int = 3) -> bool:
    return (
        client.collection_exists(name)
        and client.count(name, exact=True).count == points
        and not (client.get_collection(name).config.metadata or {})
    )


@pytest.fixture
def client() -> Iterator[QdrantClient]:
    shared = QdrantClient(":memory:")
    yield shared
    shared.close()


def test_a_foreign_collection_is_refused_when_opened_and_never_dropped(client: QdrantClient) -> None:
    seed_collection(client)
    store = ServerStore(client=client).configured(SEED)
    with pytest.raises(
        ForeignCollection, match=r"not made by memsync .* `memsync adopt-collection agent_memory_hybrid`"
    ):
        store.open_or_create(SEED, MODEL, DIMS)
    with pytest.raises(NotOurs, match="not made by memsync"):
        store.drop(SEED)  # whoever asks: the store refuses
    other = ServerStore(client=client)
    other.open_or_create("mine", MODEL, DIMS)
    with pytest.raises(NotOurs):
        other.drop(SEED)
    assert untouched(client)
    other.drop("nothing-there")  # a missing one is still nothing to do
    store.close()
    other.close()


def test_a_foreign_collection_that_does_not_fit_is_not_adopted(client: QdrantClient) -> None:
    seed_collection(client, dims=16)
    store = ServerStore(client=client)
    with pytest.raises(ConfigError, match=r"cannot be adopted .* no named dense vector of 8 dims"):
        store.adopt(SEED, MODEL, DIMS)
    assert untouched(client)
    with pytest.raises(ConfigError, match="no collection nowhere"):
        store.adopt("nowhere", MODEL, DIMS)


def test_an_adopted_collection_is_searched_and_written_through_its_own_vectors_and_never_dropped(
    client: QdrantClient,
) -> None:
    seed_collection(client)
    store = ServerStore(client=client)
    verdict = store.adopt(SEED, MODEL, DIMS)
    assert (verdict.dense, verdict.sparse) == ("dense", "text")
    assert "site" in verdict.unmapped
    record = (client.get_collection(SEED).config.metadata or {})["memsync"]
    assert record["adopted"] is True
    assert record["vectors"] == {"dense": "dense", "sparse": "text"}
    with pytest.raises(ConfigError, match="memsync's already"):
        store.adopt(SEED, MODEL, DIMS)

    spec = store.open_or_create(SEED, MODEL, DIMS)
    assert (spec.dense_name, spec.sparse_name, spec.adopted) == ("dense", "text", True)
    dense = [0.0] * DIMS
    dense[5] = 1.0
    text = "restarted the ERR_POOL_9 worker"
    store.upsert([WarmPoint(point_id("vm", "9"), dense, bm25.embed_document(text), {"site": "vm", "text": text})])
    assert store.count() == 4  # the seed's three and memsync's one, side by side
    assert [h.id for h in store.dense_search(dense, limit=1)] == [point_id("vm", "9")]
    assert [h.payload["text"] for h in store.sparse_search(bm25.embed_query("ERR_POOL_9"))] == [text]
    assert [h.payload["sourceId"] for h in store.dense_search([1.0] + [0.0] * (DIMS - 1), limit=1)] == ["0"]
    (got,) = store.get([point_id("vm", "9")], with_vectors=True)
    assert got.dense is not None
    assert got.sparse is not None
    store.close()
    with pytest.raises(NotOurs, match="adopted by memsync"):
        ServerStore(client=client).drop(SEED)
    assert client.collection_exists(SEED)


# --- rebuilds around them: reindex and the purge after a forget --------------------------------------


class Pointer:
    """The edge store's pointer contract (``collections.json``), in memory: one site."""

    drops_at_switch = True

    def building(self, physical: str) -> None:
        pass

    def __init__(self, active: str) -> None:
        self.name, self._active, self.made = active, active, 0

    def active(self) -> str:
        return self._active

    def switch(self, physical: str) -> None:
        self._active = physical

    def fresh(self) -> str:
        self.made += 1
        return f"{self.name}-{self.made}"


def push(hub: HubBackbone, source_id: str, task: str) -> None:
    body = {"sessionId": "s1", "task": task, "output": "done", "ts": 1_790_000_000_000, "agentName": "coder"}
    hub.push(
        [
            PushItem(
                source_id,
                int(source_id),
                f"id-{source_id}",
                text_hash(canonical_json(body).decode()),
                body,
                canonical_json(body),
            )
        ],
        int(source_id),
    )


class Site:
    """One site's indexing parts on the shared client: what the warm layer wires, without its thread."""

    def __init__(self, tmp_path: Any, client: QdrantClient, hub: HubBackbone, embedder: CountingEmbedder) -> None:
        self.client, self.hub, self.embedder = client, hub, embedder
        self.cursors = CursorFile(tmp_path / "indexer.json")
        self.pointer = Pointer(SEED)
        self.store: ServerStore = ServerStore(client=client)
        self.rebuilder: Rebuilder[ServerStore] = Rebuilder(
            self.pointer, self.cursors, lambda: ServerStore(client=client), lambda: False
        )

    def indexer(self, store: VectorStore, collection: str, previous: Previous | None = None) -> Indexer:
        return Indexer(
            backbone=self.hub,
            store=store,
            embedder=self.embedder,
            collection=collection,
            cursor_file=self.cursors,
            previous=previous,
        )

    def rebuild(self, live_spec: Any) -> None:
        def install(fresh: ServerStore, builder: Indexer) -> ServerStore | None:
            live, self.store = self.store, fresh
            return live

        self.rebuilder.rebuild(
            live=self.store if live_spec is not None else None,
            live_spec=live_spec,
            make_indexer=self.indexer,
            install=install,
            progress=None,
            why="test",
        )


@pytest.fixture
def hub(tmp_path: Any) -> Iterator[HubBackbone]:
    backbone = HubBackbone(tmp_path / "hub.db", "laptop")
    yield backbone
    backbone.close()


def test_a_reindex_builds_beside_a_foreign_collection_and_leaves_it(
    tmp_path: Any, client: QdrantClient, hub: HubBackbone, local: LocalEmbedder
) -> None:
    seed_collection(client, dims=local.dims)
    push(hub, "1", "rotate the TLS certificate on the edge proxy")
    site = Site(tmp_path, client, hub, CountingEmbedder(local))
    site.cursors.drop_unless_active(SEED)  # even listed to drop (an older memsync's promise), it stays
    site.rebuild(None)
    assert site.pointer.active() == f"{SEED}-1"
    assert untouched(client)
    assert site.cursors.to_drop() == []
    assert site.store.count() == 1
    site.rebuilder.drop_leftovers(site.store)
    assert untouched(client)


def test_a_purge_after_a_forget_leaves_an_adopted_collection_in_place(
    tmp_path: Any, client: QdrantClient, hub: HubBackbone, local: LocalEmbedder
) -> None:
    seed_collection(client, dims=local.dims)
    ServerStore(client=client).adopt(SEED, local.name, local.dims)
    push(hub, "1", "rotate the TLS certificate on the edge proxy")
    push(hub, "2", "open the vault with the combination 8812")
    site = Site(tmp_path, client, hub, CountingEmbedder(local))
    indexer = site.indexer(site.store, SEED)
    spec = indexer.open()
    indexer.run()
    assert client.count(SEED, exact=True).count == 5
    hub.forget("2")
    indexer.run()
    assert site.cursors.purge_owed(SEED)
    site.rebuild(spec)  # the purge: memsync's own collection, built without the forgotten episode
    assert site.pointer.active() == f"{SEED}-1"
    assert client.collection_exists(SEED)  # adopted: left in place, not dropped
    assert client.count(SEED, exact=True).count == 4
    assert not site.cursors.purge_owed(SEED)
    assert site.cursors.to_drop() == []
    assert site.store.count() == 1
    assert len(site.embedder.documents) == 2  # the rebuild copied the kept episode's vectors


# --- the first pass over an adopted collection embeds nothing it already has ------------------------


class AdoptedFeed:
    """The hub's change feed as Convex's reads after `memsync adopt` (``sync.backbone.convex.memory.feed``):
    an adopted episode names its seed point (``seedPointId``), and, while its content is the one
    the seed embedded, carries that point as its recorded ``qdrantPointId``; one edited since has
    none recorded."""

    def __init__(self, hub: HubBackbone, seeds: dict[str, str], edited: set[str]) -> None:
        self.hub, self.seeds, self.edited = hub, seeds, edited

    def changes(self, after: int, limit: int) -> list[Change]:
        out = []
        for c in self.hub.changes(after, limit):
            seed = self.seeds.get(c.source_id)
            recorded = c.point_id or (seed if c.source_id not in self.edited else None)
            out.append(dataclasses.replace(c, seed_point_id=seed, point_id=recorded))
        return out

    def feed_end(self) -> int:
        return self.hub.feed_end()

    def record_point_ids(self, records: Sequence[PointRecord]) -> int:
        return self.hub.record_point_ids(records)

    def archived_records(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], dict[str, Any]]:
        return self.hub.archived_records(keys)

    def close(self) -> None:
        self.hub.close()


LONG_OUTPUT = " ".join(f"step {n}: drained node {n} of the kafka cluster and checked its lag." for n in range(60))
EPISODES = {  # sourceId -> (task, output, tags, ts)
    "1": ("rotate the TLS certificate on the edge proxy", "done", ["tls"], 1_790_000_000_000),
    "2": ("open the vault with the combination 8812", "done", ["vault"], 1_790_100_000_000),
    "3": ("drain the kafka cluster before the upgrade", LONG_OUTPUT, ["kafka"], 1_790_200_000_000),
    "4": ("rebuild the search index after the schema change", "done", ["index"], 1_790_300_000_000),
}
SEED_IDS = {sid: str(uuid.uuid5(uuid.NAMESPACE_URL, f"seed/{sid}")) for sid in EPISODES}


def test_the_first_pass_over_an_adopted_collection_embeds_only_what_the_seed_lacks(
    tmp_path: Any, client: QdrantClient, hub: HubBackbone, local: LocalEmbedder
) -> None:
    """Seed points (the seed's payload, no textHash, under the ids the adopted episodes keep) are
    made memsync's by a payload-only update: no embedder call for them; the long one's further
    passages and the one edited since the seed embedded it are all that is embedded. Then every
    filter finds them, their dense vectors are the seed's, and a replay embeds nothing."""
    seed_texts = {}
    for sid, (task, output, tags, ts) in EPISODES.items():
        body = {"sessionId": "s1", "task": task, "output": output, "ts": ts, "agentName": "coder", "tags": tags}
        hub.push(
            [
                PushItem(
                    sid, int(sid), f"id-{sid}", text_hash(canonical_json(body).decode()), body, canonical_json(body)
                )
            ],
            int(sid),
        )
        seed_texts[sid] = f"{task}\n{output}"
    client.create_collection(
        SEED,
        vectors_config={"dense": qm.VectorParams(size=local.dims, distance=qm.Distance.COSINE)},
        sparse_vectors_config={"text": qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
    )
    seed_vectors = dict(zip(seed_texts, local.embed_documents(list(seed_texts.values())), strict=True))
    client.upsert(
        SEED,
        [
            qm.PointStruct(
                id=SEED_IDS[sid],
                vector={"dense": seed_vectors[sid], "text": qm.SparseVector(indices=[int(sid)], values=[1.0])},
                payload={"sourceSite": "laptop", "sourceId": sid, "content": text, "metadata": {"seed": True}},
            )
            for sid, text in seed_texts.items()
        ],
        wait=True,
    )
    ServerStore(client=client).adopt(SEED, local.name, local.dims)
    embedder = CountingEmbedder(local)
    feed = AdoptedFeed(hub, SEED_IDS, edited={"4"})
    store = ServerStore(client=client)
    indexer = Indexer(
        backbone=feed, store=store, embedder=embedder, collection=SEED, cursor_file=CursorFile(tmp_path / "i.json")
    )
    long_passages = [seed_texts["3"][a:b] for a, b in indexer.split(seed_texts["3"])]
    assert len(long_passages) > 1, "episode 3 must be longer than one passage"

    report = indexer.run()
    assert report.adopted == 3
    assert embedder.documents == [*long_passages[1:], seed_texts["4"]]  # the long one's tail, the edited one
    assert client.count(SEED, exact=True).count == 4 + len(long_passages) - 1

    for sid in ("1", "2", "3"):
        (point,) = store.get([SEED_IDS[sid]], with_vectors=True)
        assert point.payload["textHash"] == text_hash(seed_texts[sid])
        assert point.payload["site"] == "laptop"
        assert point.payload["sourceId"] == sid
        assert "metadata" not in point.payload
        assert point.dense is not None
        assert max(abs(a - b) for a, b in zip(point.dense, seed_vectors[sid], strict=True)) < 1e-5
    (long_head,) = store.get([SEED_IDS["3"]])
    assert long_head.payload["passages"] == len(long_passages)
    assert store.get([point_id("laptop", "1"), point_id("laptop", "3")]) == []  # never a second point

    def found(query: str, flt: SearchFilter) -> list[str]:
        # Every point under the filter (floor 0: what the filter selects, not what the floor keeps).
        request = SearchRequest(query, limit=10, filter=flt, floor=0.0)
        hits = search(store, local, request, now_ms=1_790_400_000_000, decay=False)
        return sorted(h.source_id for h in hits)

    assert found("certificate", SearchFilter(site="laptop")) == ["1", "2", "3", "4"]
    assert found("certificate", SearchFilter(tags=("vault",))) == ["2"]
    assert found("kafka", SearchFilter(since_ms=1_790_150_000_000)) == ["3", "4"]
    assert found("kafka", SearchFilter(site="vm")) == []

    indexer.cursors.write(SEED, 0)  # a replay of the whole feed: everything is memsync's now
    again = indexer.run()
    assert (again.adopted, again.embedded, again.unchanged) == (0, 0, 4)
    assert len(embedder.documents) == len(long_passages)
    store.close()
