"""The search index running in one process: one store, the indexing thread, searches beside it,
rebuilds (a reindex, a purge) under a lease on a shared Qdrant, and the status it reports. The
daemon's worker process makes one from its settings (``daemon.search_worker.wiring``)."""
