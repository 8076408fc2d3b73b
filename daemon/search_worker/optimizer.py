"""The search index's idle optimization: the HNSW graph the embedded engine builds only when asked.

qdrant-edge searches a collection it has not optimized by scanning every vector: about 10 ms at
100,000 points, against about 1 ms once its segments carry an HNSW graph. Building the graph
(``EdgeStore.optimize``) holds the GIL for a minute or more at that size, so it cannot run beside
the worker's searches. The daemon (``daemon.search_worker.host``) runs it here, in a child process
of its own, when the worker has exited idle and the index has taken in episodes since the last
optimization (``optimize_due``), and kills it the moment a search or an episode needs the worker:
the engine swaps an optimized segment in only once it is whole, so a killed run loses its work and
nothing else. A collection under the engine's indexing threshold (about 13,000 points) has nothing
to build and the run ends in under a second.

    python -m daemon.search_worker.optimizer [--config F]

Exit status: 0 done (or nothing to do: no collection yet, a Qdrant server, the store in use),
1 the engine failed (logged; the daemon tries again after the next batch of episodes).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import structlog

from daemon import logs
from daemon.config import load_settings
from daemon.search_worker.files import Collections, index_folder
from sync.errors import ConfigError, MemsyncError, StoreLocked

log = structlog.get_logger("memsync.warm")

# Below the agents' work: the graph is an improvement, never urgent.
NICENESS = 10


def optimize_due(*, store: str, after: float, idle_for: float, position: int, optimized_through: int | None) -> bool:
    """Pure. Optimize the edge store once the worker has been gone ``after`` seconds, if the index
    has taken in anything (its feed position moved) since the last run this daemon saw finish;
    ``optimized_through`` None: none yet since the daemon started."""
    if store != "edge" or not after:
        return False
    if optimized_through is not None and position <= optimized_through:
        return False
    return idle_for >= after


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m daemon.search_worker.optimizer", description=__doc__)
    parser.add_argument("--config", type=Path)
    args = parser.parse_args(argv)
    try:
        settings = load_settings(args.config)
    except ConfigError as exc:
        log.error("search index optimization: configuration error", error=str(exc))  # noqa: TRY400 - a sentence
        return 0  # the daemon says so itself; nothing to retry here
    logs.configure(settings.log.level, settings.log.format)
    logs.bind(site=settings.site.name, process="optimizer")
    if settings.warm.store != "edge":
        return 0
    os.nice(NICENESS)
    from sync.search.stores import EdgeStore

    collection = Collections(settings).active()
    store = EdgeStore(index_folder(settings).edge_store)
    try:
        if store.open_as_built(collection) is None:
            return 0
        started = time.monotonic()
        changed = store.optimize()
        points = store.count()
    except StoreLocked:
        log.debug("search index in use; optimization left for the next idle spell")
        return 0
    except MemsyncError as exc:
        log.warning("search index optimization failed", collection=collection, error=str(exc))
        return 1
    finally:
        store.close()
    if changed:
        seconds = round(time.monotonic() - started, 1)
        log.info("search index optimized", collection=collection, points=points, seconds=seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
