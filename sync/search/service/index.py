"""The search index running in one process (the daemon's warm layer): the indexer's thread,
searches, reindexing, and what status shows. The daemon makes one from its configuration
(``daemon.search_worker.wiring``) in its worker process.

One process owns an embedded store, so it opens it once and everything else goes through here: the
run loop pokes the indexer after each pass that pushed episodes (and, on the embedded hub, the hub
file's changes poke it when other sites push); the control socket's threads search, read recent
episodes and one episode with its neighbours (``sync.search.query.browse``), and reindex. The
embedding model stays loaded while it is used, so a search costs one query embedding, and is let go
after ``warm.unload_after`` idle seconds (``sync.search.embedders.lazy``): an idle daemon does not
keep 160 MB for a search that may not come.

Failures never stop syncing. A transient one (store busy, provider down) backs off and retries; an
exhausted quota pauses indexing until the provider says to come back, and ``status`` shows it; a
collection built with another model pauses indexing until ``memsync reindex`` rebuilds it.

Rebuilding is one path for two reasons. ``memsync reindex`` asks for it. And a purge: a pass that
deleted a forgotten episode's point leaves its bytes in the engine's files (qdrant-edge keeps a
deleted point's payload in its WAL, and its segments until a vacuum; measured), so once the feed is
drained the layer rebuilds the collection without it and drops the old one, whose files go with it.
When to do which is decided in ``sync.search.collection.lifecycle`` (pure);
``sync.search.indexing.rebuilder`` rebuilds, switches and drops. The promises a crash must not lose
(a purge owed, a collection to drop) are in the cursor file (``sync.search.collection.cursor``),
and a restarted layer keeps them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Self

import structlog

from sync.backbone.base import ChangeFeed, JobLeases, Links
from sync.errors import (
    CollectionMismatch,
    ConfigError,
    ForeignCollection,
    QuotaExhausted,
    StoreRejected,
    TransientError,
)
from sync.resilience.pacing import Backoff, run_periodically
from sync.resilience.retry import RetryPolicy
from sync.search.collection.cursor import CursorFile
from sync.search.collection.files import CollectionsFile
from sync.search.collection.lifecycle import mismatch_wait
from sync.search.collection.shared_pointer import SharedPointer
from sync.search.embedders.base import Embedder
from sync.search.embedders.lazy import LazyEmbedder
from sync.search.indexing.indexer import PassReport
from sync.search.indexing.rebuilder import Pointer, Rebuilder
from sync.search.query import browse
from sync.search.query.pipeline import SalienceOf, answer
from sync.search.query.ranking.rerank import Reranker
from sync.search.request import EpisodeRequest, EpisodeView, RecentRequest, SearchAnswer, SearchRequest, SearchResult
from sync.search.service.gap import GAP_WAIT, AliasGap
from sync.search.service.options import IndexOptions
from sync.search.service.rebuilds import Rebuilds
from sync.search.service.serving import ServingCollection, server_stores
from sync.search.service.status import IndexStatus, Shown
from sync.search.stores import VectorStore
from sync.search.stores.locked import LockedStore

log = structlog.get_logger("memsync.warm")

MAX_BACKOFF = 60.0
FOREIGN_RETRY = 60.0  # seconds between looks while the serving collection is someone else's
INDEXED_POLL = 0.02  # seconds between looks at the feed position while a hook waits for it


class IndexService:
    """The search index in one process: ``start`` runs the indexing loop in a thread, ``search``,
    ``recent`` and ``episode`` read beside it, ``catch_up`` and ``reindex`` run in the caller's
    thread. Made of the serving collection (``serving``), its rebuilds (``rebuilds``), the gap of a
    move under a shared alias (``gap``) and what status shows (``status``)."""

    def __init__(
        self,
        options: IndexOptions,
        backbone: ChangeFeed | None,
        *,
        stop: threading.Event,
        store: Callable[[], VectorStore],
        embedder: Embedder,
        reranker: Callable[[], Reranker | None] = lambda: None,
        clock: Callable[[], float] = time.time,
        leases: JobLeases | None = None,
        gap_wait: float = GAP_WAIT,
        salience: SalienceOf | None = None,
        links: Links | None = None,
    ) -> None:
        self.options = options
        self.salience = salience  # a memory's salience from the fleet's use (None: not weighed)
        self.backbone = backbone
        self.leases = leases  # a shared Qdrant's rebuilds are one site's at a time, under a lease
        self.stop = stop
        self.clock = clock
        self.poked = threading.Event()
        self.cursor_file = CursorFile(options.folder.cursor)
        self.shared: SharedPointer | None = None  # store = "qdrant": the alias every site goes through
        self.collections: Pointer = CollectionsFile(options.folder.collections, options.collection)
        if options.shared:
            self.shared = SharedPointer(
                options.collection,
                server_stores(store),
                CollectionsFile(options.folder.collections, options.collection),
                self.cursor_file,
                grace=options.retire_after,
                clock=clock,
            )
            self.collections = self.shared
        self.rebuilder = Rebuilder(self.collections, self.cursor_file, lambda: LockedStore(store()), stop.is_set)
        self._embedder = embedder
        self.status = IndexStatus(options.folder.status, store=options.store, clock=clock, shown=self._shown)
        self.serving = ServingCollection(
            options,
            backbone,
            new_store=store,
            embedder=embedder,
            reranker=reranker,
            collections=self.collections,
            shared=self.shared,
            rebuilder=self.rebuilder,
            cursor_file=self.cursor_file,
            on_notice=self.status.write,
            links=links,
        )
        self.rebuilds = Rebuilds(
            options,
            serving=self.serving,
            rebuilder=self.rebuilder,
            collections=self.collections,
            shared=self.shared,
            cursor_file=self.cursor_file,
            status=self.status,
            leases=leases,
            stop=stop,
            clock=clock,
        )
        self.gap = AliasGap(self.shared, options.collection, stop, gap_wait)
        self._work = threading.Lock()  # one indexing run at a time: the loop's or a reindex
        self._thread: threading.Thread | None = None
        self._backoff = Backoff(RetryPolicy(initial=2 * options.catch_up_interval, maximum=MAX_BACKOFF, jitter=0.0))

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> Self:
        self._thread = threading.Thread(target=self._loop, name="memsync-warm", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.poked.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.serving.close()
        if self.shared is not None:
            self.shared.close()
        if self._thread is not None:
            self.status.write()

    def poke(self) -> None:
        """New episodes reached the backbone: index them now rather than at the next interval."""
        self.poked.set()

    @property
    def embedder(self) -> Embedder:
        return self._embedder

    @property
    def model_loaded(self) -> bool:
        return not isinstance(self._embedder, LazyEmbedder) or self._embedder.loaded

    @property
    def state(self) -> str:
        return self.status.name

    @property
    def working(self) -> bool:
        """An indexing run or a reindex is under way."""
        return self._work.locked()

    @property
    def gap_wait(self) -> float:
        """How long a read that meets the gap of a move under the alias waits for it (``gap``)."""
        return self.gap.wait

    @gap_wait.setter
    def gap_wait(self, seconds: float) -> None:
        self.gap.wait = seconds

    def _shown(self) -> Shown:
        active = self.collections.active()
        spec = self.serving.spec
        return Shown(
            collection=active,
            cursor=self.cursor_file.read(active),
            purge_owed=self.cursor_file.purge_owed(active),
            model=None if spec is None else spec.model_name,
            alias=None if self.shared is None else self.options.collection,
            notice=self.serving.notice,
            model_loaded=self.model_loaded,
        )

    def _until_release(self, wait: float) -> float:
        """``wait``, cut short to when the idle model is due to be let go."""
        after = self.options.unload_after
        lazy = self._embedder
        if not after or not isinstance(lazy, LazyEmbedder) or not lazy.loaded:
            return wait
        return min(wait, max(0.05, after - lazy.idle_for()))

    def _release_if_idle(self) -> None:
        after = self.options.unload_after
        lazy = self._embedder
        if after and isinstance(lazy, LazyEmbedder) and lazy.loaded and lazy.idle_for() >= after:
            with self._work:
                if lazy.release():
                    log.info("embedding model let go while idle", idle_s=round(lazy.idle_for()))
                    self.status.write()

    # -- the indexing loop ---------------------------------------------------------------------------
    def _loop(self) -> None:
        """The one periodic loop (``sync.resilience.pacing``): a catch-up pass, then wait for a poke or the
        catch-up interval; failures back off 2x, 4x ... the interval, up to MAX_BACKOFF."""
        run_periodically(
            self._index_once,
            stop=self.stop,
            wake=self.poked,
            backoff=self._backoff,
            on_error=self._index_failed,
            cap=self._until_release,
        )

    def _index_once(self) -> float:
        """One catch-up pass; the seconds until the next."""
        self._release_if_idle()
        paused = self.status.state.get("pausedUntil")
        if paused is not None and self.clock() < paused:
            return float(min(paused - self.clock(), self.options.catch_up_interval * 10))
        try:
            with self._work:
                self.serving.follow_if_moved()
                report = self.serving.indexer().run(stop=self.stop.is_set)
                self.rebuilds.after_pass(report)
        except QuotaExhausted as exc:  # a pause until the provider's reset, not a failure to back off from
            wait = exc.retry_after or MAX_BACKOFF
            self.status.set("paused", f"{exc.provider} quota exhausted: {exc}", paused_until=self.clock() + wait)
            return wait
        except ForeignCollection as exc:
            # Never written: the person builds memsync's own beside it or adopts it (the sentence
            # says how); the next look finds what they chose.
            self.status.set("foreign-collection", str(exc))
            return FOREIGN_RETRY
        except CollectionMismatch as exc:
            # Step.WAIT_FOR_REINDEX (``sync.search.collection.lifecycle``): re-embedding everything
            # is the person's call.
            self.status.set("needs-reindex", f"{exc} (run: memsync reindex)")
            return mismatch_wait(shared=self.shared is not None, catch_up_interval=self.options.catch_up_interval)
        except StoreRejected:
            if not self.gap.is_open():
                raise
            # Another site is moving the collection under the alias: the next pass follows it.
            self.status.set("retrying", self.gap.sentence())
            return self.options.catch_up_interval
        self.status.totals.add(report)
        if report.changes or self.status.name != "ok":
            # An empty look at the feed (every catch_up_interval, idle or not) changes nothing
            # that status shows: no status file write for it.
            self.status.set("ok", None, last_pass=report)
        return 0.0 if not report.drained and not self.stop.is_set() else self.options.catch_up_interval

    def _index_failed(self, exc: Exception) -> None:
        if isinstance(exc, TransientError | ConfigError):
            self.status.set("retrying" if isinstance(exc, TransientError) else "error", str(exc))
            return
        if not self._backoff.failing:
            log.error("indexing failed", exc_info=exc)  # the traceback once; status says when it recurs
        self.status.set("error", f"{type(exc).__name__}: {exc}")

    # -- indexing on request ----------------------------------------------------------------------
    def catch_up(self, progress: Callable[[PassReport], None] | None = None) -> PassReport:
        """Index everything the feed holds now, in this thread: ``sync`` without a daemon, and a
        search that finds the index a little behind."""
        with self._work:
            self.serving.follow_if_moved()
            report = self.serving.indexer().run(stop=self.stop.is_set, progress=progress)
            self.rebuilds.after_pass(report)
        self.status.totals.add(report)
        self.status.set("ok", None, last_pass=report)  # for status and the registry: this index has run
        return report

    def feed_end(self) -> int:
        if self.backbone is None:
            raise ValueError("the feed's end needs the backbone")
        return self.backbone.feed_end()

    def indexed_through(self) -> int:
        """The feed position the serving collection has reached."""
        return self.cursor_file.read(self.collections.active())

    def wait_indexed(self, through: int, timeout: float) -> int:
        """Wake the indexing loop and wait until the index has reached feed position ``through``
        (``sync --wait --searchable``); the position reached, which is short of it at the timeout."""
        deadline = time.monotonic() + timeout
        self.poke()
        while (reached := self.indexed_through()) < through and time.monotonic() < deadline:
            if self.stop.wait(INDEXED_POLL):
                break
        return reached

    def wait_purged(self, through: int, timeout: float) -> bool:
        """Wait until the index has reached feed position ``through`` and owes no purge: the
        forgotten episodes' bytes are out of its files (``memsync forget`` waits for it). A pass
        purges under ``_work`` once it has drained the feed, so holding ``_work`` with the cursor
        there and nothing owed means the purge is over."""
        deadline = time.monotonic() + timeout
        while self.wait_indexed(through, max(0.0, deadline - time.monotonic())) >= through:
            if not self._work.acquire(timeout=max(0.0, deadline - time.monotonic())):
                return False
            try:
                owed = self.cursor_file.purge_owed(self.collections.active())
            finally:
                self._work.release()
            if not owed:
                return True
            if time.monotonic() >= deadline or self.stop.wait(INDEXED_POLL):
                return False
        return False

    def reindex(self, progress: Callable[[PassReport], None] | None = None) -> PassReport:
        """Rebuild into a fresh collection with the configured model, then switch searches to it."""
        with self._work:
            report = self.rebuilds.rebuild(progress, "reindex")
        self.status.totals.add(report)
        self.status.set("ok", None, last_pass=report)
        self.poked.set()
        return report

    def move_under_alias(self, on_step: Callable[[str], None] | None = None) -> str | None:
        """``Rebuilds.move_under_alias``: call under ``_work`` (a pass calls it once drained)."""
        return self.rebuilds.move_under_alias(on_step)

    # -- what the control socket serves -------------------------------------------------------------
    def search(self, request: SearchRequest) -> list[SearchResult]:
        """``answer``'s results."""
        return self.answer(request).results

    def answer(self, request: SearchRequest) -> SearchAnswer:
        """The search's results, judged and cut at the floor (``sync.search.query.pipeline.answer``)."""
        store = self.serving.open()
        was_loaded = self.model_loaded
        try:
            return self.gap.through(
                lambda: answer(
                    store,
                    self.embedder,
                    request,
                    now_ms=int(self.clock() * 1000),
                    reranker=self.serving.reranker,
                    fusion=self.options.fusion,
                    salience=self.salience,
                )
            )
        finally:
            if not was_loaded and self._thread is not None:
                self.status.write()  # status no longer says the model was let go

    def recent(self, request: RecentRequest) -> list[SearchResult]:
        """The latest episodes under a filter (``sync.search.query.browse``): no query, no model."""
        store = self.serving.open()
        return self.gap.through(lambda: browse.recent(store, request))

    def episode(self, request: EpisodeRequest) -> EpisodeView:
        """One episode and its session's neighbours (``sync.search.query.browse``)."""
        store = self.serving.open()
        return self.gap.through(lambda: browse.episode(store, request))
