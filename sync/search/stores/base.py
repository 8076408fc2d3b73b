"""The vector store contract both engines keep, and the values that cross it.

A store holds one hybrid collection: a dense vector ``dense`` (cosine, sized for the embedding model)
and a sparse vector ``bm25`` whose IDF the engine applies (``Modifier.IDF``). Vectors of different
models are never comparable, so the collection records the model, its dimensions and the BM25
settings it was built with (``CollectionSpec``), and ``open_or_create`` refuses a collection built
with anything else (``CollectionMismatch``, a ``ConfigError``): the fix is ``memsync reindex``, never
mixing. Where the record lives is each engine's business (``edge``, ``server``).

Hybrid search is two calls. ``prefetch`` returns a dense and a BM25 list under the same filter, in
one engine call (a planned batch on qdrant-edge, one request to a server), ids and scores only: a
dense score is the cosine to the query, a BM25 score is BM25 with IDF applied by the engine, and a
BM25 list holds only points sharing at least one term with the query. The store does not fuse them:
fusion is a pure decision (``sync.search.query.ranking.fusion``) and must rank alike on every engine, ties
included. Then ``score`` fetches just the fused winners, with their payloads and their cosine to the
query (which the recency decay is gated by, and which a BM25-only winner would otherwise lack), in
one id-filtered dense query. Payloads are read for the few results shown, not for every candidate.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, Self

from sync.errors import CollectionMismatch, ConfigError, StoreRejected
from sync.search.embedders.bm25 import DEFAULT_BM25, Bm25Config, SparseVector
from sync.search.request import SearchFilter

DENSE: Final = "dense"
SPARSE: Final = "bm25"
RECORD_KEY: Final = "memsync"
RECORD_FORMAT: Final = 1
DEFAULT_PREFETCH_LIMIT: Final = 50

# Frozen forever: every point id derives from it, so changing it orphans every indexed episode.
POINT_ID_NAMESPACE: Final = uuid.UUID("6f3a1c2e-4b7d-5e8f-9a0b-1c2d3e4f5a6b")

_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


def point_id(site: str, source_id: str) -> str:
    """The point id of an episode: a UUID5 of (sourceSite, sourceId), stable across runs and machines."""
    # JSON framing keeps ("a:b", "c") and ("a", "b:c") apart.
    return str(uuid.uuid5(POINT_ID_NAMESPACE, json.dumps([site, source_id], ensure_ascii=False)))


def passage_id(site: str, source_id: str, index: int) -> str:
    """The point id of an episode's passage ``index``: the episode's own id for the first (so a short
    episode, one passage, keeps the id it always had), a UUID5 of (site, sourceId, index) after it.
    Derived, not stored: the episode's first point records how many there are, which is all that a
    delete or a rewrite needs to reach every one."""
    if index == 0:
        return point_id(site, source_id)
    return str(uuid.uuid5(POINT_ID_NAMESPACE, json.dumps([site, source_id, index], ensure_ascii=False)))


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """What a collection was built with: vectors from another spec are not comparable. A collection
    memsync adopted (``sync.search.stores.adoption``) also records the names of its vectors, which
    need not be memsync's own, and that it was ``adopted``: memsync writes it but never drops it."""

    model_name: str
    dims: int
    bm25: Bm25Config = DEFAULT_BM25
    dense_name: str = DENSE
    sparse_name: str = SPARSE
    adopted: bool = False

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "format": RECORD_FORMAT,
            "model": self.model_name,
            "dims": self.dims,
            "bm25": self.bm25.to_dict(),
        }
        if (self.dense_name, self.sparse_name) != (DENSE, SPARSE):
            record["vectors"] = {"dense": self.dense_name, "sparse": self.sparse_name}
        if self.adopted:
            record["adopted"] = True
        return record

    @classmethod
    def from_record(cls, collection: str, record: Mapping[str, Any]) -> CollectionSpec:
        try:
            vectors = dict(record.get("vectors") or {})
            return cls(
                str(record["model"]),
                int(record["dims"]),
                Bm25Config.from_dict(dict(record["bm25"])),
                dense_name=str(vectors.get("dense", DENSE)),
                sparse_name=str(vectors.get("sparse", SPARSE)),
                adopted=record.get("adopted") is True,
            )
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

    def open_as_built(self, collection: str) -> CollectionSpec | None:
        """Open an existing collection with whatever spec it records, to read it (a rebuild copies
        points out of the collection it replaces, whichever model built it); None when it does not
        exist or records no spec. The open collection is then ``collection``, as after
        ``open_or_create``."""
        ...

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
        *,
        with_payload: bool = True,
        offset: int = 0,
    ) -> list[Hit]:
        """BM25 hits, best first, the first ``offset`` skipped; ``with_payload=False``: ids and
        scores only (payloads empty), for a caller that counts or reads a few of them after (with
        ``limit=1, offset=n-1``: whether there are ``n``, one point read instead of ``n``)."""
        ...

    def get(self, ids: Sequence[str], with_vectors: bool = False) -> list[StoredPoint]: ...

    def overwrite_payloads(self, payloads: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        """Replace these points' payloads, their vectors untouched (nothing is sent but the
        payloads): an adopted seed point made memsync's without embedding it again. A point that
        does not exist is left out."""
        ...

    def in_time_order(
        self, filter: SearchFilter | None = None, limit: int = 10, newest_first: bool = True
    ) -> list[StoredPoint]:
        """Up to ``limit`` points under ``filter`` by their payload's ``ts`` (indexed), newest first
        or oldest first, payloads only: recent activity and a session's episodes, no query needed."""
        ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def count(self, filter: SearchFilter | None = None) -> int: ...

    def drop(self, collection: str) -> None:
        """Delete another collection of this store and its points (``memsync reindex`` retires the
        one it replaced); refused for the open one, and (``NotOurs``) for one memsync did not make
        or adopted (``sync.search.stores.adoption.may_drop``), whoever asks. Dropping a missing
        collection does nothing."""
        ...

    def close(self) -> None: ...


def check_mismatch(collection: str, built: CollectionSpec, wanted: CollectionSpec) -> None:
    """CollectionMismatch unless the collection was built as this site is configured."""
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


class StoreBase:
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
