"""The search index: every synced episode searchable in a Qdrant hybrid (dense + BM25) collection.

Data flows one way: the backbone's change feed in, points in a vector store, ranked episodes out.
The package's top holds what every room shares; each room is one role:

- ``payload``: the keys of a point's payload, named once: every writer and reader uses them.
- ``request``: what a search asks and answers, as plain data (the control socket's wire format).
- ``embedders``: texts to vectors: the local MiniLM, Gemini and Voyage, loading on first use,
  and BM25's sparse vectors.
- ``stores``: the one ``VectorStore`` interface on two engines (qdrant-edge in-process, a Qdrant
  server), one call at a time, and adopting a collection memsync did not make.
- ``collection``: a collection's life: which one serves, what a crash must not lose, when to purge
  or wait for a reindex, the alias every site of a shared Qdrant goes through.
- ``indexing``: the feed into points: an episode's passages, a page's plan, what a rebuild copies,
  near-duplicate links, the indexer and the rebuilder.
- ``query``: a query into ranked episodes: the pipeline, fusion, ranking, reranking, reading
  episodes without a query, results as text.
- ``service``: all of it running in one process: the indexing thread, searches beside it, rebuilds
  under a lease, and the status it reports.

The package ``__init__`` modules import nothing heavy: ``memsync search``'s fast path and the MCP
server import ``request`` without loading numpy, the embedders or the stores.
"""
