"""A vector store whose calls run one at a time.

In the daemon the indexer thread writes while the control socket's threads search. Neither engine
promises more: qdrant-edge's shard is untested across threads and qdrant-client's local mode is
not thread-safe. Embedding, the slow part, happens outside the store, so the lock is held for
milliseconds: a search waits at most for one upsert of one batch.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from sync.search.embedders.bm25 import DEFAULT_BM25, Bm25Config, SparseVector
from sync.search.stores import (
    DEFAULT_PREFETCH_LIMIT,
    CollectionSpec,
    Hit,
    Prefetched,
    SearchFilter,
    StoredPoint,
    VectorStore,
    WarmPoint,
)


class LockedStore:
    def __init__(self, store: VectorStore) -> None:
        self.inner = store
        self._lock = threading.Lock()

    def open_or_create(
        self, collection: str, model_name: str, dims: int, bm25: Bm25Config = DEFAULT_BM25
    ) -> CollectionSpec:
        with self._lock:
            return self.inner.open_or_create(collection, model_name, dims, bm25)

    def open_as_built(self, collection: str) -> CollectionSpec | None:
        with self._lock:
            return self.inner.open_as_built(collection)

    def upsert(self, points: Sequence[WarmPoint]) -> None:
        with self._lock:
            self.inner.upsert(points)

    def prefetch(
        self,
        dense_query: Sequence[float],
        sparse_query: SparseVector,
        limit: int = DEFAULT_PREFETCH_LIMIT,
        filter: SearchFilter | None = None,
    ) -> Prefetched:
        with self._lock:
            return self.inner.prefetch(dense_query, sparse_query, limit, filter)

    def score(self, dense_query: Sequence[float], ids: Sequence[str]) -> list[Hit]:
        with self._lock:
            return self.inner.score(dense_query, ids)

    def dense_search(
        self,
        dense_query: Sequence[float],
        limit: int = 10,
        score_threshold: float | None = None,
        filter: SearchFilter | None = None,
    ) -> list[Hit]:
        with self._lock:
            return self.inner.dense_search(dense_query, limit, score_threshold, filter)

    def sparse_search(
        self,
        sparse_query: SparseVector,
        limit: int = 10,
        filter: SearchFilter | None = None,
        *,
        with_payload: bool = True,
        offset: int = 0,
    ) -> list[Hit]:
        with self._lock:
            return self.inner.sparse_search(sparse_query, limit, filter, with_payload=with_payload, offset=offset)

    def get(self, ids: Sequence[str], with_vectors: bool = False) -> list[StoredPoint]:
        with self._lock:
            return self.inner.get(ids, with_vectors)

    def in_time_order(
        self, filter: SearchFilter | None = None, limit: int = 10, newest_first: bool = True
    ) -> list[StoredPoint]:
        with self._lock:
            return self.inner.in_time_order(filter, limit, newest_first)

    def overwrite_payloads(self, payloads: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
        with self._lock:
            self.inner.overwrite_payloads(payloads)

    def delete(self, ids: Sequence[str]) -> None:
        with self._lock:
            self.inner.delete(ids)

    def count(self, filter: SearchFilter | None = None) -> int:
        with self._lock:
            return self.inner.count(filter)

    def drop(self, collection: str) -> None:
        with self._lock:
            self.inner.drop(collection)

    def close(self) -> None:
        with self._lock:
            self.inner.close()
