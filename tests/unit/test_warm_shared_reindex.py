"""A shared Qdrant whose served collection another model built (``sync.search.collection.shared_alias``): two sites on
one qdrant-client local-mode client (each its own warm layer, cursor file and ``collections.json``),
a real hub backbone holding the rebuild's lease, and the configured model B served by Gemini's REST
API on 127.0.0.1 (``fake_providers``). Built with model A (the local MiniLM), then both sites
configured with B: both wait and say `memsync reindex`; a reindex on one site, under the lease,
builds with B and moves the alias (the other site's reindex at that moment waits on the lease);
the other site follows; both answer from B's vectors; the A collection is retired and dropped once
the grace has passed (the clock driven by the test)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import FakeClock, SiteFiles, wait_for, warm_section
from fake_providers import KEY, FakeProvider, fake_vector, gemini_respond, serve
from qdrant_client import QdrantClient

from daemon.search_worker.files import read_status
from daemon.search_worker.wiring import WarmLayer
from sync.backbone.base import PushItem
from sync.backbone.hub import HubBackbone
from sync.episode import canonical_json
from sync.errors import CollectionMismatch
from sync.search.collection.shared_alias import REBUILD_JOB
from sync.search.embedders.base import Embedder
from sync.search.embedders.local import LocalEmbedder
from sync.search.indexing.indexer import PassReport
from sync.search.indexing.text import text_hash
from sync.search.request import SearchRequest
from sync.search.service.rebuilds import RebuildHeld
from sync.search.stores import ServerStore

ALIAS = "memory"
GRACE = 600.0
MODEL_A = "all-MiniLM-L6-v2"
MODEL_B = "gemini/gemini-embedding-001"
B_DIMS = 768
TASKS = {str(i): f"rotate the certificate of host db-{i}" for i in range(1, 5)}


def push(hub: HubBackbone, source_id: str, task: str) -> None:
    body = {"sessionId": "s1", "task": task, "output": "done", "ts": 1_790_000_000_000, "agentName": "coder"}
    content = text_hash(canonical_json(body).decode())
    hub.push(
        [PushItem(source_id, int(source_id), f"id-{source_id}", content, body, canonical_json(body))], int(source_id)
    )


class Sites:
    """Sites of one hub, each a warm layer on the one shared client; ``model`` picks their config."""

    def __init__(self, site_files: Callable[..., SiteFiles], tmp_path: Path, short_dir: Path, client: QdrantClient):
        self.site_files, self.tmp_path, self.short_dir, self.client = site_files, tmp_path, short_dir, client
        self.clock = FakeClock()
        self.hubs: dict[str, HubBackbone] = {}
        self.layers: list[WarmLayer] = []

    def hub(self, name: str) -> HubBackbone:
        if name not in self.hubs:
            self.hubs[name] = HubBackbone(self.tmp_path / "hub.db", name)
        return self.hubs[name]

    def start(self, name: str, model: str, *, embedder: Embedder | None = None) -> WarmLayer:
        """``model``: the [warm] keys choosing it. ``embedder``: the layer's, else the configured one's."""
        warm = warm_section(self.tmp_path / name, self.short_dir, name)
        # A long catch-up interval: a layer's own loop (started only to read what status says) runs
        # its first pass, then waits: it never touches the shared client while the test does.
        warm += f'store = "qdrant"\nurl = "http://127.0.0.1:9"\ncollection = "{ALIAS}"\nretire_after = {GRACE}\n'
        warm = warm.replace("catch_up_interval = 0.5", "catch_up_interval = 3600") + model
        hub = self.hub(name)
        layer = WarmLayer(
            self.site_files(name, warm=warm).settings(),
            hub,
            stop=threading.Event(),
            clock=self.clock,
            embedder=embedder,
            leases=hub,
            store=lambda: ServerStore(client=self.client),
        )
        self.layers.append(layer)
        return layer

    def close(self) -> None:
        for layer in self.layers:
            layer.close()
        for hub in self.hubs.values():
            hub.close()


@pytest.fixture
def client() -> Iterator[QdrantClient]:
    shared = QdrantClient(":memory:")
    yield shared
    shared.close()


@pytest.fixture
def gemini() -> Iterator[FakeProvider]:
    yield from serve(gemini_respond)


@pytest.fixture
def sites(
    site_files: Callable[..., SiteFiles], tmp_path: Path, short_dir: Path, client: QdrantClient
) -> Iterator[Sites]:
    made = Sites(site_files, tmp_path, short_dir, client)
    yield made
    made.close()


def target(client: QdrantClient) -> str:
    (alias,) = [a for a in client.get_aliases().aliases if a.alias_name == ALIAS]
    return alias.collection_name


def physical(client: QdrantClient) -> list[str]:
    return sorted(c.name for c in client.get_collections().collections if c.name.startswith(f"{ALIAS}-"))


def recorded_model(client: QdrantClient, collection: str) -> Any:
    return (client.get_collection(collection).config.metadata or {})["memsync"]["model"]


def found(layer: WarmLayer, query: str, mode: str) -> list[str]:
    hits = layer.search(SearchRequest(query, limit=20, mode=mode, collapse=False))  # type: ignore[arg-type]
    return [h.source_id for h in hits]


def b_vectors(client: QdrantClient, collection: str) -> dict[str, tuple[list[float], str]]:
    """sourceId -> (dense vector, the text it was embedded from), every point of ``collection``."""
    records, _ = client.scroll(collection, limit=100, with_vectors=True, with_payload=True)
    out: dict[str, tuple[list[float], str]] = {}
    for r in records:
        assert isinstance(r.vector, dict)
        assert r.payload is not None
        dense = r.vector["dense"]
        assert isinstance(dense, list)
        out[str(r.payload["sourceId"])] = ([float(x) for x in dense if isinstance(x, float)], str(r.payload["text"]))
    return out


def test_a_shared_reindex_fixes_a_collection_another_model_built(
    sites: Sites,
    client: QdrantClient,
    gemini: FakeProvider,
    local: LocalEmbedder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MEMSYNC_WARM__API_KEY", KEY)  # model B's key, as from a unit's environment
    model_b = f'embedder = "gemini"\nbase_url = "{gemini.url}"\n'
    laptop, vm = sites.hub("laptop"), sites.hub("vm")
    for sid, task in TASKS.items():
        push(laptop if int(sid) % 2 else vm, sid, task)

    # Built with model A by both sites (the first made it and the alias; the second found it).
    a_laptop, a_vm = sites.start("laptop", "", embedder=local), sites.start("vm", "", embedder=local)
    assert a_laptop.catch_up().embedded == 4
    assert a_vm.catch_up().embedded == 0
    built_with_a = target(client)
    assert recorded_model(client, built_with_a) == local.name
    a_laptop.close()
    a_vm.close()

    # Both sites now configured with model B: their loops' first pass waits, and status says why.
    watched = [sites.start("laptop", model_b).start(), sites.start("vm", model_b).start()]
    for layer in watched:

        def waits(layer: WarmLayer = layer) -> bool:
            return (read_status(layer.settings) or {}).get("state") == "needs-reindex"

        wait_for(waits, what=f"{layer.settings.site.name} to say the collection needs a reindex")
        detail = str((read_status(layer.settings) or {}).get("detail"))
        assert MODEL_A in detail
        assert MODEL_B in detail
        assert "memsync reindex" in detail
        layer.close()  # the loop stops here: the rest is driven from this thread
    assert not gemini.requests  # nothing was embedded with B into A's collection

    # The same sites (a restarted daemon's layers), still refusing A's collection.
    laptop_b, vm_b = sites.start("laptop", model_b), sites.start("vm", model_b)
    for layer in (laptop_b, vm_b):
        with pytest.raises(CollectionMismatch, match=MODEL_A):
            layer.catch_up()
        with pytest.raises(CollectionMismatch, match=MODEL_A):
            found(layer, TASKS["1"], "bm25")

    # `memsync reindex` on the laptop (the layer's path the CLI takes); the vm asks at the same
    # moment, mid-build, and waits on the lease; the served collection stays A's until the switch.
    held: list[str] = []

    def meanwhile(report: PassReport) -> None:
        with pytest.raises(RebuildHeld, match="another site is rebuilding the shared collection") as refused:
            vm_b.reindex()
        held.append(str(refused.value))
        assert target(client) == built_with_a

    sites.clock.now += 10
    report = laptop_b.reindex(meanwhile)
    assert held
    assert report.embedded == 4  # another model: every episode embedded with B, nothing copied
    rebuilt = target(client)
    assert rebuilt != built_with_a
    assert recorded_model(client, rebuilt) == MODEL_B
    assert physical(client) == sorted([built_with_a, rebuilt])  # A's is retired, not dropped yet
    runs = [r for r in laptop.job_runs(f"{REBUILD_JOB}:{ALIAS}") if r.outcome == "ok"]
    assert [r.site for r in runs] == ["laptop"]  # one rebuild, under the lease

    # The vm follows the alias, from the rebuild's recorded position: nothing for it to embed.
    embedded_by_laptop = len(gemini.requests)
    assert vm_b.catch_up().embedded == 0
    assert vm_b.collections.active() == rebuilt
    assert vm_b.cursor_file.read(rebuilt) == laptop_b.cursor_file.read(rebuilt)
    shown = read_status(vm_b.settings) or {}
    assert (shown.get("state"), shown.get("model"), shown.get("collection")) == ("ok", MODEL_B, rebuilt)
    assert "another site rebuilt the shared index" in str(shown.get("notice"))

    # B's vectors: every point's dense vector is B's (the fake's, normalised) for the text it holds,
    # and a query with an episode's text finds that episode first by meaning alone, from both sites.
    points = b_vectors(client, rebuilt)
    assert sorted(points) == sorted(TASKS)
    for dense, text in points.values():
        expected = np.asarray(fake_vector(text, B_DIMS))
        assert np.allclose(dense, expected / np.linalg.norm(expected), atol=1e-5)
    for layer in (laptop_b, vm_b):
        for sid, (_dense, text) in points.items():
            assert found(layer, text, "dense")[0] == sid
        assert sorted(found(layer, "rotate certificate host", "bm25")) == sorted(TASKS)
    assert len(gemini.requests) > embedded_by_laptop  # the queries were embedded with B

    # A new episode from the vm reaches both through the new collection.
    push(vm, "5", "renew the certificate of host db-5")
    assert vm_b.catch_up().embedded == 1
    assert laptop_b.catch_up().embedded == 0
    for layer in (laptop_b, vm_b):
        assert found(layer, "renew the certificate of host db-5\ndone", "dense")[0] == "5"

    # The grace: A's collection stays until it has passed, then whichever site looks drops it.
    sites.clock.now += GRACE / 2
    vm_b.catch_up()
    assert physical(client) == sorted([built_with_a, rebuilt])
    sites.clock.now += GRACE
    vm_b.catch_up()
    assert physical(client) == [rebuilt]
    assert target(client) == rebuilt
    for layer in (laptop_b, vm_b):
        assert sorted(found(layer, "certificate host", "bm25")) == [*sorted(TASKS), "5"]
