"""One collection lifecycle for every site of a shared Qdrant: the decisions (``sync.search.collection.shared_alias``)
from tables, then the proof on qdrant-client's local mode: sites on one shared client (each its own
warm layer, cursor file and ``collections.json``), a real hub backbone holding the rebuild's lease,
through a reindex, a forget and its purge, the grace, and a site that was away while its
collection went. Every site is searched between every step, and during the rebuild at every page it
builds: never empty, never stale. A foreign collection on the same server is never touched."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FakeClock, SiteFiles, warm_section
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from daemon.search_worker.files import Collections, read_status
from daemon.search_worker.wiring import WarmLayer
from sync.backbone.base import PushItem
from sync.backbone.hub import HubBackbone
from sync.episode import canonical_json
from sync.errors import ConfigError, ForeignCollection, StoreUnavailable
from sync.leases import Claim
from sync.search.collection.shared_alias import (
    REBUILD_JOB,
    Behind,
    Move,
    Seen,
    Sweep,
    copy_complete,
    follow_from,
    locate,
    may_rebuild,
    sweep,
)
from sync.search.collection.shared_pointer import SharedPointer
from sync.search.embedders.local import LocalEmbedder
from sync.search.indexing.indexer import Indexer
from sync.search.indexing.text import text_hash
from sync.search.request import SearchRequest
from sync.search.service.rebuilds import RebuildHeld
from sync.search.stores import ServerStore
from sync.search.stores.adoption import Origin

ALIAS = "memory"
FOREIGN = "agent_memory_hybrid"
GRACE = 600.0

# --- the decisions ----------------------------------------------------------------------------------

LOCATED = [
    pytest.param(Seen(None, None), Move.CREATE, id="first site, nothing yet"),
    pytest.param(Seen(None, "memory-1", bound_exists=True), Move.ALIAS_BOUND, id="an older per-site pointer"),
    pytest.param(Seen(None, "memory-1", bound_exists=False), Move.CREATE, id="its collection is gone, no alias"),
    pytest.param(
        Seen(None, None, name_is_collection=True, name_origin=Origin.FOREIGN),
        Move.REFUSE_NAME,
        id="the name is someone else's collection",
    ),
    pytest.param(
        Seen(None, None, name_is_collection=True, name_origin=Origin.ADOPTED),
        Move.REFUSE_NAME,
        id="the name is an adopted collection",
    ),
    pytest.param(
        Seen(None, None, name_is_collection=True, name_origin=Origin.OURS),
        Move.MOVE_UNDER_ALIAS,
        id="the name is memsync's own collection (an older memsync's)",
    ),
    pytest.param(Seen(None, None, moved="memory-2"), Move.ALIAS_MOVED, id="a move stopped before the alias"),
    pytest.param(
        Seen(None, "memory-1", bound_exists=True, moved="memory-2"),
        Move.ALIAS_BOUND,
        id="a move's copy and this site's own pointer: its own",
    ),
    pytest.param(Seen("memory-1", "memory-1", bound_exists=True), Move.STAY, id="the alias serves ours"),
    pytest.param(Seen("memory-1", None), Move.STAY, id="first look at an existing alias"),
    pytest.param(Seen("memory-2", "memory-1", bound_exists=True), Move.FOLLOW, id="another site switched"),
    pytest.param(Seen("memory-3", "memory-1", bound_exists=False), Move.FOLLOW_GONE, id="ours went away meanwhile"),
]


@pytest.mark.parametrize(("seen", "move"), LOCATED)
def test_locate(seen: Seen, move: Move) -> None:
    assert locate(seen) is move


@pytest.mark.parametrize(
    ("source", "copied", "complete"),
    [(4, 4, True), (0, 0, True), (5, 4, False), (4, 5, False)],
)
def test_copy_complete(source: int, copied: int, complete: bool) -> None:
    assert copy_complete(source, copied) is complete


@pytest.mark.parametrize(
    ("own", "recorded", "resume"),
    [(0, 40, 40), (55, 40, 55), (10, None, 10), (0, 0, 0)],
)
def test_follow_from(own: int, recorded: int | None, resume: int) -> None:
    assert follow_from(own, recorded) == resume


@pytest.mark.parametrize(
    ("claim", "rebuilds"),
    [(Claim.TAKE, True), (Claim.KEEP, True), (Claim.TAKE_OVER, True), (Claim.SKIP, False)],
)
def test_may_rebuild(claim: Claim, rebuilds: bool) -> None:
    assert may_rebuild(claim) is rebuilds


SWEPT = [
    pytest.param([Behind("m-1", Origin.OURS, None)], Sweep(("m-1",), (), ()), id="unmarked: marked now"),
    pytest.param([Behind("m-1", Origin.OURS, 1000.0)], Sweep((), (), ()), id="inside the grace"),
    pytest.param([Behind("m-1", Origin.OURS, 400.0)], Sweep((), ("m-1",), ()), id="the grace is over"),
    pytest.param([Behind("m-1", Origin.OURS, None, 2000.0)], Sweep((), (), ()), id="being built: left alone"),
    pytest.param([Behind("m-1", Origin.OURS, None, 900.0)], Sweep(("m-1",), (), ()), id="its builder's lease ran out"),
    pytest.param([Behind("m-1", Origin.ADOPTED, 0.0)], Sweep((), (), ("m-1",)), id="adopted: never dropped"),
    pytest.param([Behind("m-1", Origin.FOREIGN, None)], Sweep((), (), ("m-1",)), id="foreign: never dropped"),
]


@pytest.mark.parametrize(("found", "decided"), SWEPT)
def test_sweep(found: list[Behind], decided: Sweep) -> None:
    assert sweep(found, now=1000.0, grace=GRACE) == decided


# --- two sites, one server --------------------------------------------------------------------------


def push(hub: HubBackbone, source_id: str, task: str) -> None:
    body = {"sessionId": "s1", "task": task, "output": "done", "ts": 1_790_000_000_000, "agentName": "coder"}
    content = text_hash(canonical_json(body).decode())
    hub.push(
        [PushItem(source_id, int(source_id), f"id-{source_id}", content, body, canonical_json(body))], int(source_id)
    )


class Fleet:
    """Sites of one hub, each with its own warm layer on the one shared client."""

    def __init__(
        self, site_files: Callable[..., SiteFiles], tmp_path: Path, short_dir: Path, client: QdrantClient
    ) -> None:
        self.site_files, self.tmp_path, self.short_dir, self.client = site_files, tmp_path, short_dir, client
        self.clock = FakeClock()
        self.embedder = LocalEmbedder()
        self.hubs: dict[str, HubBackbone] = {}
        self.layers: dict[str, WarmLayer] = {}

    def hub(self, name: str) -> HubBackbone:
        if name not in self.hubs:
            self.hubs[name] = HubBackbone(self.tmp_path / "hub.db", name)
        return self.hubs[name]

    def start(self, name: str) -> WarmLayer:
        warm = warm_section(self.tmp_path / name, self.short_dir, name)
        warm += f'store = "qdrant"\nurl = "http://127.0.0.1:9"\ncollection = "{ALIAS}"\nretire_after = {GRACE}\n'
        site = self.site_files(name, warm=warm)
        hub = self.hub(name)
        layer = WarmLayer(
            site.settings(),
            hub,
            stop=threading.Event(),
            clock=self.clock,
            embedder=self.embedder,
            leases=hub,
            store=lambda: ServerStore(client=self.client),
        )
        self.layers[name] = layer
        return layer

    def stop(self, name: str) -> None:
        self.layers.pop(name).close()

    def close(self) -> None:
        for layer in self.layers.values():
            layer.close()
        for hub in self.hubs.values():
            hub.close()


@pytest.fixture
def client() -> Iterator[QdrantClient]:
    shared = QdrantClient(":memory:")
    yield shared
    shared.close()


@pytest.fixture
def fleet(
    site_files: Callable[..., SiteFiles], tmp_path: Path, short_dir: Path, client: QdrantClient
) -> Iterator[Fleet]:
    made = Fleet(site_files, tmp_path, short_dir, client)
    yield made
    made.close()


def found(layer: WarmLayer, query: str = "rotate certificate host") -> list[str]:
    hits = layer.search(SearchRequest(query, limit=20, mode="bm25", collapse=False))
    return sorted(h.source_id for h in hits)


def seed_foreign(client: QdrantClient) -> None:
    client.create_collection(
        FOREIGN,
        vectors_config={"dense": qm.VectorParams(size=4, distance=qm.Distance.COSINE)},
        sparse_vectors_config={"text": qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
    )
    client.upsert(FOREIGN, [qm.PointStruct(id=1, vector={"dense": [1.0, 0, 0, 0]}, payload={"text": "theirs"})])


def foreign_untouched(client: QdrantClient) -> bool:
    config = client.get_collection(FOREIGN).config
    return client.count(FOREIGN, exact=True).count == 1 and not config.metadata


def physical(client: QdrantClient) -> list[str]:
    return sorted(c.name for c in client.get_collections().collections if c.name.startswith(f"{ALIAS}-"))


def target(client: QdrantClient) -> str:
    (alias,) = [a for a in client.get_aliases().aliases if a.alias_name == ALIAS]
    return alias.collection_name


def test_two_sites_through_a_reindex_a_forget_its_purge_and_the_grace(fleet: Fleet, client: QdrantClient) -> None:
    seed_foreign(client)
    laptop, vm = fleet.hub("laptop"), fleet.hub("vm")
    for i in range(1, 5):
        push(laptop if i % 2 else vm, str(i), f"rotate the certificate of host db-{i}")
    a, b = fleet.start("laptop"), fleet.start("vm")
    assert a.catch_up().embedded == 4
    first = target(client)
    assert b.catch_up().embedded == 0  # the same collection: the other site's work is there already
    everything = ["1", "2", "3", "4"]

    def both(expected: list[str]) -> None:
        assert found(a) == expected
        assert found(b) == expected
        assert foreign_untouched(client)

    both(everything)

    # A reindex on the laptop, searched from both sites at every page it builds.
    pages: list[int] = []

    def during(report: Any) -> None:
        pages.append(report.cursor)
        both(everything)

    fleet.clock.now += 10
    a.reindex(during)
    assert pages  # the searches above ran mid-build
    second = target(client)
    assert second != first
    both(everything)  # the vm has not looked yet: it is already served through the alias
    assert physical(client) == sorted([first, second])  # the old one is retired, not dropped
    assert b.collections.active() == first
    b.catch_up()
    assert b.collections.active() == second  # it followed, from the recorded position
    assert b.cursor_file.read(second) == a.cursor_file.read(second)  # resumed at the rebuild's end
    both(everything)

    # A forget on the laptop, applied by the vm's pass first: gone for both at once.
    laptop.forget("3")
    fleet.clock.now += 10
    b.catch_up()  # deletes the point through the alias, then purges: a rebuild under the lease
    third = target(client)
    assert third not in (first, second)
    both(["1", "2", "4"])
    assert not b.cursor_file.purge_owed(third)
    a.catch_up()  # follows; it owes no purge of its own (the vm deleted the point)
    assert a.collections.active() == third
    assert not a.cursor_file.purge_owed(third)
    both(["1", "2", "4"])
    runs = [r for r in laptop.job_runs(f"{REBUILD_JOB}:{ALIAS}") if r.outcome == "ok"]
    assert sorted(r.site for r in runs) == ["laptop", "vm"]  # each rebuild held the lease, once

    # The grace: retired collections go only once it has passed, and never the foreign one.
    fleet.clock.now += GRACE / 2
    a.catch_up()
    assert physical(client) == sorted([first, second, third])
    fleet.clock.now += GRACE
    a.catch_up()
    assert physical(client) == [third]
    both(["1", "2", "4"])


def test_a_rebuild_is_one_site_s_at_a_time(fleet: Fleet, client: QdrantClient) -> None:
    push(fleet.hub("laptop"), "1", "rotate the certificate of host db-1")
    a, b = fleet.start("laptop"), fleet.start("vm")
    a.catch_up()
    b.catch_up()
    serving = target(client)
    vm = fleet.hub("vm")
    assert vm.claim_job(f"{REBUILD_JOB}:{ALIAS}", serving, 3_600_000) is Claim.TAKE  # the vm is rebuilding
    with pytest.raises(RebuildHeld, match="another site is rebuilding the shared collection"):
        a.reindex()
    assert target(client) == serving
    assert found(a) == found(b) == ["1"]


def test_a_site_whose_collection_went_away_while_it_was_away_says_so_and_catches_up(
    fleet: Fleet, client: QdrantClient
) -> None:
    laptop = fleet.hub("laptop")
    for i in range(1, 4):
        push(laptop, str(i), f"rotate the certificate of host db-{i}")
    a, mac = fleet.start("laptop"), fleet.start("mac")
    a.catch_up()
    mac.catch_up()
    left = target(client)
    fleet.stop("mac")  # away
    fleet.clock.now += 10
    a.reindex()
    push(laptop, "4", "rotate the certificate of host db-4")
    a.catch_up()
    fleet.clock.now += GRACE + 1
    a.catch_up()
    assert left not in physical(client)  # dropped while the mac was away

    back = fleet.start("mac")
    assert found(back) == ["1", "2", "3", "4"]  # never empty: it follows the alias
    status = read_status(back.settings) or {}
    assert f"collection {left} went away" in str(status.get("notice"))
    report = back.catch_up()
    assert report.embedded == 0  # it resumed from the rebuild's recorded position, nothing to redo
    assert back.collections.active() == target(client)


def test_a_configured_name_that_is_a_collection_is_refused(fleet: Fleet, client: QdrantClient) -> None:
    client.create_collection(ALIAS, vectors_config={"dense": qm.VectorParams(size=4, distance=qm.Distance.COSINE)})
    layer = fleet.start("laptop")
    with pytest.raises(ForeignCollection, match=r"set warm.collection to a name of its own \(e.g. memory-memsync\)"):
        layer.catch_up()
    assert client.collection_exists(ALIAS)
    assert not physical(client)


def older_memsync(fleet: Fleet, client: QdrantClient, *layers: WarmLayer) -> None:
    """What an older memsync left on a shared server: each site indexed the feed into the collection
    named warm.collection itself (no alias), with its own cursor file."""
    for layer in layers:
        hub = fleet.hub(layer.settings.site.name)
        Indexer(
            backbone=hub,
            store=ServerStore(client=client),
            embedder=fleet.embedder,
            collection=ALIAS,
            cursor_file=layer.cursor_file,
        ).run()
    assert client.get_collections().collections
    assert not client.get_aliases().aliases


def vectors(client: QdrantClient, collection: str) -> dict[str, Any]:
    records, _ = client.scroll(collection, limit=100, with_vectors=True, with_payload=True)
    return {str(r.id): (r.vector, r.payload) for r in records}


def test_an_older_memsync_s_collection_moves_under_the_alias_copied_searched_at_every_step(
    fleet: Fleet, client: QdrantClient
) -> None:
    seed_foreign(client)
    laptop = fleet.hub("laptop")
    for i in range(1, 5):
        push(laptop, str(i), f"rotate the certificate of host db-{i}")
    a, b = fleet.start("laptop"), fleet.start("vm")
    a.gap_wait = b.gap_wait = 0.0  # one thread: nothing can make the alias while a step is being looked at
    older_memsync(fleet, client, a, b)
    before = vectors(client, ALIAS)
    through = a.cursor_file.read(ALIAS)
    everything = ["1", "2", "3", "4"]

    def both(expected: list[str]) -> None:
        assert found(a) == expected
        assert found(b) == expected
        assert foreign_untouched(client)

    both(everything)  # served as the older memsync served it, until it is moved
    steps: list[str] = []

    def step(said: str) -> None:
        steps.append(said)
        if said == "created":
            assert b.move_under_alias() is None  # the laptop holds the lease: the vm does not move it too
        if said == "dropped":
            # The gap: neither the collection nor yet the alias has the name. Never an empty answer.
            for layer in (a, b):
                with pytest.raises(StoreUnavailable, match=f"shared collection {ALIAS} is being moved under the alias"):
                    found(layer)
            assert foreign_untouched(client)
            # A search that may wait (the default) answers in full, whether it reads in the gap (it waits
            # for the alias and reads again through it) or after the alias is made.
            b.gap_wait = 60.0
            waiting.start()
        else:
            both(everything)
        if said == "aliased":
            waiting.join()
            assert waited == [everything]

    waited: list[list[str]] = []
    waiting = threading.Thread(target=lambda: waited.append(found(b)))

    moved = a.move_under_alias(step)
    assert steps == ["created", "copied 4", "verified", "dropped", "aliased"]
    assert moved is not None
    assert target(client) == moved
    assert physical(client) == [moved]
    assert not any(c.name == ALIAS for c in client.get_collections().collections)  # the alias has its name now
    assert vectors(client, moved) == before  # every point with its vectors: nothing embedded
    assert (client.get_collection(moved).config.metadata or {})["memsync"]["builtThrough"] == through
    runs = [r for r in laptop.job_runs(f"{REBUILD_JOB}:{ALIAS}") if r.outcome == "ok"]
    assert [r.site for r in runs] == ["laptop"]
    both(everything)

    assert a.catch_up().embedded == 0
    assert b.catch_up().embedded == 0  # it follows the alias, from the recorded position
    assert b.collections.active() == moved
    assert b.cursor_file.read(moved) == through
    push(laptop, "5", "rotate the certificate of host db-5")
    assert b.catch_up().embedded == 1
    assert a.catch_up().embedded == 0
    both([*everything, "5"])


def test_a_pass_moves_it_by_itself_and_the_other_site_follows(fleet: Fleet, client: QdrantClient) -> None:
    laptop = fleet.hub("laptop")
    for i in range(1, 4):
        push(laptop, str(i), f"rotate the certificate of host db-{i}")
    a, b = fleet.start("laptop"), fleet.start("vm")
    older_memsync(fleet, client, a, b)
    assert found(b) == ["1", "2", "3"]  # the vm opened the collection under the name, as it was
    a.catch_up()  # drained: the pass moves it, under the lease
    moved = target(client)
    assert physical(client) == [moved]
    assert "moved collection memory under the alias" in str((read_status(a.settings) or {}).get("notice"))
    assert found(b) == ["1", "2", "3"]  # the vm's handle on the name now reaches the alias
    assert b.catch_up().embedded == 0
    assert b.collections.active() == moved
    assert found(a) == found(b) == ["1", "2", "3"]


def test_a_copy_that_falls_short_leaves_the_collection_and_is_tried_again(fleet: Fleet, client: QdrantClient) -> None:
    laptop = fleet.hub("laptop")
    for i in range(1, 4):
        push(laptop, str(i), f"rotate the certificate of host db-{i}")
    a, b = fleet.start("laptop"), fleet.start("vm")
    older_memsync(fleet, client, a, b)
    found(a)
    found(b)

    def meanwhile(said: str) -> None:
        if said.startswith("copied"):
            # The vm is still indexing into the collection under the name while it is being copied.
            push(laptop, "4", "rotate the certificate of host db-4")
            b.catch_up()

    with pytest.raises(StoreUnavailable, match="the move is tried again at the next pass"):
        a.move_under_alias(meanwhile)
    assert client.count(ALIAS, exact=True).count == 4  # left as it was, with the vm's new point
    assert not physical(client)  # the short copy went
    assert found(a) == found(b) == ["1", "2", "3", "4"]
    moved = a.move_under_alias()  # the laptop still holds the lease (kept): tried again
    assert moved is not None
    assert client.count(moved, exact=True).count == 4
    assert found(a) == found(b) == ["1", "2", "3", "4"]


def test_a_move_stopped_between_the_drop_and_the_alias_is_finished_by_the_next_look(
    fleet: Fleet, client: QdrantClient
) -> None:
    laptop = fleet.hub("laptop")
    for i in range(1, 3):
        push(laptop, str(i), f"rotate the certificate of host db-{i}")
    a, b = fleet.start("laptop"), fleet.start("vm")
    older_memsync(fleet, client, a, b)
    found(a)

    class Stopped(Exception):
        pass

    def crash(said: str) -> None:
        if said == "dropped":
            raise Stopped

    with pytest.raises(Stopped):
        a.move_under_alias(crash)
    assert not client.get_aliases().aliases
    assert not client.collection_exists(ALIAS)
    (copy,) = physical(client)
    fleet.stop("laptop")
    fresh = fleet.start("laptop")
    assert found(fresh) == ["1", "2"]  # the alias is put on the verified copy, nothing made empty
    assert target(client) == copy
    assert b.catch_up().embedded == 0
    assert found(b) == ["1", "2"]


def test_a_reindex_replaces_an_older_memsync_s_collection_by_the_alias(fleet: Fleet, client: QdrantClient) -> None:
    push(fleet.hub("laptop"), "1", "rotate the certificate of host db-1")
    a, b = fleet.start("laptop"), fleet.start("vm")
    older_memsync(fleet, client, a, b)
    a.reindex()
    rebuilt = target(client)
    assert physical(client) == [rebuilt]
    b.catch_up()
    assert found(a) == found(b) == ["1"]


def test_an_adopted_collection_under_the_configured_name_is_refused_and_untouched(
    fleet: Fleet, client: QdrantClient
) -> None:
    client.create_collection(
        ALIAS,
        vectors_config={"dense": qm.VectorParams(size=fleet.embedder.dims, distance=qm.Distance.COSINE)},
        sparse_vectors_config={"text": qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
    )
    ServerStore(client=client).adopt(ALIAS, fleet.embedder.name, fleet.embedder.dims)
    layer = fleet.start("laptop")
    with pytest.raises(ConfigError, match=r"memsync adopted.*set warm.collection to a name of its own"):
        layer.catch_up()
    assert client.collection_exists(ALIAS)
    assert not client.get_aliases().aliases
    assert not physical(client)


def test_an_adopted_collection_serves_every_site_and_a_later_rebuild_leaves_it(
    fleet: Fleet, client: QdrantClient
) -> None:
    laptop = fleet.hub("laptop")
    for i in range(1, 3):
        push(laptop, str(i), f"rotate the certificate of host db-{i}")
    a, b = fleet.start("laptop"), fleet.start("vm")
    a.catch_up()
    b.catch_up()
    first = target(client)
    dims = fleet.embedder.dims
    client.create_collection(
        FOREIGN,
        vectors_config={"dense": qm.VectorParams(size=dims, distance=qm.Distance.COSINE)},
        sparse_vectors_config={"text": qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
    )
    # What `memsync adopt-collection` does (daemon/search_worker/adopt.py): the record, then the alias.
    ServerStore(client=client).adopt(FOREIGN, fleet.embedder.name, dims)
    SharedPointer(
        ALIAS,
        lambda: ServerStore(client=client),
        Collections(a.settings),
        a.cursor_file,
        grace=GRACE,
        clock=fleet.clock,
    ).switch(FOREIGN)
    assert target(client) == FOREIGN
    a.catch_up()
    b.catch_up()  # both follow it and index the feed into it from its recorded position, 0
    assert client.count(FOREIGN, exact=True).count == 2
    assert found(a) == found(b) == ["1", "2"]

    fleet.clock.now += 10
    a.reindex()
    fleet.clock.now += GRACE + 1
    a.catch_up()
    b.catch_up()
    assert found(a) == found(b) == ["1", "2"]
    assert target(client) not in (FOREIGN, first)
    assert client.collection_exists(FOREIGN)  # adopted: never dropped
    assert first not in physical(client)  # memsync's own retired one went after the grace
