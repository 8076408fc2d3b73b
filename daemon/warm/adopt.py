"""``memsync adopt-collection``: take over a Qdrant collection memsync did not make, when its
vectors fit (``sync.warm.store.adoption`` decides which layouts do), without re-embedding it.

It records the adoption in the collection's metadata (the model this site is configured with, the
vectors memsync must use, and that it was adopted: memsync writes it, never drops it) and points
the configured name at it. Nothing else in the collection changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from daemon.config import Settings
from daemon.warm.files import Collections
from daemon.warm.layer import open_embedder, open_store
from sync.errors import ConfigError
from sync.warm.store import ServerStore
from sync.warm.store.adoption import Verdict


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


def adopt_collection(settings: Settings, collection: str | None) -> Adopted:
    """Adopt ``collection`` (default: ``warm.collection``) for this site's model and serve it."""
    warm = settings.warm
    if warm.store != "qdrant":
        raise ConfigError(
            "adopting a collection is for a Qdrant server (warm.store = 'qdrant'): the edge store's "
            "collections are memsync's own"
        )
    name = collection or warm.collection
    embedder = open_embedder(settings)
    store = open_store(settings)
    assert isinstance(store, ServerStore)
    try:
        verdict = store.adopt(name, embedder.name, embedder.dims)
    finally:
        store.close()
    Collections(settings).switch(name)
    return Adopted(name, embedder.name, embedder.dims, verdict)
