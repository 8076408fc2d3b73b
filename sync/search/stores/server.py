"""``ServerStore``: a Qdrant server or Qdrant Cloud through qdrant-client.

The record of what a collection was built with lives in the collection's own ``metadata`` (Qdrant
>= 1.16; qdrant-client's local mode keeps it too); ``open_or_create`` also checks that the
collection's vectors have the layout the record promises.
"""

from __future__ import annotations

import contextlib
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sync import http
from sync.errors import (
    ConfigError,
    ForeignCollection,
    MemsyncError,
    NotOurs,
    StoreLocked,
    StoreRejected,
    StoreUnavailable,
)
from sync.search.embedders.bm25 import DEFAULT_BM25, Bm25Config, SparseVector
from sync.search.payload import AGENT_KEY, PAYLOAD_INDEXES, SESSION_KEY, SITE_KEY, SOURCE_ID_KEY, TAGS_KEY, TS_KEY
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
    StoreBase,
    StoredPoint,
    WarmPoint,
    check_mismatch,
)

if TYPE_CHECKING:
    from qdrant_client import QdrantClient


class ServerStore(StoreBase):
    """A Qdrant server or Qdrant Cloud through qdrant-client (``url`` + ``api_key``).

    ``location=":memory:"`` (or ``path=``) runs qdrant-client's local mode, a faithful stand-in for
    the server in tests; it accepts payload indexes but ignores them (it scans).
    """

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        location: str | None = None,
        path: str | None = None,
        timeout: int = 10,
        client: QdrantClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from qdrant_client import QdrantClient

        self._clock = clock  # what an HTTP-date Retry-After is counted from
        self._where = url or location or path or ("shared client" if client is not None else "")
        self._configured: str | None = None  # warm.collection, for the refusal's advice (``configured``)
        # A given client is shared (with other stores or the caller), so close() leaves it open.
        self._owns_client = client is None
        if client is not None:
            if any(x is not None for x in (url, location, path)):
                raise ConfigError("give a Qdrant server store either a client or a url/location/path, not both")
            self._client = client
            return
        if sum(x is not None for x in (url, location, path)) != 1:
            raise ConfigError("a Qdrant server store needs exactly one of url, location or path")
        with self._client_errors("connect"):
            # check_compatibility=False: the version probe runs in a background thread whose failure
            # (server down) escapes as an unhandled thread exception; the first real call reports it.
            self._client = QdrantClient(
                url=url, api_key=api_key, location=location, path=path, timeout=timeout, check_compatibility=False
            )

    @contextlib.contextmanager
    def _client_errors(self, doing: str) -> Iterator[None]:
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        where = getattr(self, "_where", "")
        try:
            yield
        except MemsyncError:
            raise  # ours already say what happened
        except UnexpectedResponse as exc:
            status = exc.status_code
            verdict = http.classify(status)
            if verdict is http.Verdict.TRANSIENT:
                header = exc.headers.get("retry-after") if exc.headers else None
                raise StoreUnavailable(
                    f"Qdrant at {where} answered {status} to {doing}", http.retry_after(header, self._clock())
                ) from exc
            if verdict is http.Verdict.AUTH:
                raise ConfigError(
                    f"Qdrant at {where} refused its API key (HTTP {status}) to {doing}: "
                    "check MEMSYNC_WARM__QDRANT_API_KEY"
                ) from exc
            raise StoreRejected(f"Qdrant at {where} refused to {doing}: {status} {exc.content!r}") from exc
        except (ResponseHandlingException, ConnectionError, TimeoutError) as exc:
            raise StoreUnavailable(f"cannot reach Qdrant at {where} to {doing}: {exc}") from exc
        except RuntimeError as exc:  # local mode with path=: another process holds the folder
            if "already accessed" in str(exc):
                raise StoreLocked(
                    f"the vector store at {where} is in use by another process: {exc}", Path(where)
                ) from exc
            raise StoreRejected(f"Qdrant at {where} failed to {doing}: {exc}") from exc
        except (ValueError, TypeError) as exc:  # local mode reports bad input this way
            raise StoreRejected(f"Qdrant at {where} refused to {doing}: {exc}") from exc

    def open_or_create(
        self, collection: str, model_name: str, dims: int, bm25: Bm25Config = DEFAULT_BM25
    ) -> CollectionSpec:
        from qdrant_client import models as qm

        self._validate_name(collection)
        wanted = CollectionSpec(model_name, dims, bm25)
        with self._client_errors("open the collection"):
            if self._client.collection_exists(collection):
                config = self._client.get_collection(collection).config
                record = (config.metadata or {}).get(RECORD_KEY)
                if not isinstance(record, dict):
                    raise ForeignCollection(
                        adoption.foreign_refusal(collection, self._where, configured=self._configured or collection)
                    )
                built = CollectionSpec.from_record(collection, record)
                check_mismatch(collection, built, wanted)
                self._check_layout(collection, config.params, built)
            else:
                self._client.create_collection(
                    collection,
                    vectors_config={DENSE: qm.VectorParams(size=dims, distance=qm.Distance.COSINE)},
                    sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
                    metadata={RECORD_KEY: wanted.to_record()},
                )
                kinds = {
                    "keyword": qm.PayloadSchemaType.KEYWORD,
                    "integer": qm.PayloadSchemaType.INTEGER,
                    "float": qm.PayloadSchemaType.FLOAT,
                    "bool": qm.PayloadSchemaType.BOOL,
                }
                with warnings.catch_warnings():
                    # Local mode warns that it ignores payload indexes; a real server builds them.
                    warnings.filterwarnings("ignore", message="Payload indexes have no effect", category=UserWarning)
                    for name, kind in PAYLOAD_INDEXES.items():
                        self._client.create_payload_index(collection, name, kinds[kind])
                built = wanted
        self._collection, self._spec = collection, built
        return built

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

    @property
    def where(self) -> str:
        """The server, as sentences name it."""
        return self._where

    def configured(self, name: str) -> ServerStore:
        """The site's ``warm.collection``: a refusal of a foreign collection advises by it."""
        self._configured = name
        return self

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

    # -- adopting a collection memsync did not make (``sync.search.stores.adoption``) ------------------
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
    ) -> list[Hit]:
        collection, spec = self._opened()
        with self._client_errors("run a BM25 search"):
            found = self._client.query_points(
                collection,
                query=_qm_sparse(sparse_query),
                using=spec.sparse_name,
                query_filter=_qm_filter(filter),
                limit=limit,
                with_payload=True,
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

    # -- aliases: one lifecycle for every site of a shared server (``sync.search.collection.shared_alias``)
    def alias_target(self, alias: str) -> str | None:
        """The collection ``alias`` serves; None when there is no such alias."""
        with self._client_errors("read the collection aliases"):
            found = self._client.get_aliases().aliases
        return next((a.collection_name for a in found if a.alias_name == alias), None)

    def is_collection(self, name: str) -> bool:
        """A collection (not an alias) has this name."""
        with self._client_errors("list the collections"):
            return any(c.name == name for c in self._client.get_collections().collections)

    def collections_behind(self, alias: str) -> list[tuple[str, dict[str, Any]]]:
        """The collections named ``<alias>-...`` that ``alias`` does not serve, with their metadata."""
        target = self.alias_target(alias)
        with self._client_errors("list the collections"):
            names = [c.name for c in self._client.get_collections().collections]
            return [
                (n, dict(self._client.get_collection(n).config.metadata or {}))
                for n in sorted(names)
                if n.startswith(f"{alias}-") and n != target
            ]

    def switch_alias(self, alias: str, collection: str) -> None:
        """Point ``alias`` at ``collection`` in one atomic update: every site's next request is served
        by it, none by nothing."""
        from qdrant_client import models as qm

        self._validate_name(alias)
        self._validate_name(collection)
        ops: list[Any] = []
        if self.alias_target(alias) is not None:
            ops.append(qm.DeleteAliasOperation(delete_alias=qm.DeleteAlias(alias_name=alias)))
        ops.append(qm.CreateAliasOperation(create_alias=qm.CreateAlias(collection_name=collection, alias_name=alias)))
        with self._client_errors(f"point alias {alias} at {collection}"):
            self._client.update_collection_aliases(change_aliases_operations=ops)

    def record(self, collection: str) -> dict[str, Any] | None:
        """The memsync record of a collection (None: foreign or missing)."""
        with self._client_errors("read the collection's record"):
            if not self._client.collection_exists(collection):
                return None
            record = (self._client.get_collection(collection).config.metadata or {}).get(RECORD_KEY)
        return dict(record) if isinstance(record, dict) else None

    def note(self, collection: str, **fields: Any) -> None:
        """Add ``fields`` to memsync's record of one of its own collections (None removes a field):
        where a rebuild got to, when it was retired. Never to a collection without a record."""
        with self._client_errors("update the collection's record"):
            metadata = dict(self._client.get_collection(collection).config.metadata or {})
            record = metadata.get(RECORD_KEY)
            if not isinstance(record, dict):
                raise NotOurs(f"collection {collection} at {self._where} was not made by memsync: it is never written")
            record = {k: v for k, v in (record | fields).items() if v is not None}
            self._client.update_collection(collection, metadata=metadata | {RECORD_KEY: record})

    def origin_of(self, collection: str) -> adoption.Origin | None:
        """Who made ``collection`` (None: there is no such collection)."""
        with self._client_errors("read the collection's record"):
            if not self._client.collection_exists(collection):
                return None
            return adoption.origin(self._client.get_collection(collection).config.metadata)

    def moved_copy(self, alias: str) -> str | None:
        """The newest verified copy a move under ``alias`` left (its record's ``copyOf``), not retired."""
        copies = [
            name
            for name, metadata in self.collections_behind(alias)
            if isinstance(record := metadata.get(RECORD_KEY), dict)
            and record.get("copyOf") == alias
            and record.get("retiredAt") is None
        ]
        return copies[-1] if copies else None

    def exact_count(self, collection: str) -> int:
        """The points in ``collection``, counted exactly (not the estimate)."""
        with self._client_errors(f"count the points of {collection}"):
            return self._client.count(collection, exact=True).count

    def copy_points(
        self, source: str, dest: str, page_size: int = 256, on_page: Callable[[int], None] | None = None
    ) -> int:
        """Copy every point of ``source`` into ``dest`` as it is (ids, payloads, every vector: nothing
        is embedded); ``on_page(copied so far)`` after each page. Only into a collection memsync made."""
        from qdrant_client import models as qm

        if adoption.origin(self._metadata(dest)) is not adoption.Origin.OURS:
            raise NotOurs(f"collection {dest} at {self._where} was not made by memsync: it is never written")
        copied = 0
        offset: Any = None
        while True:
            with self._client_errors(f"read the points of {source}"):
                records, offset = self._client.scroll(
                    source, limit=page_size, offset=offset, with_payload=True, with_vectors=True
                )
            batch = [qm.PointStruct(id=r.id, vector=r.vector or {}, payload=r.payload or {}) for r in records]
            if batch:
                with self._client_errors(f"copy points into {dest}"):
                    self._client.upsert(dest, batch, wait=True)
            copied += len(batch)
            if on_page is not None and batch:
                on_page(copied)
            if offset is None:
                return copied

    def _metadata(self, collection: str) -> dict[str, Any]:
        with self._client_errors("read the collection's record"):
            return dict(self._client.get_collection(collection).config.metadata or {})

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

    def close(self) -> None:
        self._collection, self._spec = None, None
        if self._owns_client:
            with self._client_errors("close the client"):
                self._client.close()


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


def _qm_sparse(vector: SparseVector) -> Any:
    from qdrant_client import models as qm

    return qm.SparseVector(indices=list(vector.indices), values=list(vector.values))


def _qm_filter(flt: SearchFilter | None) -> Any:
    from qdrant_client import models as qm

    if flt is None or flt.is_empty():
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
    return qm.Filter(must=must)
