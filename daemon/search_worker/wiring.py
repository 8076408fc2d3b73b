"""The daemon's settings made into the search index's parts: the embedder, the reranker and the
vector store the ``[warm]`` section names, and ``WarmLayer``, the running index
(``sync.search.service``) as this site's settings configure it. API keys are registered with the
log's redaction as they are read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from daemon import logs
from daemon.config import Settings
from daemon.search_worker.files import index_folder
from sync.backbone.base import ChangeFeed, JobLeases, Links, Uses
from sync.search.embedders.base import Embedder
from sync.search.embedders.gemini import GeminiEmbedder
from sync.search.embedders.lazy import LazyEmbedder
from sync.search.embedders.local import LocalEmbedder
from sync.search.embedders.voyage import VoyageEmbedder
from sync.search.query.ranking.rerank import Reranker, VoyageReranker
from sync.search.service.gap import GAP_WAIT
from sync.search.service.index import IndexService
from sync.search.service.options import IndexOptions
from sync.search.stores import EdgeStore, ServerStore, VectorStore
from sync.usage.table import SalienceTable


def open_embedder(settings: Settings, stop: threading.Event | None = None) -> Embedder:
    warm = settings.warm
    if warm.embedder == "local":
        return LocalEmbedder()
    assert warm.api_key is not None
    key = warm.api_key.get_secret_value()
    logs.register_secrets([key])
    if warm.embedder == "gemini":
        return GeminiEmbedder(
            key, model=warm.model or "gemini-embedding-001", dims=warm.dims or 768, base_url=warm.base_url, stop=stop
        )
    return VoyageEmbedder(
        key, model=warm.model or "voyage-3.5", dims=warm.dims or 1024, base_url=warm.base_url, stop=stop
    )


def open_reranker(settings: Settings) -> Reranker | None:
    warm = settings.warm
    secret = warm.rerank_api_key or (warm.api_key if warm.embedder == "voyage" else None)
    if secret is None or not secret.get_secret_value():
        return None
    logs.register_secrets([secret.get_secret_value()])
    base_url = warm.rerank_base_url or (warm.base_url if warm.embedder == "voyage" else None)
    return VoyageReranker(secret.get_secret_value(), model=warm.rerank_model, base_url=base_url)


def open_server_store(settings: Settings) -> ServerStore:
    """A store on the Qdrant server the settings name (``warm.url``, ``warm.qdrant_api_key``): how a
    command reaches the server, and the seam its tests replace (a store on a shared local-mode client)."""
    warm = settings.warm
    key = None if warm.qdrant_api_key is None else warm.qdrant_api_key.get_secret_value()
    if key:
        logs.register_secrets([key])
    return ServerStore(url=warm.url, api_key=key)


def open_store(settings: Settings) -> VectorStore:
    if settings.warm.store == "qdrant":
        return open_server_store(settings).configured(settings.warm.collection)
    return EdgeStore(index_folder(settings).edge_store)


def index_options(settings: Settings) -> IndexOptions:
    warm = settings.warm
    return IndexOptions(
        collection=warm.collection,
        folder=index_folder(settings),
        store=warm.store,
        catch_up_interval=settings.catch_up_interval,
        batch_size=warm.batch_size,
        duplicate_threshold=warm.duplicate_threshold,
        fusion=warm.fusion,
        retire_after=warm.retire_after,
        unload_after=warm.unload_after,
    )


class WarmLayer(IndexService):
    """The search index as this site's settings configure it: the embedder loaded on first use
    (``LazyEmbedder``) unless one is given, the configured store unless ``store`` makes one."""

    def __init__(
        self,
        settings: Settings,
        backbone: ChangeFeed | None,
        *,
        stop: threading.Event,
        clock: Callable[[], float] = time.time,
        embedder: Embedder | None = None,
        leases: JobLeases | None = None,
        store: Callable[[], VectorStore] | None = None,
        gap_wait: float = GAP_WAIT,
        uses: Uses | None = None,
        links: Links | None = None,
    ) -> None:
        self.settings = settings
        # warm.salience: search weighs the fleet's use of each memory, read from the backbone's
        # uses store in a thread of its own (``sync.usage.table``).
        table = SalienceTable(uses, clock=clock).start(stop) if uses is not None and settings.warm.salience else None
        super().__init__(
            index_options(settings),
            backbone,
            stop=stop,
            store=store or (lambda: open_store(settings)),
            embedder=embedder if embedder is not None else LazyEmbedder(lambda: open_embedder(settings, stop)),
            reranker=lambda: open_reranker(settings),
            clock=clock,
            leases=leases,
            links=links,
            gap_wait=gap_wait,
            salience=None if table is None else table.of,
        )


@contextmanager
def offline_layer(
    settings: Settings,
    backbone: ChangeFeed | None,
    *,
    stop: threading.Event | None = None,
    leases: JobLeases | None = None,
) -> Iterator[WarmLayer]:
    """The warm layer for a command run while no daemon owns the store: search (no backbone
    needed), catching up (``sync``) and reindex (``leases``: a shared Qdrant's rebuild lease)."""
    layer = WarmLayer(settings, backbone, stop=stop or threading.Event(), leases=leases)
    try:
        yield layer
    finally:
        layer.close()
