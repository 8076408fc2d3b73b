"""The daemon's warm layer: the indexer's thread, searches, reindexing, and what status shows.

One process owns an embedded store, so the daemon opens it once and everything else goes through
here: the run loop pokes the indexer after each pass that pushed episodes (and, on the embedded hub,
the hub file's changes poke it when other sites push); the control socket's threads search,
read recent episodes and one episode with its neighbours (``sync.warm.browse``), and reindex.
The embedding model stays loaded while it is used, so a search costs one query embedding, and is
let go after ``warm.unload_after`` idle seconds (``sync.warm.lazy``): an idle daemon does not keep
160 MB for a search that may not come.

Failures never stop syncing. A transient one (store busy, provider down) backs off and retries; an
exhausted quota pauses indexing until the provider says to come back, and ``status`` shows it; a
collection built with another model pauses indexing until ``memsync reindex`` rebuilds it.

Rebuilding is one path for two reasons. ``memsync reindex`` asks for it. And a purge: a pass that
deleted a forgotten episode's point leaves its bytes in the engine's files (qdrant-edge keeps a
deleted point's payload in its WAL, and its segments until a vacuum; measured), so once the feed is
drained the layer rebuilds the collection without it and drops the old one, whose files go with it.
When to do which is decided in ``sync.warm.lifecycle`` (pure); ``sync.warm.rebuilder`` rebuilds,
switches and drops. The promises a crash must not lose (a purge owed, a collection to drop) are in
the cursor file (``sync.warm.cursor``), and a restarted layer keeps them.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from typing import Any, TypeVar

import structlog

from daemon import logs
from daemon.config import Settings
from daemon.control.client import Progress
from daemon.control.server import Handler
from daemon.warm.files import Collections, status_path, write_status
from sync.backbone.base import ChangeFeed, JobLeases
from sync.errors import (
    CollectionMismatch,
    ConfigError,
    ForeignCollection,
    MemsyncError,
    QuotaExhausted,
    StoreRejected,
    StoreUnavailable,
    TransientError,
)
from sync.policy.leases import Claim
from sync.resilience.pacing import Backoff, run_periodically
from sync.resilience.retry import RetryPolicy
from sync.warm import browse
from sync.warm.cursor import CursorFile
from sync.warm.embedders import Embedder, GeminiEmbedder, LocalEmbedder, VoyageEmbedder
from sync.warm.indexer import Indexer, PassReport, Previous
from sync.warm.lazy import LazyEmbedder
from sync.warm.lifecycle import Facts, Step, mismatch_wait, next_step, shown_purge
from sync.warm.locked import LockedStore
from sync.warm.rebuilder import Pointer, Rebuilder
from sync.warm.request import EpisodeRequest, EpisodeView, RecentRequest, SearchRequest, SearchResult
from sync.warm.rerank import Reranker, VoyageReranker
from sync.warm.search import search
from sync.warm.shared import REBUILD_JOB, lease_ms, may_rebuild
from sync.warm.shared_pointer import SharedPointer
from sync.warm.store import CollectionSpec, EdgeStore, ServerStore, VectorStore

log = structlog.get_logger("memsync.warm")
T = TypeVar("T")

MAX_BACKOFF = 60.0
FOREIGN_RETRY = 60.0  # seconds between looks while the serving collection is someone else's
# How long a request that found neither the configured name's collection nor its alias waits for the
# alias (another site is moving the collection under it: it drops one, then makes the other).
GAP_WAIT = 5.0
GAP_POLL = 0.05
INDEXED_POLL = 0.02  # seconds between looks at the feed position while a hook waits for it


# --- wiring: settings to parts ---------------------------------------------------------------------


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
    return EdgeStore(settings.warm_dir / "qdrant")


# --- the layer ---------------------------------------------------------------------------------------


class WarmLayer:
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
    ) -> None:
        self.settings = settings
        self.gap_wait = gap_wait
        self.backbone = backbone
        self.leases = leases  # a shared Qdrant's rebuilds are one site's at a time, under a lease
        self.stop = stop
        self.clock = clock
        self.poked = threading.Event()
        self._new_store = store or (lambda: open_store(settings))
        self.cursor_file = CursorFile(settings.warm_dir / "indexer.json")
        self.shared: SharedPointer | None = None  # store = "qdrant": the alias every site goes through
        self.collections: Pointer = Collections(settings)
        if settings.warm.store == "qdrant":
            self.shared = SharedPointer(
                settings.warm.collection,
                self._new_server_store,
                Collections(settings),
                self.cursor_file,
                grace=settings.warm.retire_after,
                clock=clock,
            )
            self.collections = self.shared
        self.rebuilder = Rebuilder(
            self.collections, self.cursor_file, lambda: LockedStore(self._new_store()), stop.is_set
        )
        self._notice: str | None = None  # the alias moved under this site: what status says
        self._opened_on: str | None = None  # the collection the alias served when this site opened
        self._embedder: Embedder = (
            embedder if embedder is not None else LazyEmbedder(lambda: open_embedder(settings, stop))
        )
        self._reranker: Reranker | None = None
        self._store: LockedStore | None = None
        self._spec: CollectionSpec | None = None
        self._indexer: Indexer | None = None
        self._work = threading.Lock()  # one indexing run at a time: the loop's or a reindex
        self._opening = threading.Lock()  # the first search and the first indexing run race to open
        self._thread: threading.Thread | None = None
        self._state: dict[str, Any] = {"state": "starting", "detail": None}
        self._totals = PassReport()
        # The last purge, for status: {"state": "purging" | "purged" | "failed", "at", "copied", ...}.
        self._purge: dict[str, Any] = {}
        self._backoff = Backoff(RetryPolicy(initial=2 * settings.catch_up_interval, maximum=MAX_BACKOFF, jitter=0.0))

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> WarmLayer:
        self._thread = threading.Thread(target=self._loop, name="memsync-warm", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.stop.set()
        self.poked.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._store is not None:
            self._store.close()
        if self.shared is not None:
            self.shared.close()
        if self._thread is not None:
            self._write_status()

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
        return str(self._state.get("state"))

    @property
    def working(self) -> bool:
        """An indexing run or a reindex is under way."""
        return self._work.locked()

    def _until_release(self, wait: float) -> float:
        """``wait``, cut short to when the idle model is due to be let go."""
        after = self.settings.warm.unload_after
        lazy = self._embedder
        if not after or not isinstance(lazy, LazyEmbedder) or not lazy.loaded:
            return wait
        return min(wait, max(0.05, after - lazy.idle_for()))

    def _release_if_idle(self) -> None:
        after = self.settings.warm.unload_after
        lazy = self._embedder
        if after and isinstance(lazy, LazyEmbedder) and lazy.loaded and lazy.idle_for() >= after:
            with self._work:
                if lazy.release():
                    log.info("embedding model let go while idle", idle_s=round(lazy.idle_for()))
                    self._write_status()

    def _open_collection(self) -> LockedStore:
        """The store, with the active collection open (on first use; kept after)."""
        with self._opening:
            return self._open_collection_once()

    def _new_server_store(self) -> ServerStore:
        store = self._new_store()
        if not isinstance(store, ServerStore):
            raise ConfigError("a shared Qdrant needs a Qdrant server store (warm.store = 'qdrant')")
        return store

    def _open_collection_once(self) -> LockedStore:
        if self._store is None:
            self._store = LockedStore(self._new_store())
            self.rebuilder.drop_leftovers(self._store)
        if self._spec is None:
            embedder = self.embedder
            # CollectionMismatch when it was built with another model: searches and indexing wait
            # for `memsync reindex`, syncing carries on.
            if self.shared is None:
                self._spec = self._store.open_or_create(self.collections.active(), embedder.name, embedder.dims)
            else:
                self._spec = self._open_shared(self._store, embedder)
            self._reranker = open_reranker(self.settings)
        return self._store

    def _open_shared(self, store: LockedStore, embedder: Embedder) -> CollectionSpec:
        """Follow the alias (``sync.warm.shared``) and open through it: every request of this site
        reaches the collection it serves at that moment."""
        assert self.shared is not None

        followed = self.shared.follow(self._create_collection)
        if followed.notice is not None:
            self._notice = followed.notice
            self._write_status()  # status says it now, whether a pass or a search opened
        inner = store.inner
        assert isinstance(inner, ServerStore)
        spec = inner.open_alias(self.settings.warm.collection, followed.physical, embedder.name, embedder.dims)
        self._opened_on = followed.physical
        return spec

    def _create_collection(self, physical: str) -> None:
        """A shared Qdrant's first collection, with this site's model."""
        with self._new_server_store() as made:
            made.open_or_create(physical, self.embedder.name, self.embedder.dims)

    def _follow_if_moved(self) -> None:
        """Another site switched the alias since this site opened (or moved the collection it served
        under the configured name under the alias): reopen, following it (from the rebuild's recorded
        feed position). Called under ``_work``, before a pass."""
        if self.shared is None or self._spec is None:
            return
        # No alias: this site serves the collection of that name itself, until one site moves it.
        if (self.shared.serving() or self.settings.warm.collection) == self._opened_on:
            return
        with self._opening:
            if self._store is not None:
                self._store.close()
            self._store, self._spec, self._indexer = None, None, None

    def _open(self) -> Indexer:
        """The live indexer on the active collection."""
        store = self._open_collection()
        if self._indexer is None:
            self._indexer = self._make_indexer(store, self.collections.active())
            self._indexer.spec = self._spec
        return self._indexer

    def _make_indexer(self, store: VectorStore, collection: str, previous: Previous | None = None) -> Indexer:
        warm = self.settings.warm
        if self.backbone is None:
            raise ValueError("indexing needs the backbone")  # offline search opens without one
        return Indexer(
            backbone=self.backbone,
            store=store,
            embedder=self.embedder,
            collection=collection,
            cursor_file=self.cursor_file,
            page_size=warm.batch_size,
            duplicate_threshold=warm.duplicate_threshold,
            on_failed=lambda pid, why: log.warning("episode not embedded", point=pid, reason=why),
            previous=previous,
        )

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
        paused = self._state.get("pausedUntil")
        if paused is not None and self.clock() < paused:
            return float(min(paused - self.clock(), self.settings.catch_up_interval * 10))
        try:
            with self._work:
                self._follow_if_moved()
                report = self._open().run(stop=self.stop.is_set)
                self._after_pass(report)
        except QuotaExhausted as exc:  # a pause until the provider's reset, not a failure to back off from
            wait = exc.retry_after or MAX_BACKOFF
            self._set("paused", f"{exc.provider} quota exhausted: {exc}", paused_until=self.clock() + wait)
            return wait
        except ForeignCollection as exc:
            # Never written: the person builds memsync's own beside it or adopts it (the sentence
            # says how); the next look finds what they chose.
            self._set("foreign-collection", str(exc))
            return FOREIGN_RETRY
        except CollectionMismatch as exc:
            # Step.WAIT_FOR_REINDEX (``sync.warm.lifecycle``): re-embedding everything is the person's call.
            self._set("needs-reindex", f"{exc} (run: memsync reindex)")
            return mismatch_wait(shared=self.shared is not None, catch_up_interval=self.settings.catch_up_interval)
        except StoreRejected:
            if not self._in_gap():
                raise
            # Another site is moving the collection under the alias: the next pass follows it.
            self._set("retrying", self._gap_sentence())
            return self.settings.catch_up_interval
        self._totals.add(report)
        if report.changes or self._state.get("state") != "ok":
            # An empty look at the feed (every catch_up_interval, idle or not) changes nothing
            # that status shows: no status file write for it.
            self._set("ok", None, last_pass=report)
        return 0.0 if not report.drained and not self.stop.is_set() else self.settings.catch_up_interval

    def _index_failed(self, exc: Exception) -> None:
        if isinstance(exc, TransientError | ConfigError):
            self._set("retrying" if isinstance(exc, TransientError) else "error", str(exc))
            return
        if not self._backoff.failing:
            log.error("indexing failed", exc_info=exc)  # the traceback once; _set says when it recurs
        self._set("error", f"{type(exc).__name__}: {exc}")

    def _set(
        self, state: str, detail: str | None, *, paused_until: float | None = None, last_pass: PassReport | None = None
    ) -> None:
        if (state, detail) != (self._state.get("state"), self._state.get("detail")) and state != "ok":
            log.warning("warm layer", state=state, detail=detail)
        elif state == "ok" and self._state.get("state") not in ("ok", "starting"):
            log.info("warm layer recovered", previous=self._state.get("detail"))
        self._state = {"state": state, "detail": detail, "pausedUntil": paused_until}
        if last_pass is not None:
            self._state["lastPassAt"] = self.clock()
        self._write_status()

    def _write_status(self) -> None:
        active = self.collections.active()
        data = {
            **self._state,
            "purge": shown_purge(self._purge, owed=self.cursor_file.purge_owed(active)),
            "collection": active,
            "model": None if self._spec is None else self._spec.model_name,
            "store": self.settings.warm.store,
            "alias": None if self.shared is None else self.settings.warm.collection,
            "notice": self._notice,
            "modelLoaded": self.model_loaded,
            "cursor": self.cursor_file.read(active),
            "totals": asdict(self._totals),
            "updatedAt": self.clock(),
        }
        try:
            write_status(self.settings, data)
        except OSError:
            log.exception("cannot write the warm layer's status file", path=str(status_path(self.settings)))

    # -- what the control socket serves -------------------------------------------------------------
    def search(self, request: SearchRequest) -> list[SearchResult]:
        store = self._open_collection()
        was_loaded = self.model_loaded
        try:
            return self._through_gap(
                lambda: search(
                    store,
                    self.embedder,
                    request,
                    now_ms=int(self.clock() * 1000),
                    reranker=self._reranker,
                    fusion=self.settings.warm.fusion,
                )
            )
        finally:
            if not was_loaded and self._thread is not None:
                self._write_status()  # status no longer says the model was let go

    def recent(self, request: RecentRequest) -> list[SearchResult]:
        """The latest episodes under a filter (``sync.warm.browse``): no query, no model."""
        store = self._open_collection()
        return self._through_gap(lambda: browse.recent(store, request))

    def episode(self, request: EpisodeRequest) -> EpisodeView:
        """One episode and its session's neighbours (``sync.warm.browse``)."""
        store = self._open_collection()
        return self._through_gap(lambda: browse.episode(store, request))

    def _in_gap(self) -> bool:
        """Neither a collection nor an alias has the configured name: a site moving the collection
        under the alias has dropped it and not yet made the alias (``SharedPointer.move_under_alias``)."""
        if self.shared is None:
            return False
        try:
            return self.shared.serving() is None and self.shared.origin_of_name() is None
        except MemsyncError:
            return False

    def _through_gap(self, read: Callable[[], T]) -> T:
        """``read()``; when it finds the configured name gone in the gap of a move under the alias,
        again once the alias is there (the same name now reaches the copy), or a sentence saying so:
        never an empty answer."""
        try:
            return read()
        except StoreRejected:
            if not self._in_gap():
                raise
        deadline = time.monotonic() + self.gap_wait
        while self._in_gap():
            if time.monotonic() >= deadline or self.stop.wait(GAP_POLL):
                raise StoreUnavailable(self._gap_sentence())
        return read()

    def _gap_sentence(self) -> str:
        name = self.settings.warm.collection
        return (
            f"the shared collection {name} is being moved under the alias {name} by a site (a copy, nothing is "
            "embedded) and is out of reach for a moment: search again in a few seconds"
        )

    def catch_up(self, progress: Callable[[PassReport], None] | None = None) -> PassReport:
        """Index everything the feed holds now, in this thread: ``sync`` without a daemon, and a
        search that finds the index a little behind."""
        with self._work:
            self._follow_if_moved()
            report = self._open().run(stop=self.stop.is_set, progress=progress)
            self._after_pass(report)
        self._totals.add(report)
        self._set("ok", None, last_pass=report)  # for status and the registry: this index has run
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
            report = self._rebuild(progress, "reindex")
        self._totals.add(report)
        self._set("ok", None, last_pass=report)
        self.poked.set()
        return report

    def _after_pass(self, report: PassReport) -> None:
        """What a pass may leave to do: a purge owed, and on a shared Qdrant the collection served
        under the configured name to move under the alias, and the retired collections whose grace is
        over. Called under ``_work``."""
        self._purge_if_owed(report)
        if self.shared is not None:
            if report.drained and not self.stop.is_set():
                self.move_under_alias()
            self.shared.sweep()

    def move_under_alias(self, on_step: Callable[[str], None] | None = None) -> str | None:
        """When this site serves memsync's own collection under the configured name itself (an
        older memsync's, ``Move.MOVE_UNDER_ALIAS``), move it under the alias, holding the rebuild
        lease (slot: the name), so one site moves it and the others follow the alias once it is
        there. The new collection, or None when there is nothing to move or another site holds the
        lease. Call under ``_work`` (a pass calls it once drained)."""
        name = self.settings.warm.collection
        if self.shared is None or self._opened_on != name or self.shared.serving() is not None:
            return None
        if self.leases is None:
            return None  # a search without the backbone: the daemon's pass moves it
        job = f"{REBUILD_JOB}:{name}"
        claim = self.leases.claim_job(job, name, lease_ms(self.settings.warm.retire_after))
        if not may_rebuild(claim):
            log.debug("another site is moving the collection under the alias; serving it until then", collection=name)
            return None
        physical = self.shared.move_under_alias(self.cursor_file.read(name), on_step)
        self.cursor_file.settled(name, dropped=True)
        self.leases.finish_job(job, name, "ok", f"moved {name} under the alias: {physical}")
        self._notice = f"moved collection {name} under the alias {name} (to {physical}, copied, nothing embedded)"
        with self._opening:
            if self._store is not None:
                self._store.close()
            self._store, self._spec, self._indexer = None, None, None
        self._write_status()
        return physical

    def _purge_if_owed(self, report: PassReport) -> None:
        """Rebuild the active collection if it deleted forgotten episodes' points (their bytes are
        still in its files) and the pass drained the feed (``sync.warm.lifecycle``). Called under
        ``_work``."""
        active = self.collections.active()
        facts = Facts(
            drained=report.drained, stopping=self.stop.is_set(), purge_owed=self.cursor_file.purge_owed(active)
        )
        if next_step(facts) is not Step.PURGE:
            return
        log.info("purging forgotten episodes from the search index's files", collection=active)
        self._purge = {"state": "purging", "startedAt": self.clock()}
        self._write_status()
        try:
            report = self._rebuild(None, "purge")
        except RebuildHeld:
            # Another site is rebuilding the shared collection, or has: the next pass follows the
            # alias to the new one, which holds no forgotten point built before it.
            self._purge = {"state": "owed", "at": self.clock(), "detail": "another site holds the rebuild"}
            self._write_status()
            return
        except BaseException as exc:
            # Still owed (the mark goes only with the collection): the next pass tries again.
            self._purge = {"state": "failed", "at": self.clock(), "detail": str(exc)}
            self._write_status()
            raise
        self._purge = {
            "state": "purged",
            "at": self.clock(),
            "copied": report.copied,
            "embedded": report.embedded,
            "archivedMissing": report.archived_missing,
        }
        log.info("search index purged", copied=report.copied, embedded=report.embedded)
        self._write_status()

    def _rebuild(self, progress: Callable[[PassReport], None] | None, why: str) -> PassReport:
        """Rebuild into a fresh collection and switch searches to it (``sync.warm.rebuilder``).
        Call under ``_work``."""

        def install(fresh: LockedStore, builder: Indexer) -> LockedStore | None:
            live, self._store = self._store, fresh
            self._indexer, self._spec = builder, builder.spec
            return live

        slot = self._claim_rebuild(why)
        report = self.rebuilder.rebuild(
            live=self._store,
            live_spec=self._spec,
            make_indexer=self._make_indexer,
            install=install,
            progress=progress,
            why=why,
        )
        if slot is not None and self.leases is not None:
            self.leases.finish_job(slot[0], slot[1], "ok", f"{why}: switched to {self.collections.active()}")
            # Reopen through the alias: the builder's handle reaches its collection directly.
            with self._opening:
                if self._store is not None:
                    self._store.close()
                self._store, self._spec, self._indexer = None, None, None
        return report

    def _claim_rebuild(self, why: str) -> tuple[str, str] | None:
        """On a shared Qdrant, the lease on rebuilding the collection the alias serves (slot: that
        collection), or ``RebuildHeld``; None on the edge store, where this site is alone."""
        if self.shared is None:
            return None
        if self.leases is None:
            raise ConfigError(f"a {why} of a shared Qdrant collection needs the backbone, which holds its lease")
        self._follow_if_moved()
        # The slot is the collection the alias serves now. Followed without opening it: a reindex
        # is also the fix for a collection another model built, which opening refuses.
        slot = self.shared.follow(self._create_collection).physical
        job = f"{REBUILD_JOB}:{self.settings.warm.collection}"
        claim = self.leases.claim_job(job, slot, lease_ms(self.settings.warm.retire_after))
        if not may_rebuild(claim):
            raise RebuildHeld(
                f"another site is rebuilding the shared collection {slot} (or has: searches follow it): "
                f"this {why} is not needed or waits for it"
            )
        if claim is Claim.TAKE_OVER:
            log.warning("took over a rebuild another site left unfinished", collection=slot)
        return job, slot


