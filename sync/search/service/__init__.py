"""The search index running in one process. The daemon's worker process makes one from its
settings (``daemon.search_worker.wiring``); ``memsync sync``, ``search`` and ``forget`` make one
when no daemon runs.

- ``index``: ``IndexService``: the indexing loop's thread, catching up and reindexing on request,
  and the reads the control socket serves (search, recent, one episode).
- ``serving``: the collection it serves from: one store handle, its spec, the live indexer,
  opened on first use and again when a shared alias moved.
- ``rebuilds``: reindex, the purge a forget leaves owed, a move under the alias, under a lease.
- ``gap``: a read that meets the moment a move under the alias leaves the name unreachable.
- ``status``: what it reports in ``status.json``.
- ``options``: what it reads of its configuration.
"""
