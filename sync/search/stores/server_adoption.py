"""Reading a collection memsync did not make, and adopting it, on a Qdrant server: the I/O around
``sync.search.stores.adoption``'s decisions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sync.errors import ConfigError
from sync.search.embedders.bm25 import DEFAULT_BM25, Bm25Config
from sync.search.stores import adoption
from sync.search.stores.base import RECORD_KEY, CollectionSpec
from sync.search.stores.server_client import ServerConnection


class ServerAdoption(ServerConnection):
    """Adopting a collection memsync did not make (``sync.search.stores.adoption``)."""

    PAYLOAD_SAMPLE = 20  # points whose payload keys say which of memsync's filter fields are missing

    def layout(self, collection: str) -> tuple[adoption.Origin, adoption.Layout] | None:
        """Who made ``collection`` and its vectors, read without opening or changing it; None when
        there is no such collection."""
        self._validate_name(collection)
        with self._client_errors("read the collection's layout"):
            if not self._client.collection_exists(collection):
                return None
            config = self._client.get_collection(collection).config
            records, _ = self._client.scroll(
                collection, limit=self.PAYLOAD_SAMPLE, with_payload=True, with_vectors=False
            )
        return adoption.origin(config.metadata), _layout(config.params, records)

    def adopt(self, collection: str, model_name: str, dims: int, bm25: Bm25Config = DEFAULT_BM25) -> adoption.Verdict:
        """Record ``collection`` (made outside memsync) as adopted for this model, naming the vectors
        memsync must use, when ``adoption.judge`` accepts its layout; ``ConfigError`` naming what
        does not fit otherwise. Its points and vectors are left as they are."""
        found = self.layout(collection)
        if found is None:
            raise ConfigError(f"there is no collection {collection} at {self._where} to adopt")
        made_by, layout = found
        if made_by is not adoption.Origin.FOREIGN:
            raise ConfigError(
                f"collection {collection} at {self._where} is memsync's already ({made_by}): nothing to adopt"
            )
        verdict = adoption.judge(layout, dims)
        if not verdict.adoptable:
            raise ConfigError(
                f"collection {collection} at {self._where} cannot be adopted for {model_name} ({dims} dims): "
                + "; ".join(verdict.problems)
                + ". Build memsync's own beside it instead (set warm.collection to a name of its own)"
            )
        assert verdict.dense is not None
        assert verdict.sparse is not None
        spec = CollectionSpec(
            model_name, dims, bm25, dense_name=verdict.dense, sparse_name=verdict.sparse, adopted=True
        )
        with self._client_errors("record the adoption in the collection's metadata"):
            metadata = dict(self._client.get_collection(collection).config.metadata or {})
            self._client.update_collection(collection, metadata=metadata | {RECORD_KEY: spec.to_record()})
        return verdict


def _layout(params: Any, records: Sequence[Any]) -> adoption.Layout:
    """A collection's vectors as ``adoption.judge`` reads them, from qdrant-client's description."""
    vectors = params.vectors
    named = vectors if isinstance(vectors, dict) else {}
    keys: set[str] = set()
    for r in records:
        keys.update((r.payload or {}).keys())
    return adoption.Layout(
        dense={n: adoption.DenseVector(int(v.size), str(v.distance.value).lower()) for n, v in named.items()},
        sparse_idf={
            n: v.modifier is not None and str(v.modifier.value).lower() == "idf"
            for n, v in (params.sparse_vectors or {}).items()
        },
        unnamed=vectors is not None and not isinstance(vectors, dict),
        payload_keys=frozenset(keys),
        sampled=len(records),
    )
