"""The collection this process serves from and indexes into: one store handle (its calls one at a
time, ``LockedStore``), the spec the collection was built with, the live indexer and the reranker,
opened on first use and kept.

On a shared Qdrant every request goes through the alias (``sync.search.collection.shared_alias``
decides where it points, ``SharedPointer`` follows it): the handle is opened on the collection the
alias serves and works through the alias, and it is opened again when another site has moved the
alias since (a rebuild's switch, a move under the alias), from the position the rebuild recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from sync.backbone.base import ChangeFeed, Links
from sync.errors import ConfigError
from sync.search.collection.cursor import CursorFile
from sync.search.collection.shared_pointer import SharedPointer
from sync.search.embedders.base import Embedder
from sync.search.indexing.copies import Previous
from sync.search.indexing.indexer import Indexer
from sync.search.indexing.rebuilder import Pointer, Rebuilder
from sync.search.query.ranking.rerank import Reranker
from sync.search.service.options import IndexOptions
from sync.search.stores import CollectionSpec, ServerStore, VectorStore
from sync.search.stores.locked import LockedStore

log = structlog.get_logger("memsync.warm")


def server_stores(new_store: Callable[[], VectorStore]) -> Callable[[], ServerStore]:
    """``new_store`` where a shared Qdrant needs a Qdrant server store, which it must make."""

    def made() -> ServerStore:
        store = new_store()
        if not isinstance(store, ServerStore):
            raise ConfigError("a shared Qdrant needs a Qdrant server store (warm.store = 'qdrant')")
        return store

    return made


class ServingCollection:
    def __init__(
        self,
        options: IndexOptions,
        backbone: ChangeFeed | None,
        *,
        new_store: Callable[[], VectorStore],
        embedder: Embedder,
        reranker: Callable[[], Reranker | None],
        collections: Pointer,
        shared: SharedPointer | None,
        rebuilder: Rebuilder[LockedStore],
        cursor_file: CursorFile,
        on_notice: Callable[[], None],
        links: Links | None = None,
    ) -> None:
        self.options = options
        self.backbone = backbone
        self.links = links
        self._new_store = new_store
        self._new_server_store = server_stores(new_store)
        self.embedder = embedder
        self._open_reranker = reranker  # opened with the collection, as the embedder's key is used
        self.collections = collections
        self.shared = shared
        self.rebuilder = rebuilder
        self.cursor_file = cursor_file
        self._on_notice = on_notice  # status shows the notice from now on
        self.notice: str | None = None  # the alias moved under this site: what status says
        self.opened_on: str | None = None  # the collection the alias served when this site opened
        self.store: LockedStore | None = None
        self.spec: CollectionSpec | None = None
        self.reranker: Reranker | None = None
        self._indexer: Indexer | None = None
        self._opening = threading.Lock()  # the first search and the first indexing run race to open

    def open(self) -> LockedStore:
        """The store, with the active collection open (on first use; kept after)."""
        with self._opening:
            return self._open_once()

    def _open_once(self) -> LockedStore:
        if self.store is None:
            self.store = LockedStore(self._new_store())
            self.rebuilder.drop_leftovers(self.store)
        if self.spec is None:
            embedder = self.embedder
            # CollectionMismatch when it was built with another model: searches and indexing wait
            # for `memsync reindex`, syncing carries on.
            if self.shared is None:
                self.spec = self.store.open_or_create(self.collections.active(), embedder.name, embedder.dims)
            else:
                self.spec = self._open_shared(self.store, embedder)
            self.reranker = self._open_reranker()
        return self.store

    def _open_shared(self, store: LockedStore, embedder: Embedder) -> CollectionSpec:
        """Follow the alias (``sync.search.collection.shared_alias``) and open through it: every
        request of this site reaches the collection it serves at that moment."""
        assert self.shared is not None

        followed = self.shared.follow(self.create_collection)
        if followed.notice is not None:
            self.notice = followed.notice
            self._on_notice()  # status says it now, whether a pass or a search opened
        inner = store.inner
        assert isinstance(inner, ServerStore)
        spec = inner.open_alias(self.options.collection, followed.physical, embedder.name, embedder.dims)
        self.opened_on = followed.physical
        return spec

    def create_collection(self, physical: str) -> None:
        """A shared Qdrant's first collection, with this site's model."""
        with self._new_server_store() as made:
            made.open_or_create(physical, self.embedder.name, self.embedder.dims)

    def follow_if_moved(self) -> None:
        """Another site switched the alias since this site opened (or moved the collection it served
        under the configured name under the alias): reopen, following it (from the rebuild's recorded
        feed position). Called under the index's work lock, before a pass."""
        if self.shared is None or self.spec is None:
            return
        # No alias: this site serves the collection of that name itself, until one site moves it.
        if (self.shared.serving() or self.options.collection) == self.opened_on:
            return
        self.reset()

    def reset(self) -> None:
        """Close the handle: the next request opens the collection again, wherever it now is."""
        with self._opening:
            if self.store is not None:
                self.store.close()
            self.store, self.spec, self._indexer = None, None, None

    def indexer(self) -> Indexer:
        """The live indexer on the active collection."""
        store = self.open()
        if self._indexer is None:
            self._indexer = self.make_indexer(store, self.collections.active())
            self._indexer.spec = self.spec
        return self._indexer

    def make_indexer(self, store: VectorStore, collection: str, previous: Previous | None = None) -> Indexer:
        options = self.options
        if self.backbone is None:
            raise ValueError("indexing needs the backbone")  # offline search opens without one
        return Indexer(
            backbone=self.backbone,
            store=store,
            embedder=self.embedder,
            collection=collection,
            cursor_file=self.cursor_file,
            page_size=options.batch_size,
            duplicate_threshold=options.duplicate_threshold,
            on_failed=lambda pid, why: log.warning("episode not embedded", point=pid, reason=why),
            previous=previous,
            links=self.links,
        )

    def install(self, fresh: LockedStore, builder: Indexer) -> LockedStore | None:
        """A rebuild's collection in service: its handle and indexer serve from now on; the handle
        they replace, to close."""
        live, self.store = self.store, fresh
        self._indexer, self.spec = builder, builder.spec
        return live

    def close(self) -> None:
        if self.store is not None:
            self.store.close()
