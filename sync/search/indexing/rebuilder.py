"""Applies the collection lifecycle (``sync.search.collection.lifecycle``) with the store: drops
what an interrupted rebuild left, rebuilds into a fresh collection and switches searches to it,
retires the collection it replaced.

A rebuild reads the feed from 0 into a fresh collection and copies every point whose text is
unchanged from the collection it replaces (its vectors too, while the model is the same): a purge
embeds nothing. Searches are served by the old collection until the switch. The promises a crash
must not lose (a collection to drop unless it is active) are written to the cursor file
(``sync.search.collection.cursor``) before each step that could leave one behind, so a restart keeps
them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import structlog

from sync.errors import MemsyncError, NotOurs, TransientError
from sync.search.collection.cursor import CursorFile
from sync.search.collection.lifecycle import leftovers
from sync.search.indexing.copies import Previous
from sync.search.indexing.indexer import Indexer, PassReport
from sync.search.stores import CollectionSpec, VectorStore

log = structlog.get_logger("memsync.warm")


class Pointer(Protocol):
    """Which physical collection serves the configured name: the daemon's ``collections.json`` on
    the edge store, the alias on a shared Qdrant (``sync.search.collection.shared_pointer``)."""

    # True: the collection a switch replaced is dropped at once (one site uses it); False: it is
    # retired, and dropped once no site has used it for a grace (a shared Qdrant).
    drops_at_switch: bool

    def active(self) -> str: ...

    def switch(self, physical: str) -> None: ...

    def fresh(self) -> str: ...

    def building(self, physical: str) -> None:
        """A rebuild is filling ``physical`` (created, not yet switched to)."""
        ...


S = TypeVar("S", bound=VectorStore)  # the caller's store handle (the daemon's is a LockedStore)


class Rebuilder(Generic[S]):
    def __init__(
        self,
        collections: Pointer,
        cursor_file: CursorFile,
        open_store: Callable[[], S],
        stopping: Callable[[], bool],
    ) -> None:
        self.collections = collections
        self.cursor_file = cursor_file
        self.open_store = open_store
        self.stopping = stopping

    def drop_leftovers(self, store: VectorStore) -> None:
        """Collections an interrupted rebuild left: a half-built one, or the one it replaced (whose
        files still hold what a purge was removing). Whichever is not active goes."""
        found = leftovers(self.collections.active(), self.cursor_file.to_drop())
        for name in found.keep:
            self.cursor_file.settled(name, dropped=False)
        for name in found.drop:
            try:
                store.drop(name)
            except NotOurs as exc:
                self._left_in_place(name, exc)
                continue
            except (MemsyncError, OSError):
                # Still listed: the next start tries again; meanwhile it only takes disk space.
                log.exception("could not drop a collection an interrupted rebuild left", collection=name)
                continue
            self.cursor_file.settled(name, dropped=True)
            log.info("dropped a collection an interrupted rebuild left", collection=name)

    def retire(self, physical: str, store: VectorStore | None) -> None:
        """Drop a collection that no longer serves (the old one after a switch, or a half-built one),
        through ``store`` (a handle of its own when there is none)."""
        store = store or self.open_store()
        try:
            store.drop(physical)
        except NotOurs as exc:
            self._left_in_place(physical, exc)
            return
        except Exception:
            # Still listed to drop (``CursorFile.drop_unless_active``): the next start tries again.
            log.exception("could not drop a retired collection; dropping it at the next start", collection=physical)
            return
        self.cursor_file.settled(physical, dropped=True)

    def _left_in_place(self, physical: str, refusal: NotOurs) -> None:
        """A collection memsync did not make (or adopted) no longer serves: it stays where it is,
        with whatever it holds (a forgotten episode's bytes too, when a purge replaced it), and this
        site lets go of it. Deleting it is its owner's call."""
        self.cursor_file.settled(physical, dropped=True)
        log.warning("left a collection memsync did not make in place", collection=physical, why=str(refusal))

    def rebuild(
        self,
        *,
        live: S | None,
        live_spec: CollectionSpec | None,
        make_indexer: Callable[[S, str, Previous | None], Indexer],
        install: Callable[[S, Indexer], S | None],
        progress: Callable[[PassReport], None] | None,
        why: str,
    ) -> PassReport:
        """Fill a fresh collection from the feed (copying from the active one, open in ``live`` with
        ``live_spec`` when it is, what need not be embedded again), switch searches to it, drop the
        old one. ``install`` puts the new collection's store and indexer in service and returns the
        handle they replace. The caller holds its indexing lock."""
        old = self.collections.active()
        new = self.collections.fresh()
        fresh = self.open_store()  # its own handle: the live one keeps serving
        self.drop_leftovers(fresh)
        # Listed before it exists: a crash mid-build leaves it for the next start to drop.
        self.cursor_file.drop_unless_active(new)
        previous, apart = self._previous(old, live, live_spec)
        try:
            builder = make_indexer(fresh, new, previous)
            builder.open()
            self.collections.building(new)
            report = builder.run(stop=self.stopping, progress=progress)
            _check_not_stopped(self.stopping, why)
        except BaseException:
            fresh.close()
            if apart is not None:
                apart.close()
            self.retire(new, live)
            raise
        # Switch: searches move to the complete new collection, then the old one goes. Listed first:
        # a crash between the switch and the drop leaves it (forgotten bytes and all) to the next start.
        # On a shared Qdrant the old one is retired instead: other sites' requests may be in flight.
        drops = self.collections.drops_at_switch
        if drops:
            self.cursor_file.drop_unless_active(old)
        builder.previous = None  # from now on it keeps the new collection in step, as any indexer
        replaced = install(fresh, builder)
        self.collections.switch(new)
        self.cursor_file.settled(new, dropped=False)
        if replaced is not None:
            replaced.close()
        if apart is not None:
            apart.close()
        if drops:
            self.retire(old, fresh)
        else:
            self.cursor_file.settled(old, dropped=True)  # this site is done with it; the sweep drops it
        return report

    def _previous(
        self, old: str, live: VectorStore | None, live_spec: CollectionSpec | None
    ) -> tuple[Previous | None, VectorStore | None]:
        """The collection being replaced, to copy from, and the handle to close afterwards if it
        had to be opened apart (the live one is not open on it: another model built it, or nothing
        opened it yet in this process). None when it cannot be read: everything is embedded."""
        if live is not None and live_spec is not None:
            return Previous(live, live_spec), None
        handle = self.open_store()
        try:
            spec = handle.open_as_built(old)
        except MemsyncError as exc:
            log.warning("cannot read the collection being replaced; embedding everything", error=str(exc))
            spec = None
        if spec is None:
            handle.close()
            return None, None
        return Previous(handle, spec), handle


def _check_not_stopped(stopping: Callable[[], bool], why: str) -> None:
    if stopping():
        raise TransientError(f"{why} interrupted; the previous collection still serves searches")
