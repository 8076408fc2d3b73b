"""The vector store contract and its two implementations: ``EdgeStore`` (default) and ``ServerStore``.

A store holds one hybrid collection: a dense vector ``dense`` (cosine, sized for the embedding model)
and a sparse vector ``bm25`` whose IDF the engine applies (``Modifier.IDF``). Vectors of different
models are never comparable, so the collection records the model, its dimensions and the BM25
settings it was built with, and ``open_or_create`` refuses a collection built with anything else
(``CollectionMismatch``, a ``ConfigError``): the fix is ``memsync reindex``, never mixing.

Where the record lives: Qdrant server/Cloud keep it in the collection's own ``metadata`` (Qdrant >=
1.16; qdrant-client's local mode too). qdrant-edge has no collection metadata, so ``EdgeStore`` writes
a sidecar ``memsync-collection.json`` beside the shard directory, inside the collection's folder. A
reserved "config point" was rejected: it would show up in counts, scrolls and every filterless search.

Hybrid search is two calls. ``prefetch`` returns a dense and a BM25 list under the same filter, in
one engine call (a planned batch on qdrant-edge, one request to a server), ids and scores only: a
dense score is the cosine to the query, a BM25 score is BM25 with IDF applied by the engine, and a
BM25 list holds only points sharing at least one term with the query. The store does not fuse them:
fusion is a pure decision (``sync.warm.fusion``) and must rank alike on every engine, ties
included. Then ``score`` fetches just the fused winners, with their payloads and their cosine to the
query (which the recency decay is gated by, and which a BM25-only winner would otherwise lack), in
one id-filtered dense query. Payloads are read for the few results shown, not for every candidate.

EdgeStore stores dense vectors as float16: half the memory and a faster brute-force scan (qdrant-edge
builds no HNSW index unless ``optimize()`` runs, and that holds the GIL for minutes at 100k points).
A cosine loses about 1e-4, far below any threshold here; ranks on the labelled set are unchanged.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import uuid
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol, Self

from sync.errors import ConfigError, MemsyncError, PermanentError, TransientError
from sync.jsonfile import write_json_atomically
from sync.warm.bm25 import DEFAULT_BM25, Bm25Config, SparseVector
from sync.warm.request import SearchFilter

if TYPE_CHECKING:
    from qdrant_client import QdrantClient

DENSE: Final = "dense"
SPARSE: Final = "bm25"
RECORD_KEY: Final = "memsync"
RECORD_FORMAT: Final = 1
DEFAULT_PREFETCH_LIMIT: Final = 50

# Payload fields with an index, and the index kind. ``ts`` is milliseconds since the epoch.
PAYLOAD_INDEXES: Final[Mapping[str, str]] = {
    "site": "keyword",
    "agent": "keyword",
    "session": "keyword",
    "tags": "keyword",
    "contentHash": "keyword",
    "ts": "integer",
    "reward": "float",
    "success": "bool",
}

# Frozen forever: every point id derives from it, so changing it orphans every indexed episode.
POINT_ID_NAMESPACE: Final = uuid.UUID("6f3a1c2e-4b7d-5e8f-9a0b-1c2d3e4f5a6b")

_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


# --- errors ------------------------------------------------------------------------------------


class CollectionMismatch(ConfigError):
    """The collection was built with another embedding model, size or BM25 settings."""


class StoreUnavailable(TransientError):
    """The store could not be reached or was busy; worth retrying."""


class StoreLocked(StoreUnavailable):
    """An embedded store is owned by another process (or another open handle); ``path`` names it."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


class StoreRejected(PermanentError):
    """The store refused the request (wrong vector size, bad id, closed store, engine error)."""


# --- values ------------------------------------------------------------------------------------


