"""The warm layer: every synced episode searchable in a Qdrant hybrid (BM25 sparse + dense) collection.

- ``bm25``: sparse vectors computed exactly as Qdrant's server-side ``qdrant/bm25`` does. Pure.
- ``store``: the one ``VectorStore`` interface and its two implementations, ``EdgeStore`` (the real
  engine in-process via qdrant-edge; the default) and ``ServerStore`` (qdrant-client to a Qdrant
  server or Qdrant Cloud). Every qdrant-edge call stays behind ``EdgeStore``: its API changes between
  0.x releases and it raises untyped ``Exception``s, which the adapter maps to ``sync.errors``.
"""
