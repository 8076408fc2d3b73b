"""``ServerStore``: a Qdrant server or Qdrant Cloud through qdrant-client.

The store contract is here; the connection and its error mapping are ``server_client``'s, the
shared alias's operations ``server_aliases``'s, adopting a collection ``server_adoption``'s.

The record of what a collection was built with lives in the collection's own ``metadata`` (Qdrant
>= 1.16; qdrant-client's local mode keeps it too); ``open_or_create`` also checks that the
collection's vectors have the layout the record promises.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any

from sync.errors import ConfigError, ForeignCollection, NotOurs, StoreRejected
from sync.search.embedders.bm25 import DEFAULT_BM25, Bm25Config, SparseVector
from sync.search.payload import (
    AGENT_KEY,
    DREAM_KEY,
    HIDDEN_ROLES,
    SESSION_KEY,
    SITE_KEY,
    SOURCE_ID_KEY,
    STORE_INDEXES,
    TAGS_KEY,
    TS_KEY,
)
from sync.search.request import SearchFilter
from sync.search.stores import adoption
from sync.search.stores.base import (
    DEFAULT_PREFETCH_LIMIT,
    DENSE,
    RECORD_KEY,
    SPARSE,
    CollectionSpec,
    Hit,
    Prefetched,
    Scored,
    StoredPoint,
    WarmPoint,
    check_mismatch,
)
from sync.search.stores.server_adoption import ServerAdoption
from sync.search.stores.server_aliases import ServerAliases


class ServerStore(ServerAliases, ServerAdoption):
    """A Qdrant server or Qdrant Cloud through qdrant-client (``url`` + ``api_key``): the
    ``VectorStore`` contract on one collection, or on an alias (``open_alias``).

    ``location=":memory:"`` (or ``path=``) runs qdrant-client's local mode, a faithful stand-in for
    the server in tests; it accepts payload indexes but ignores them (it scans).
    """

    def open_or_create(
        self, collection: str, model_name: str, dims: int, bm25: Bm25Config = DEFAULT_BM25
    ) -> CollectionSpec:
        from qdrant_client import models as qm

        self._validate_name(collection)
        wanted = CollectionSpec(model_name, dims, bm25)
        with self._client_errors("open the collection"):
            if self._client.collection_exists(collection):
                info = self._client.get_collection(collection)
                config = info.config
                record = (config.metadata or {}).get(RECORD_KEY)
                if not isinstance(record, dict):
                    raise ForeignCollection(
                        adoption.foreign_refusal(collection, self._where, configured=self._configured or collection)
                    )
                built = CollectionSpec.from_record(collection, record)
                check_mismatch(collection, built, wanted)
                self._check_layout(collection, config.params, built)
                # A collection built before a field was indexed (the dream's mark): indexed now.
                self._index_payload(collection, set(info.payload_schema or {}))
            else:
                self._client.create_collection(
                    collection,
                    vectors_config={DENSE: qm.VectorParams(size=dims, distance=qm.Distance.COSINE)},
                    sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
                    metadata={RECORD_KEY: wanted.to_record()},
                )
                self._index_payload(collection, set())
                built = wanted
        self._collection, self._spec = collection, built
        return built

    def _index_payload(self, collection: str, indexed: set[str]) -> None:
        """Create the payload indexes the collection lacks (``indexed``: those it has)."""
        from qdrant_client import models as qm

        kinds = {
            "keyword": qm.PayloadSchemaType.KEYWORD,
            "integer": qm.PayloadSchemaType.INTEGER,
            "float": qm.PayloadSchemaType.FLOAT,
            "bool": qm.PayloadSchemaType.BOOL,
        }
        with warnings.catch_warnings():
            # Local mode warns that it ignores payload indexes; a real server builds them.
            warnings.filterwarnings("ignore", message="Payload indexes have no effect", category=UserWarning)
            for name, kind in STORE_INDEXES.items():
                if name not in indexed:
                    self._client.create_payload_index(collection, name, kinds[kind])

    def open_as_built(self, collection: str) -> CollectionSpec | None:
        self._validate_name(collection)
        with self._client_errors("open the collection"):
            if not self._client.collection_exists(collection):
                return None
            config = self._client.get_collection(collection).config
        record = (config.metadata or {}).get(RECORD_KEY)
        if not isinstance(record, dict):
            return None
        built = CollectionSpec.from_record(collection, record)
        self._collection, self._spec = collection, built
        return built

    @staticmethod
    def _check_layout(collection: str, params: Any, spec: CollectionSpec) -> None:
        from qdrant_client import models as qm

        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        sparse = params.sparse_vectors or {}
        dense = vectors.get(spec.dense_name)
        ok = (
            dense is not None
            and dense.size == spec.dims
            and dense.distance == qm.Distance.COSINE
            and spec.sparse_name in sparse
            and sparse[spec.sparse_name].modifier == qm.Modifier.IDF
        )
        if not ok:
            raise ConfigError(
                f"collection {collection} does not have the hybrid layout its record promises (dense "
                f"'{spec.dense_name}' cosine {spec.dims} dims, sparse '{spec.sparse_name}' with IDF): "
                "run `memsync reindex`"
            )

    def upsert(self, points: Sequence[WarmPoint]) -> None:
        from qdrant_client import models as qm

        collection, spec = self._opened()
        for p in points:
            self._check_dense(p.dense, f"point {p.id}")
        batch = [
            qm.PointStruct(
                id=p.id,
                vector={spec.dense_name: list(p.dense), spec.sparse_name: _qm_sparse(p.sparse)},
                payload=dict(p.payload),
            )
            for p in points
        ]
        if batch:
            with self._client_errors("upsert points"):
                self._client.upsert(collection, batch, wait=True)

    def prefetch(
        self,
        dense_query: Sequence[float],
        sparse_query: SparseVector,
        limit: int = DEFAULT_PREFETCH_LIMIT,
        filter: SearchFilter | None = None,
    ) -> Prefetched:
        from qdrant_client import models as qm

        collection, spec = self._opened()
        self._check_dense(dense_query, "the query vector")
        flt = _qm_filter(filter)
        requests = [
            qm.QueryRequest(query=query, using=using, filter=flt, limit=limit, with_payload=False)
            for query, using in ((list(dense_query), spec.dense_name), (_qm_sparse(sparse_query), spec.sparse_name))
        ]
        with self._client_errors("run a hybrid search"):
            dense, bm25 = self._client.query_batch_points(collection, requests)
        return Prefetched(
            [Scored(str(p.id), float(p.score)) for p in dense.points],
            [Scored(str(p.id), float(p.score)) for p in bm25.points],
        )

    def score(self, dense_query: Sequence[float], ids: Sequence[str]) -> list[Hit]:
        from qdrant_client import models as qm

        collection, spec = self._opened()
        self._check_dense(dense_query, "the query vector")
        if not ids:
            return []
        with self._client_errors("score points against the query"):
            found = self._client.query_points(
                collection,
                query=list(dense_query),
                using=spec.dense_name,
                query_filter=qm.Filter(must=[qm.HasIdCondition(has_id=list(ids))]),
                limit=len(ids),
                with_payload=True,
            ).points
        return [Hit(str(p.id), float(p.score), dict(p.payload or {}), float(p.score)) for p in found]

    def dense_search(
        self,
        dense_query: Sequence[float],
        limit: int = 10,
        score_threshold: float | None = None,
        filter: SearchFilter | None = None,
    ) -> list[Hit]:
        collection, spec = self._opened()
        self._check_dense(dense_query, "the query vector")
        with self._client_errors("run a dense search"):
            found = self._client.query_points(
                collection,
                query=list(dense_query),
                using=spec.dense_name,
                query_filter=_qm_filter(filter),
                score_threshold=score_threshold,
                limit=limit,
                with_payload=True,
            ).points
        return [Hit(str(p.id), float(p.score), dict(p.payload or {}), float(p.score)) for p in found]

    def sparse_search(
        self,
        sparse_query: SparseVector,
        limit: int = 10,
        filter: SearchFilter | None = None,
        *,
        with_payload: bool = True,
        offset: int = 0,
    ) -> list[Hit]:
        collection, spec = self._opened()
        with self._client_errors("run a BM25 search"):
            found = self._client.query_points(
                collection,
                query=_qm_sparse(sparse_query),
                using=spec.sparse_name,
                query_filter=_qm_filter(filter),
                limit=limit,
                offset=offset or None,
                with_payload=with_payload,
            ).points
        return [Hit(str(p.id), float(p.score), dict(p.payload or {}), None) for p in found]

    def get(self, ids: Sequence[str], with_vectors: bool = False) -> list[StoredPoint]:
        from qdrant_client import models as qm

        collection, spec = self._opened()
        if not ids:
            return []
        with self._client_errors("retrieve points"):
            records = self._client.retrieve(collection, list(ids), with_payload=True, with_vectors=with_vectors)
        out = []
        for r in records:
            vectors: Mapping[str, Any] = r.vector if isinstance(r.vector, dict) else {}
            sparse, dense = vectors.get(spec.sparse_name), vectors.get(spec.dense_name)
            out.append(
                StoredPoint(
                    str(r.id),
                    dict(r.payload or {}),
                    tuple(float(x) for x in dense) if isinstance(dense, list) else None,
                    SparseVector(tuple(sparse.indices), tuple(sparse.values))
                    if isinstance(sparse, qm.SparseVector)
                    else None,
                )
            )
        return out

    def overwrite_payloads(self, payloads: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        from qdrant_client import models as qm

        collection, _ = self._opened()
        if not payloads:
            return
        # Only the points that exist: Qdrant refuses the whole batch for a missing id.
        there = {p.id for p in self.get([pid for pid, _ in payloads])}
        operations = [
            qm.OverwritePayloadOperation(overwrite_payload=qm.SetPayload(payload=dict(payload), points=[pid]))
            for pid, payload in payloads
            if pid in there
        ]
        if operations:
            with self._client_errors("overwrite payloads"):
                self._client.batch_update_points(collection, operations, wait=True)

    def delete(self, ids: Sequence[str]) -> None:
        from qdrant_client import models as qm

        collection, _ = self._opened()
        if ids:
            with self._client_errors("delete points"):
                self._client.delete(collection, qm.PointIdsList(points=list(ids)), wait=True)

    def in_time_order(
        self, filter: SearchFilter | None = None, limit: int = 10, newest_first: bool = True
    ) -> list[StoredPoint]:
        from qdrant_client import models as qm

        collection, _ = self._opened()
        direction = qm.Direction.DESC if newest_first else qm.Direction.ASC
        with self._client_errors("read points in time order"):
            records, _next = self._client.scroll(
                collection,
                scroll_filter=_qm_filter(filter),
                limit=limit,
                with_payload=True,
                with_vectors=False,
                order_by=qm.OrderBy(key=TS_KEY, direction=direction),
            )
        return [StoredPoint(str(r.id), dict(r.payload or {})) for r in records]

    def count(self, filter: SearchFilter | None = None) -> int:
        collection, _ = self._opened()
        with self._client_errors("count points"):
            return self._client.count(collection, count_filter=_qm_filter(filter), exact=True).count

    def open_alias(
        self, alias: str, physical: str, model_name: str, dims: int, bm25: Bm25Config = DEFAULT_BM25
    ) -> CollectionSpec:
        """Open ``physical`` with the checks ``open_or_create`` makes, then work through ``alias``:
        searches, writes and deletes reach whatever collection the alias serves at that moment."""
        built = self.open_or_create(physical, model_name, dims, bm25)
        self._collection = alias
        return built

    def drop(self, collection: str) -> None:
        self._check_droppable(collection)
        with self._client_errors(f"drop collection {collection}"):
            if not self._client.collection_exists(collection):
                return
            serving = [a.alias_name for a in self._client.get_aliases().aliases if a.collection_name == collection]
            if serving:
                raise StoreRejected(
                    f"collection {collection} serves alias {serving[0]}: it is never dropped while it does"
                )
            made_by = adoption.origin(self._client.get_collection(collection).config.metadata)
            if not adoption.may_drop(made_by):
                raise NotOurs(
                    f"collection {collection} at {self._where} was "
                    + ("adopted" if made_by is adoption.Origin.ADOPTED else "not made")
                    + " by memsync: memsync never drops it"
                )
            self._client.delete_collection(collection)


def _qm_sparse(vector: SparseVector) -> Any:
    from qdrant_client import models as qm

    return qm.SparseVector(indices=list(vector.indices), values=list(vector.values))


def _qm_filter(flt: SearchFilter | None) -> Any:
    from qdrant_client import models as qm

    if flt is None:
        return None
    must: list[Any] = [
        qm.FieldCondition(key=key, match=qm.MatchValue(value=value))
        for key, value in (
            (SITE_KEY, flt.site),
            (AGENT_KEY, flt.agent),
            (SESSION_KEY, flt.session),
            (SOURCE_ID_KEY, flt.source_id),
        )
        if value is not None
    ]
    if flt.tags:
        must.append(qm.FieldCondition(key=TAGS_KEY, match=qm.MatchAny(any=list(flt.tags))))
    if flt.since_ms is not None:
        must.append(qm.FieldCondition(key=TS_KEY, range=qm.Range(gte=flt.since_ms)))
    # What a standing dream step hides, left out unless asked for.
    must_not = (
        [] if flt.include_merged else [qm.FieldCondition(key=DREAM_KEY, match=qm.MatchAny(any=list(HIDDEN_ROLES)))]
    )
    if not must and not must_not:
        return None
    return qm.Filter(must=must, must_not=must_not)