class RebuildHeld(TransientError):
    """Another site holds the lease on rebuilding the shared collection (or rebuilt it already)."""


def warm_handlers(layer: WarmLayer) -> dict[str, Handler]:
    """What the control socket answers."""

    def do_search(request: Mapping[str, Any], _progress: Progress) -> Any:
        return [r.to_wire() for r in layer.search(SearchRequest.from_wire(request.get("request") or {}))]

    def do_recent(request: Mapping[str, Any], _progress: Progress) -> Any:
        return [r.to_wire() for r in layer.recent(RecentRequest.from_wire(request.get("request") or {}))]

    def do_episode(request: Mapping[str, Any], _progress: Progress) -> Any:
        return layer.episode(EpisodeRequest.from_wire(request.get("request") or {})).to_wire()

    def do_reindex(_request: Mapping[str, Any], progress: Progress) -> Any:
        return asdict(layer.reindex(lambda report: progress(asdict(report))))

    def do_indexed(request: Mapping[str, Any], _progress: Progress) -> Any:
        """Wait until the index reaches feed position ``through`` (default: the feed's end now)."""
        asked = request.get("through")
        through = int(asked) if asked is not None else layer.feed_end()
        cursor = layer.wait_indexed(through, max(0.0, min(float(request.get("timeout") or 0), 3600.0)))
        return {"cursor": cursor, "through": through, "done": cursor >= through}

    def do_purged(request: Mapping[str, Any], _progress: Progress) -> Any:
        """Wait until the index has reached the feed's end and purged what was forgotten."""
        through = layer.feed_end()
        done = layer.wait_purged(through, max(0.0, min(float(request.get("timeout") or 0), 3600.0)))
        return {"through": through, "done": done}

    return {
        "search": do_search,
        "recent": do_recent,
        "episode": do_episode,
        "reindex": do_reindex,
        "indexed": do_indexed,
        "purged": do_purged,
    }


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
