"""``memsync adopt-collection``: take over a Qdrant collection memsync did not make, when its
vectors fit (``sync.search.stores.adoption`` decides which layouts do), without re-embedding it.

It records the adoption in the collection's metadata (the model this site is configured with, the
vectors memsync must use, and that it was adopted: memsync writes it, never drops it) and points the
configured name, the alias every site goes through (``sync.search.collection.shared_alias``), at it.
Nothing else in the collection changes.

``server`` is how a Qdrant server store is made from the settings (``open_server_store``: a client
on ``warm.url``); a test gives a store on qdrant-client's local mode, which no URL reaches.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from daemon.config import Settings
from daemon.search_worker.files import Collections, cursor_file
from daemon.search_worker.wiring import open_embedder, open_server_store
from sync.errors import ConfigError
from sync.search.collection.shared_pointer import SharedPointer
from sync.search.stores import ServerStore
from sync.search.stores.adoption import Verdict


@dataclass(frozen=True, slots=True)
class Adopted:
    collection: str
    model: str
    dims: int
    verdict: Verdict

    def summary(self) -> str:
        said = (
            f"adopted collection {self.collection} for {self.model} ({self.dims} dims): memsync searches its "
            f"dense vector '{self.verdict.dense}' and sparse vector '{self.verdict.sparse}', writes new episodes "
            "into it and never drops it"
        )
        if self.verdict.unmapped:
            said += (
                f"; its points lack memsync's fields {', '.join(self.verdict.unmapped)}: they are found by "
                "meaning and words, but by no filter (site, agent, session, tag, since) until memsync rewrites "
                "them from the change feed"
            )
        return said


ServerFactory = Callable[[Settings], ServerStore]


def adopt_collection(
    settings: Settings,
    collection: str,
    *,
    server: ServerFactory = open_server_store,
    clock: Callable[[], float] = time.time,
) -> Adopted:
    """Adopt ``collection`` for this site's model and serve it through the alias."""
    warm = settings.warm
    if warm.store != "qdrant":
        raise ConfigError(
            "adopting a collection is for a Qdrant server (warm.store = 'qdrant'): the edge store's "
            "collections are memsync's own"
        )
    name = collection
    if name == warm.collection:
        raise ConfigError(
            f"warm.collection names the collection to adopt, and on a Qdrant server warm.collection is the alias "
            f"every site goes through: set warm.collection to a name of its own (e.g. {name}-memsync), then run "
            f"`memsync adopt-collection {name}`"
        )
    embedder = open_embedder(settings)

    def configured() -> ServerStore:
        return server(settings).configured(warm.collection)

    store = configured()
    try:
        verdict = store.adopt(name, embedder.name, embedder.dims)
    finally:
        store.close()
    # Every site's next request goes to it: the alias moves (the collection it served is retired,
    # dropped after warm.retire_after if memsync made it), and sites index the feed into it from 0.
    pointer = SharedPointer(
        warm.collection,
        configured,
        Collections(settings),
        cursor_file(settings),
        grace=warm.retire_after,
        clock=clock,
    )
    try:
        pointer.switch(name)
    finally:
        pointer.close()
    return Adopted(name, embedder.name, embedder.dims, verdict)
