"""``memsync adopt-collection`` end to end, as the CLI runs it after parsing (``adopt_main``: the
settings loaded from the site's config, the one sentence on stderr, the exit code), with the store
made on a shared qdrant-client local-mode client (the seam: how a Qdrant server store is made from
the settings; the CLI's makes a client on ``warm.url``, which cannot reach local mode). The site is
configured for Gemini at 768 dims, its API on a port nothing listens on: adopting embeds nothing.

A seed-shaped collection (named dense 768 cosine, sparse ``text`` with IDF, the seed's payload):
adopted, the alias moved to it from the memsync collection it served (retired), the record written,
no point changed. One another model made (another size, a sparse vector without IDF): refused with
the sentence naming both misfits, exit 78, nothing written. Adopting under warm.collection's own
name: refused, exit 78. The child-process run of a refusal (an edge store) is in
test_warm_adoption.py."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import SiteFiles, warm_section
from fake_providers import KEY, closed_url
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from daemon.cli.common import Exit
from daemon.cli.search import adopt_main
from daemon.config import Settings
from daemon.search_worker.files import Collections
from sync.errors import EX_CONFIG
from sync.search.stores import ServerStore

ALIAS = "memory"
SEED = "agent_memory_hybrid"
MODEL = "gemini/gemini-embedding-001"
DIMS = 768
SERVED = f"{ALIAS}-20270101T000000000000"  # memsync's own collection the alias serves before


@pytest.fixture
def client() -> Iterator[QdrantClient]:
    shared = QdrantClient(":memory:")
    yield shared
    shared.close()


@pytest.fixture
def site(
    site_files: Callable[..., SiteFiles], tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> SiteFiles:
    monkeypatch.setenv("MEMSYNC_WARM__API_KEY", KEY)
    warm = warm_section(tmp_path, short_dir) + (
        f'store = "qdrant"\nurl = "http://127.0.0.1:9"\ncollection = "{ALIAS}"\n'
        f'embedder = "gemini"\nbase_url = "{closed_url()}"\n'
    )
    return site_files(warm=warm)


def seed_collection(client: QdrantClient, *, dims: int = DIMS, idf: bool = True) -> None:
    """The seed design's collection: named ``dense`` (cosine) and ``text`` (BM25), its own payload."""
    client.create_collection(
        SEED,
        vectors_config={"dense": qm.VectorParams(size=dims, distance=qm.Distance.COSINE)},
        sparse_vectors_config={"text": qm.SparseVectorParams(modifier=qm.Modifier.IDF if idf else None)},
    )
    client.upsert(
        SEED,
        [
            qm.PointStruct(
                id=n + 1,
                vector={
                    "dense": [1.0 if i == n else 0.0 for i in range(dims)],
                    "text": qm.SparseVector(indices=[n, 100 + n], values=[1.0, 0.5]),
                },
                payload={"sourceSite": "laptop", "sourceId": str(n), "content": f"seed episode {n}", "metadata": {}},
            )
            for n in range(3)
        ],
        wait=True,
    )


def served_by_memsync(client: QdrantClient) -> None:
    """What a site left before: memsync's own collection, behind the alias every site goes through."""
    store = ServerStore(client=client)
    store.open_or_create(SERVED, MODEL, DIMS)
    store.switch_alias(ALIAS, SERVED)
    store.close()


def points(client: QdrantClient) -> dict[str, Any]:
    records, _ = client.scroll(SEED, limit=100, with_vectors=True, with_payload=True)
    return {str(r.id): (r.vector, r.payload) for r in records}


def target(client: QdrantClient) -> str | None:
    found = [a.collection_name for a in client.get_aliases().aliases if a.alias_name == ALIAS]
    return found[0] if found else None


def record(client: QdrantClient, collection: str) -> Any:
    return (client.get_collection(collection).config.metadata or {}).get("memsync")


def adopt(site: SiteFiles, client: QdrantClient, collection: str = SEED) -> int:
    """The command as the CLI runs it after parsing; its exit code (an ``Exit`` carries a refusal's)."""
    made: list[Settings] = []

    def server(settings: Settings) -> ServerStore:
        made.append(settings)
        return ServerStore(client=client)

    try:
        code = adopt_main(argparse.Namespace(config=site.config, collection=collection), server=server)
    except Exit as done:
        code = done.code
    assert all(s.warm.collection == ALIAS for s in made)  # the stores were made from the site's settings
    return code


def test_a_seed_shaped_collection_is_adopted_and_the_alias_moves_to_it(
    site: SiteFiles, client: QdrantClient, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_collection(client)
    served_by_memsync(client)
    before = points(client)

    assert adopt(site, client) == 0
    said = capsys.readouterr().err
    assert f"adopted collection {SEED} for {MODEL} ({DIMS} dims)" in said
    assert "dense vector 'dense' and sparse vector 'text'" in said
    assert "its points lack memsync's fields site, agent, session" in said  # the seed's payload keys
    assert "Traceback" not in said
    assert KEY not in said

    assert target(client) == SEED  # every site's next request goes to it
    adopted = record(client, SEED)
    assert adopted["adopted"] is True
    assert adopted["model"] == MODEL
    assert adopted["dims"] == DIMS
    assert adopted["vectors"] == {"dense": "dense", "sparse": "text"}
    assert adopted["builtThrough"] == 0  # sites index the feed into it from the start
    assert points(client) == before  # no point changed: vectors and payloads as the seed left them
    assert isinstance(record(client, SERVED)["retiredAt"], float)  # memsync's own: retired, dropped after the grace
    assert Collections(site.settings()).recorded() == SEED  # this site now uses it

    # Adopted once: a second run says so and writes nothing more.
    assert adopt(site, client) == EX_CONFIG
    assert f"collection {SEED} at shared client is memsync's already (adopted)" in capsys.readouterr().err
    assert points(client) == before


def test_another_model_s_collection_is_refused_naming_what_does_not_fit(
    site: SiteFiles, client: QdrantClient, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_collection(client, dims=512, idf=False)
    served_by_memsync(client)
    before = points(client)

    assert adopt(site, client) == EX_CONFIG == 78
    said = capsys.readouterr().err
    assert said.count("\n") == 1  # one sentence
    assert f"configuration error: collection {SEED} at shared client cannot be adopted for {MODEL} (768 dims)" in said
    assert "no named dense vector of 768 dims with cosine distance (it has: 'dense' 512 dims cosine)" in said
    assert "no named sparse vector with the IDF modifier for BM25 (it has: 'text')" in said
    assert "Build memsync's own beside it instead" in said
    assert "Traceback" not in said

    assert record(client, SEED) is None  # nothing written: no record, no alias moved, no point changed
    assert points(client) == before
    assert target(client) == SERVED
    assert "retiredAt" not in record(client, SERVED)
    assert Collections(site.settings()).recorded() is None


def test_adopting_under_warm_collection_s_own_name_is_refused(
    site: SiteFiles, client: QdrantClient, capsys: pytest.CaptureFixture[str]
) -> None:
    seed_collection(client)
    before = points(client)

    assert adopt(site, client, ALIAS) == 78
    said = capsys.readouterr().err
    assert "warm.collection names the collection to adopt" in said
    assert f"set warm.collection to a name of its own (e.g. {ALIAS}-memsync)" in said
    assert said.count("\n") == 1
    assert record(client, SEED) is None
    assert points(client) == before
    assert target(client) is None
    assert Collections(site.settings()).recorded() is None
