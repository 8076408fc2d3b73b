"""``EdgeStore``: the real Qdrant engine in-process, through qdrant-edge (the default store).

Every call to qdrant-edge is in this module: its API changes between 0.x releases and it raises bare
``Exception``s, which ``EdgeStore._edge_errors`` maps to ``sync.errors``.

qdrant-edge has no collection metadata, so the record of what a collection was built with is a
sidecar ``memsync-collection.json`` beside the shard directory, inside the collection's folder. A
reserved "config point" was rejected: it would show up in counts, scrolls and every filterless search.

Dense vectors are stored as float16: half the memory and a faster brute-force scan (qdrant-edge
builds no HNSW index unless ``optimize()`` runs, and that holds the GIL for a minute or more at 100k
points: the daemon runs it in a child process while the index is idle, see ``optimize``).
A cosine loses about 1e-4, far below any threshold here; ranks on the labelled set are unchanged.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from sync.errors import ConfigError, MemsyncError, NotOurs, StoreLocked, StoreRejected
from sync.jsonfile import write_json_atomically
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


class EdgeStore(StoreBase):
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
            check_mismatch(collection, built, wanted)
            self._index_missing(qe, shard)
        except BaseException:
            with contextlib.suppress(Exception):
                shard.close()
            self._path = None
            raise
        self._shard, self._collection, self._spec = shard, collection, built
        return built

    def open_as_built(self, collection: str) -> CollectionSpec | None:
        import qdrant_edge as qe

        self._validate_name(collection)
        if self._shard is not None:
            raise StoreRejected(f"this EdgeStore already has collection {self._collection} open")
        folder = self._root / collection
        shard_path = folder / "shard"
        built = self._read_record(collection, folder / self.RECORD_FILE)
        if built is None or not (shard_path / "segments").exists():
            return None
        self._path = shard_path
        with self._edge_errors("open the collection"):
            shard = qe.EdgeShard.load(str(shard_path))
        self._index_missing(qe, shard)
        self._shard, self._collection, self._spec = shard, collection, built
        return built

    def _index_missing(self, qe: Any, shard: Any) -> None:
        """Create the payload indexes a collection built by an older memsync lacks (a field indexed
        since, as the dream's mark), over the points it holds: once, when it is opened."""
        with self._edge_errors("create payload indexes"):
            missing = {n: k for n, k in STORE_INDEXES.items() if n not in shard.info().payload_schema}
            for name, kind in missing.items():
                shard.update(qe.UpdateOperation.create_field_index(name, _edge_schema(qe, kind)))
            if missing:
                shard.flush()

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
            for name, kind in STORE_INDEXES.items():
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
        *,
        with_payload: bool = True,
        offset: int = 0,
    ) -> list[Hit]:
        import qdrant_edge as qe

        shard = self._live()
        sparse = qe.SparseVector(list(sparse_query.indices), list(sparse_query.values))
        request = qe.QueryRequest(
            limit=limit,
            offset=offset or None,
            query=qe.Query.Nearest(sparse, using=SPARSE),
            filter=_edge_filter(qe, filter),
            with_payload=with_payload,
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

    def in_time_order(
        self, filter: SearchFilter | None = None, limit: int = 10, newest_first: bool = True
    ) -> list[StoredPoint]:
        import qdrant_edge as qe

        shard = self._live()
        direction = qe.Direction.Desc if newest_first else qe.Direction.Asc
        request = qe.ScrollRequest(
            limit=limit,
            filter=_edge_filter(qe, filter),
            with_payload=True,
            with_vector=False,
            order_by=qe.OrderBy(TS_KEY, direction=direction),
        )
        with self._edge_errors("read points in time order"):
            records, _next = shard.scroll(request)
        return [StoredPoint(str(r.id), dict(r.payload or {})) for r in records]

    def overwrite_payloads(self, payloads: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        import qdrant_edge as qe

        shard = self._live()
        there = {p.id for p in self.get([pid for pid, _ in payloads])} if payloads else set()
        for pid, payload in payloads:
            if pid in there:
                with self._edge_errors("overwrite payloads"):
                    shard.update(qe.UpdateOperation.overwrite_payload([pid], dict(payload)))

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
                    shard = qe.EdgeShard.load(str(folder / "shard"))
                    try:
                        # No record and points in it: not made here (see ``_adopt``), never dropped.
                        foreign = not (folder / self.RECORD_FILE).exists() and shard.count(qe.CountRequest()) > 0
                    finally:
                        shard.close()
                    if foreign:
                        raise NotOurs(
                            f"collection {collection} at {folder} holds points but no {self.RECORD_FILE}: "
                            "memsync did not make it and never drops it"
                        )
            shutil.rmtree(folder)

    def optimize(self) -> bool:
        """Build what the engine builds only when asked: the HNSW graph of each segment past the
        indexing threshold (about 13,000 points of 384 float16 dims), merged segments, vacuumed
        deletes. True if anything changed. It holds the GIL throughout (about 80 s at 100,000
        points on two cores), so the daemon runs it in a child process of its own while the index
        is idle (``daemon.search_worker.optimizer``), and kills it when work arrives: the engine
        swaps an optimized segment in only once it is whole."""
        shard = self._live()
        with self._edge_errors("optimize the collection"):
            return bool(shard.optimize())

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
    if flt is None:
        return None
    must: list[Any] = [
        qe.FieldCondition(key, match=qe.MatchValue(value))
        for key, value in (
            (SITE_KEY, flt.site),
            (AGENT_KEY, flt.agent),
            (SESSION_KEY, flt.session),
            (SOURCE_ID_KEY, flt.source_id),
        )
        if value is not None
    ]
    if flt.tags:
        must.append(qe.FieldCondition(TAGS_KEY, match=qe.MatchAny(list(flt.tags))))
    if flt.since_ms is not None:
        must.append(qe.FieldCondition(TS_KEY, range=qe.RangeFloat(gte=float(flt.since_ms))))
    # What a standing dream step hides, left out unless asked for.
    must_not = [] if flt.include_merged else [qe.FieldCondition(DREAM_KEY, match=qe.MatchAny(list(HIDDEN_ROLES)))]
    if not must and not must_not:
        return None
    return qe.Filter(must=must, must_not=must_not)