def point_id(site: str, source_id: str) -> str:
    """The point id of an episode: a UUID5 of (sourceSite, sourceId), stable across runs and machines."""
    # JSON framing keeps ("a:b", "c") and ("a", "b:c") apart.
    return str(uuid.uuid5(POINT_ID_NAMESPACE, json.dumps([site, source_id], ensure_ascii=False)))


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """What a collection was built with: vectors from another spec are not comparable."""

    model_name: str
    dims: int
    bm25: Bm25Config = DEFAULT_BM25

    def to_record(self) -> dict[str, Any]:
        return {"format": RECORD_FORMAT, "model": self.model_name, "dims": self.dims, "bm25": self.bm25.to_dict()}

    @classmethod
    def from_record(cls, collection: str, record: Mapping[str, Any]) -> CollectionSpec:
        try:
            return cls(str(record["model"]), int(record["dims"]), Bm25Config.from_dict(dict(record["bm25"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"collection {collection} has an unreadable memsync record {record!r}") from exc

    def describe(self) -> str:
        return f"model {self.model_name} ({self.dims} dims)"


@dataclass(frozen=True, slots=True)
class WarmPoint:
    """One episode as the store holds it. ``id`` comes from ``point_id``."""

    id: str
    dense: Sequence[float]
    sparse: SparseVector
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class StoredPoint:
    """A point read back by ``get``; vectors only when asked for."""

    id: str
    payload: dict[str, Any]
    dense: tuple[float, ...] | None = None
    sparse: SparseVector | None = None


@dataclass(frozen=True, slots=True)
class Hit:
    """A search result. ``similarity`` is the cosine of the hit's dense vector to the query; ``None``
    from ``sparse_search``, which has no dense query to compare with."""

    id: str
    score: float
    payload: dict[str, Any]
    similarity: float | None


@dataclass(frozen=True, slots=True)
class Scored:
    """A point id and its score in one ranked list."""

    id: str
    score: float


@dataclass(frozen=True, slots=True)
class Prefetched:
    """The two lists hybrid search fuses, each best first."""

    dense: list[Scored]
    sparse: list[Scored]


class VectorStore(Protocol):
    """One hybrid collection. Call ``open_or_create`` first; everything else works on that collection."""

    def open_or_create(
        self, collection: str, model_name: str, dims: int, bm25: Bm25Config = DEFAULT_BM25
    ) -> CollectionSpec: ...

    def upsert(self, points: Sequence[WarmPoint]) -> None: ...

    def prefetch(
        self,
        dense_query: Sequence[float],
        sparse_query: SparseVector,
        limit: int = DEFAULT_PREFETCH_LIMIT,
        filter: SearchFilter | None = None,
    ) -> Prefetched: ...

    def score(self, dense_query: Sequence[float], ids: Sequence[str]) -> list[Hit]:
        """The given points with their payloads, each scored by its cosine to the query (which is
        also its similarity), best first; points that do not exist are left out."""
        ...

    def dense_search(
        self,
        dense_query: Sequence[float],
        limit: int = 10,
        score_threshold: float | None = None,
        filter: SearchFilter | None = None,
    ) -> list[Hit]: ...

    def sparse_search(
        self,
        sparse_query: SparseVector,
        limit: int = 10,
        filter: SearchFilter | None = None,
    ) -> list[Hit]: ...

    def get(self, ids: Sequence[str], with_vectors: bool = False) -> list[StoredPoint]: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def count(self, filter: SearchFilter | None = None) -> int: ...

    def drop(self, collection: str) -> None:
        """Delete another collection of this store and its points (``memsync reindex`` retires the
        one it replaced); refused for the open one. Dropping a missing collection does nothing."""
        ...

    def close(self) -> None: ...


# --- shared helpers ----------------------------------------------------------------------------


def _check_mismatch(collection: str, built: CollectionSpec, wanted: CollectionSpec) -> None:
    if (built.model_name, built.dims) != (wanted.model_name, wanted.dims):
        raise CollectionMismatch(
            f"collection {collection} was built with {built.describe()}; this site is configured for "
            f"{wanted.model_name} ({wanted.dims} dims): run `memsync reindex`"
        )
    if built.bm25 != wanted.bm25:
        raise CollectionMismatch(
            f"collection {collection} was built with BM25 settings {built.bm25.to_dict()}; this site is "
            f"configured for {wanted.bm25.to_dict()}: run `memsync reindex`"
        )


class _Base:
    """State and checks both stores share: the open collection and its spec."""

    _collection: str | None = None
    _spec: CollectionSpec | None = None

    def _opened(self) -> tuple[str, CollectionSpec]:
        if self._collection is None or self._spec is None:
            raise StoreRejected("the vector store is not open: call open_or_create first (or it was closed)")
        return self._collection, self._spec

    @staticmethod
    def _validate_name(collection: str) -> None:
        if not _COLLECTION_NAME.fullmatch(collection):
            raise ConfigError(f"invalid collection name {collection!r}: letters, digits, '_', '-', '.' only")

    def _check_droppable(self, collection: str) -> None:
        self._validate_name(collection)
        if collection == self._collection:
            raise StoreRejected(f"collection {collection} is open here; close it before dropping it")

    def _check_dense(self, vector: Sequence[float], what: str) -> None:
        _, spec = self._opened()
        if len(vector) != spec.dims:
            raise StoreRejected(f"{what} has {len(vector)} dims; the collection holds {spec.dims}-dim vectors")

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


# --- EdgeStore ---------------------------------------------------------------------------------


class EdgeStore(_Base):
    """The real Qdrant engine in-process (qdrant-edge). One directory per collection under ``root``:
    ``<root>/<collection>/shard`` (the engine's files) and ``<root>/<collection>/memsync-collection.json``.

    Only one handle, in one process, may own a shard (the engine locks its WAL): a second opener gets
    ``StoreLocked`` naming the path. Every qdrant-edge call is in this class; it raises bare
    ``Exception``s, mapped by ``_edge_errors`` to ``sync.errors``.
    """

    RECORD_FILE: Final = "memsync-collection.json"

    def __init__(self, root: Path | str) -> None:
        self._root = Path(root)
        self._shard: Any = None  # qdrant_edge.EdgeShard; Any keeps its beta API out of our signatures
        self._path: Path | None = None

    @contextlib.contextmanager
    def _edge_errors(self, doing: str) -> Iterator[None]:
        try:
            yield
        except MemsyncError:
            raise  # ours already say what happened
        except Exception as exc:  # qdrant-edge raises only bare Exception; the message is all we have
            message = str(exc)
            path = self._path or self._root
            if "WouldBlock" in message:  # the WAL's file lock: another handle or process owns the shard
                raise StoreLocked(
                    f"the vector store at {path} is in use by another process or handle (only one may own an "
                    f"embedded store; search through the running daemon): {message}",
                    path,
                ) from exc
            if "not initialized" in message:
                raise StoreRejected(f"the vector store at {path} is closed ({doing})") from exc
            raise StoreRejected(f"qdrant-edge failed to {doing} at {path}: {message}") from exc

    def open_or_create(
        self, collection: str, model_name: str, dims: int, bm25: Bm25Config = DEFAULT_BM25
    ) -> CollectionSpec:
        import qdrant_edge as qe

        self._validate_name(collection)
        if self._shard is not None:
            raise StoreRejected(f"this EdgeStore already has collection {self._collection} open")
        wanted = CollectionSpec(model_name, dims, bm25)
        folder = self._root / collection
        shard_path = folder / "shard"
        record_path = folder / self.RECORD_FILE
        self._path = shard_path
        with self._edge_errors("open the collection"):
            if (shard_path / "segments").exists():
                shard = qe.EdgeShard.load(str(shard_path))
            else:
                config = qe.EdgeConfig(
                    vectors={
                        DENSE: qe.EdgeVectorParams(
                            size=dims, distance=qe.Distance.Cosine, datatype=qe.VectorStorageDatatype.Float16
                        )
                    },
                    sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
                )
                shard = qe.EdgeShard.create(str(shard_path), config)
        try:
            built = self._read_record(collection, record_path) or self._adopt(qe, shard, collection, wanted)
            _check_mismatch(collection, built, wanted)
        except BaseException:
            with contextlib.suppress(Exception):
                shard.close()
            self._path = None
            raise
        self._shard, self._collection, self._spec = shard, collection, built
        return built

    def _adopt(self, qe: Any, shard: Any, collection: str, wanted: CollectionSpec) -> CollectionSpec:
        """Finish a shard that has no record yet: payload indexes, then the record (written last)."""
        assert self._path is not None
        # No record: either we just created the shard, or we crashed before writing the record
        # (adopt it while empty), or something else made it (refuse: its vectors are unknown).
        with self._edge_errors("count points"):
            if shard.count(qe.CountRequest()) > 0:
                raise ConfigError(
                    f"collection {collection} at {self._path} holds points but no {self.RECORD_FILE}: "
                    "its embedding model is unknown; run `memsync reindex`"
                )
        with self._edge_errors("create payload indexes"):
            for name, kind in PAYLOAD_INDEXES.items():
                shard.update(qe.UpdateOperation.create_field_index(name, _edge_schema(qe, kind)))
            shard.flush()
        write_json_atomically(self._path.parent / self.RECORD_FILE, {RECORD_KEY: wanted.to_record()}, durable=True)
        return wanted

    @staticmethod
    def _read_record(collection: str, path: Path) -> CollectionSpec | None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        if not isinstance(data, dict) or not isinstance(data.get(RECORD_KEY), dict):
            raise ConfigError(f"{path} is not a memsync collection record")
        return CollectionSpec.from_record(collection, data[RECORD_KEY])

    def _live(self) -> Any:
        self._opened()
        return self._shard

    def upsert(self, points: Sequence[WarmPoint]) -> None:
        import qdrant_edge as qe

        shard = self._live()
        for p in points:
            self._check_dense(p.dense, f"point {p.id}")
        batch = [
            qe.Point(
                p.id,
                {DENSE: list(p.dense), SPARSE: qe.SparseVector(list(p.sparse.indices), list(p.sparse.values))},
                dict(p.payload),
            )
            for p in points
        ]
        if batch:
            with self._edge_errors("upsert points"):
                shard.update(qe.UpdateOperation.upsert_points(batch))

    def prefetch(
        self,
        dense_query: Sequence[float],
        sparse_query: SparseVector,
        limit: int = DEFAULT_PREFETCH_LIMIT,
        filter: SearchFilter | None = None,
    ) -> Prefetched:
        import qdrant_edge as qe

        shard = self._live()
        self._check_dense(dense_query, "the query vector")
        flt = _edge_filter(qe, filter)
        sparse = qe.SparseVector(list(sparse_query.indices), list(sparse_query.values))
        requests = [
            qe.QueryRequest(limit=limit, query=qe.Query.Nearest(query, using=using), filter=flt, with_payload=False)
            for query, using in ((list(dense_query), DENSE), (sparse, SPARSE))
        ]
        with self._edge_errors("run a hybrid search"):
            dense, bm25 = shard.query_batch(qe.QueryBatchRequest(requests))
        return Prefetched(
            [Scored(str(p.id), float(p.score)) for p in dense], [Scored(str(p.id), float(p.score)) for p in bm25]
        )

    def score(self, dense_query: Sequence[float], ids: Sequence[str]) -> list[Hit]:
        import qdrant_edge as qe

        shard = self._live()
        self._check_dense(dense_query, "the query vector")
        if not ids:
            return []
        request = qe.QueryRequest(
            limit=len(ids),
            query=qe.Query.Nearest(list(dense_query), using=DENSE),
            filter=qe.Filter(must=[qe.HasIdCondition(set(ids))]),
            with_payload=True,
        )
        with self._edge_errors("score points against the query"):
            found = shard.query(request)
        return [Hit(str(p.id), float(p.score), dict(p.payload or {}), float(p.score)) for p in found]

    def dense_search(
        self,
        dense_query: Sequence[float],
        limit: int = 10,
        score_threshold: float | None = None,
        filter: SearchFilter | None = None,
    ) -> list[Hit]:
        import qdrant_edge as qe

        shard = self._live()
        self._check_dense(dense_query, "the query vector")
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(list(dense_query), using=DENSE),
            filter=_edge_filter(qe, filter),
            score_threshold=score_threshold,
            with_payload=True,
        )
        with self._edge_errors("run a dense search"):
            found = shard.query(request)
        return [Hit(str(p.id), float(p.score), dict(p.payload or {}), float(p.score)) for p in found]

    def sparse_search(
        self,
        sparse_query: SparseVector,
        limit: int = 10,
        filter: SearchFilter | None = None,
    ) -> list[Hit]:
        import qdrant_edge as qe

        shard = self._live()
        sparse = qe.SparseVector(list(sparse_query.indices), list(sparse_query.values))
        request = qe.QueryRequest(
            limit=limit,
            query=qe.Query.Nearest(sparse, using=SPARSE),
            filter=_edge_filter(qe, filter),
            with_payload=True,
        )
        with self._edge_errors("run a BM25 search"):
            found = shard.query(request)
        return [Hit(str(p.id), float(p.score), dict(p.payload or {}), None) for p in found]

    def get(self, ids: Sequence[str], with_vectors: bool = False) -> list[StoredPoint]:
        shard = self._live()
        if not ids:
            return []
        with self._edge_errors("retrieve points"):
            # Both flags passed: 0.9.0's stub says optional, the binding requires them.
            records = shard.retrieve(list(ids), True, with_vectors)
        out = []
        for r in records:
            vectors = r.vector if with_vectors and isinstance(r.vector, dict) else {}
            sparse = vectors.get(SPARSE)
            out.append(
                StoredPoint(
                    str(r.id),
                    dict(r.payload or {}),
                    tuple(vectors[DENSE]) if DENSE in vectors else None,
                    SparseVector(tuple(sparse.indices), tuple(sparse.values)) if sparse is not None else None,
                )
            )
        return out

    def delete(self, ids: Sequence[str]) -> None:
        import qdrant_edge as qe

        shard = self._live()
        if ids:
            with self._edge_errors("delete points"):
                shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def count(self, filter: SearchFilter | None = None) -> int:
        import qdrant_edge as qe

        shard = self._live()
        with self._edge_errors("count points"):
            return int(shard.count(qe.CountRequest(exact=True, filter=_edge_filter(qe, filter))))

    def drop(self, collection: str) -> None:
        self._check_droppable(collection)
        folder = self._root / collection
        if folder.is_dir():
            # The engine locks an open shard's WAL: a folder another handle still owns is refused.
            with self._edge_errors("check the collection is not in use"):
                import qdrant_edge as qe

                if (folder / "shard" / "segments").exists():
                    qe.EdgeShard.load(str(folder / "shard")).close()
            shutil.rmtree(folder)

    def close(self) -> None:
        shard, self._shard, self._collection, self._spec = self._shard, None, None, None
        if shard is not None:
            with self._edge_errors("close the collection"):
                shard.flush()
                shard.close()


def _edge_schema(qe: Any, kind: str) -> Any:
    return {
        "keyword": qe.PayloadSchemaType.Keyword,
        "integer": qe.PayloadSchemaType.Integer,
        "float": qe.PayloadSchemaType.Float,
        "bool": qe.PayloadSchemaType.Bool,
    }[kind]


def _edge_filter(qe: Any, flt: SearchFilter | None) -> Any:
    if flt is None or flt.is_empty():
        return None
    must: list[Any] = [
        qe.FieldCondition(key, match=qe.MatchValue(value))
        for key, value in (("site", flt.site), ("agent", flt.agent), ("session", flt.session))
        if value is not None
    ]
    if flt.tags:
        must.append(qe.FieldCondition("tags", match=qe.MatchAny(list(flt.tags))))
    if flt.since_ms is not None:
        must.append(qe.FieldCondition("ts", range=qe.RangeFloat(gte=float(flt.since_ms))))
    return qe.Filter(must=must)


# --- ServerStore -------------------------------------------------------------------------------


class ServerStore(_Base):
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
    ) -> None:
        from qdrant_client import QdrantClient

        self._where = url or location or path or ("shared client" if client is not None else "")
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
            status = exc.status_code or 0
            if status == 429 or status >= 500:
                retry_after = exc.headers.get("retry-after") if exc.headers else None
                raise StoreUnavailable(
                    f"Qdrant at {where} answered {status} to {doing}", _seconds(retry_after)
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
                    raise ConfigError(
                        f"collection {collection} at {self._where} has no memsync record in its metadata (made "
                        "outside memsync, or by a Qdrant older than 1.16 that drops collection metadata): "
                        "its embedding model is unknown; run `memsync reindex`"
                    )
                built = CollectionSpec.from_record(collection, record)
                _check_mismatch(collection, built, wanted)
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

    @staticmethod
    def _check_layout(collection: str, params: Any, spec: CollectionSpec) -> None:
        from qdrant_client import models as qm

        vectors = params.vectors if isinstance(params.vectors, dict) else {}
        sparse = params.sparse_vectors or {}
        dense = vectors.get(DENSE)
        ok = (
            dense is not None
            and dense.size == spec.dims
            and dense.distance == qm.Distance.COSINE
            and SPARSE in sparse
            and sparse[SPARSE].modifier == qm.Modifier.IDF
        )
        if not ok:
            raise ConfigError(
                f"collection {collection} does not have the hybrid layout its record promises (dense "
                f"'{DENSE}' cosine {spec.dims} dims, sparse '{SPARSE}' with IDF): run `memsync reindex`"
            )

    def upsert(self, points: Sequence[WarmPoint]) -> None:
        from qdrant_client import models as qm

        collection, _ = self._opened()
        for p in points:
            self._check_dense(p.dense, f"point {p.id}")
        batch = [
            qm.PointStruct(
                id=p.id,
                vector={DENSE: list(p.dense), SPARSE: _qm_sparse(p.sparse)},
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

        collection, _ = self._opened()
        self._check_dense(dense_query, "the query vector")
        flt = _qm_filter(filter)
        requests = [
            qm.QueryRequest(query=query, using=using, filter=flt, limit=limit, with_payload=False)
            for query, using in ((list(dense_query), DENSE), (_qm_sparse(sparse_query), SPARSE))
        ]
        with self._client_errors("run a hybrid search"):
            dense, bm25 = self._client.query_batch_points(collection, requests)
        return Prefetched(
            [Scored(str(p.id), float(p.score)) for p in dense.points],
            [Scored(str(p.id), float(p.score)) for p in bm25.points],
        )

    def score(self, dense_query: Sequence[float], ids: Sequence[str]) -> list[Hit]:
        from qdrant_client import models as qm

        collection, _ = self._opened()
        self._check_dense(dense_query, "the query vector")
        if not ids:
            return []
        with self._client_errors("score points against the query"):
            found = self._client.query_points(
                collection,
                query=list(dense_query),
                using=DENSE,
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
        collection, _ = self._opened()
        self._check_dense(dense_query, "the query vector")
        with self._client_errors("run a dense search"):
            found = self._client.query_points(
                collection,
                query=list(dense_query),
                using=DENSE,
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
        collection, _ = self._opened()
        with self._client_errors("run a BM25 search"):
            found = self._client.query_points(
                collection,
                query=_qm_sparse(sparse_query),
                using=SPARSE,
                query_filter=_qm_filter(filter),
                limit=limit,
                with_payload=True,
            ).points
        return [Hit(str(p.id), float(p.score), dict(p.payload or {}), None) for p in found]

    def get(self, ids: Sequence[str], with_vectors: bool = False) -> list[StoredPoint]:
        from qdrant_client import models as qm

        collection, _ = self._opened()
        if not ids:
            return []
        with self._client_errors("retrieve points"):
            records = self._client.retrieve(collection, list(ids), with_payload=True, with_vectors=with_vectors)
        out = []
        for r in records:
            vectors: Mapping[str, Any] = r.vector if isinstance(r.vector, dict) else {}
            sparse, dense = vectors.get(SPARSE), vectors.get(DENSE)
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

    def delete(self, ids: Sequence[str]) -> None:
        from qdrant_client import models as qm

        collection, _ = self._opened()
        if ids:
            with self._client_errors("delete points"):
                self._client.delete(collection, qm.PointIdsList(points=list(ids)), wait=True)

    def count(self, filter: SearchFilter | None = None) -> int:
        collection, _ = self._opened()
        with self._client_errors("count points"):
            return self._client.count(collection, count_filter=_qm_filter(filter), exact=True).count

    def drop(self, collection: str) -> None:
        self._check_droppable(collection)
        with self._client_errors(f"drop collection {collection}"):
            if self._client.collection_exists(collection):
                self._client.delete_collection(collection)

    def close(self) -> None:
        self._collection, self._spec = None, None
        if self._owns_client:
            with self._client_errors("close the client"):
                self._client.close()


def _qm_sparse(vector: SparseVector) -> Any:
    from qdrant_client import models as qm

    return qm.SparseVector(indices=list(vector.indices), values=list(vector.values))


def _qm_filter(flt: SearchFilter | None) -> Any:
    from qdrant_client import models as qm

    if flt is None or flt.is_empty():
        return None
    must: list[Any] = [
        qm.FieldCondition(key=key, match=qm.MatchValue(value=value))
        for key, value in (("site", flt.site), ("agent", flt.agent), ("session", flt.session))
        if value is not None
    ]
    if flt.tags:
        must.append(qm.FieldCondition(key="tags", match=qm.MatchAny(any=list(flt.tags))))
    if flt.since_ms is not None:
        must.append(qm.FieldCondition(key="ts", range=qm.Range(gte=flt.since_ms)))
    return qm.Filter(must=must)


def _seconds(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


__all__ = [
    "DENSE",
    "PAYLOAD_INDEXES",
    "SPARSE",
    "CollectionMismatch",
    "CollectionSpec",
    "EdgeStore",
    "Hit",
    "Prefetched",
    "Scored",
    "SearchFilter",
    "ServerStore",
    "StoreLocked",
    "StoreRejected",
    "StoreUnavailable",
    "StoredPoint",
    "VectorStore",
    "WarmPoint",
    "point_id",
]
