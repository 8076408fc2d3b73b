"""The vector store: one hybrid collection (dense + BM25) behind one interface, on two engines.

- ``base``: the ``VectorStore`` contract, the values that cross it (``WarmPoint``, ``Hit``,
  ``Prefetched``, ...), ``point_id`` and ``CollectionSpec`` (what a collection was built with).
- ``edge``: ``EdgeStore``, the real Qdrant engine in-process (qdrant-edge); the default.
- ``server``: ``ServerStore``, a Qdrant server or Qdrant Cloud (qdrant-client), made of its
  connection (``server_client``), the shared alias's operations (``server_aliases``) and adopting
  a collection (``server_adoption``).
- ``adoption``: whose collection it is, and whether memsync may adopt it (pure).
- ``locked``: ``LockedStore``, any store's calls one at a time.

Their errors are in ``sync.errors``: ``StoreUnavailable`` (and ``StoreLocked``), ``StoreRejected``,
``CollectionMismatch``.
"""

from sync.search.request import SearchFilter
from sync.search.stores.base import (
    DEFAULT_PREFETCH_LIMIT,
    DENSE,
    SPARSE,
    CollectionSpec,
    Hit,
    Prefetched,
    Scored,
    StoredPoint,
    VectorStore,
    WarmPoint,
    passage_id,
    point_id,
)
from sync.search.stores.edge import EdgeStore
from sync.search.stores.server import ServerStore

__all__ = [
    "DEFAULT_PREFETCH_LIMIT",
    "DENSE",
    "SPARSE",
    "CollectionSpec",
    "EdgeStore",
    "Hit",
    "Prefetched",
    "Scored",
    "SearchFilter",
    "ServerStore",
    "StoredPoint",
    "VectorStore",
    "WarmPoint",
    "passage_id",
    "point_id",
]
