"""Rebuilding the serving collection: ``memsync reindex``, the purge a forget leaves owed, and, on a
shared Qdrant, moving the collection an older memsync served under the configured name under the
alias.

A reindex and a purge are one path: a fresh collection filled from the feed, copying from the one
it replaces what need not be embedded again (``sync.search.indexing.rebuilder``), then searches
switched to it. A purge runs once a pass has drained the feed and the serving collection owes one
(``sync.search.collection.lifecycle``): a pass that deleted a forgotten episode's point leaves its
bytes in the engine's files, and the rebuild leaves them behind. On a shared Qdrant each rebuild is
one site's at a time, under a job lease in the backbone (slot: the collection being replaced), so
two sites purging at once rebuild it once (``sync.search.collection.shared_alias.may_rebuild``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import structlog

from sync.backbone.base import JobLeases
from sync.errors import ConfigError, TransientError
from sync.leases import Claim
from sync.search.collection.cursor import CursorFile
from sync.search.collection.lifecycle import Facts, Step, next_step
from sync.search.collection.shared_alias import REBUILD_JOB, lease_ms, may_rebuild
from sync.search.collection.shared_pointer import SharedPointer
from sync.search.indexing.indexer import PassReport
from sync.search.indexing.rebuilder import Pointer, Rebuilder
from sync.search.service.options import IndexOptions
from sync.search.service.serving import ServingCollection
from sync.search.service.status import IndexStatus
from sync.search.stores.locked import LockedStore

log = structlog.get_logger("memsync.warm")


class RebuildHeld(TransientError):
    """Another site holds the lease on rebuilding the shared collection (or rebuilt it already)."""


class Rebuilds:
    """Every rebuild of the serving collection; each called under the index's work lock."""

    def __init__(
        self,
        options: IndexOptions,
        *,
        serving: ServingCollection,
        rebuilder: Rebuilder[LockedStore],
        collections: Pointer,
        shared: SharedPointer | None,
        cursor_file: CursorFile,
        status: IndexStatus,
        leases: JobLeases | None,
        stop: threading.Event,
        clock: Callable[[], float],
    ) -> None:
        self.options = options
        self.serving = serving
        self.rebuilder = rebuilder
        self.collections = collections
        self.shared = shared
        self.cursor_file = cursor_file
        self.status = status
        self.leases = leases  # a shared Qdrant's rebuilds are one site's at a time, under a lease
        self.stop = stop
        self.clock = clock

    def after_pass(self, report: PassReport) -> None:
        """What a pass may leave to do: a purge owed, and on a shared Qdrant the collection served
        under the configured name to move under the alias, and the retired collections whose grace is
        over."""
        self.purge_if_owed(report)
        if self.shared is not None:
            if report.drained and not self.stop.is_set():
                self.move_under_alias()
            self.shared.sweep()

    def move_under_alias(self, on_step: Callable[[str], None] | None = None) -> str | None:
        """When this site serves memsync's own collection under the configured name itself (an
        older memsync's, ``Move.MOVE_UNDER_ALIAS``), move it under the alias, holding the rebuild
        lease (slot: the name), so one site moves it and the others follow the alias once it is
        there. The new collection, or None when there is nothing to move or another site holds the
        lease."""
        name = self.options.collection
        if self.shared is None or self.serving.opened_on != name or self.shared.serving() is not None:
            return None
        if self.leases is None:
            return None  # a search without the backbone: the daemon's pass moves it
        job = f"{REBUILD_JOB}:{name}"
        claim = self.leases.claim_job(job, name, lease_ms(self.options.retire_after))
        if not may_rebuild(claim):
            log.debug("another site is moving the collection under the alias; serving it until then", collection=name)
            return None
        physical = self.shared.move_under_alias(self.cursor_file.read(name), on_step)
        self.cursor_file.settled(name, dropped=True)
        self.leases.finish_job(job, name, "ok", f"moved {name} under the alias: {physical}")
        self.serving.notice = (
            f"moved collection {name} under the alias {name} (to {physical}, copied, nothing embedded)"
        )
        self.serving.reset()
        self.status.write()
        return physical

    def purge_if_owed(self, report: PassReport) -> None:
        """Rebuild the active collection if it deleted forgotten episodes' points (their bytes are
        still in its files) and the pass drained the feed (``sync.search.collection.lifecycle``)."""
        active = self.collections.active()
        facts = Facts(
            drained=report.drained, stopping=self.stop.is_set(), purge_owed=self.cursor_file.purge_owed(active)
        )
        if next_step(facts) is not Step.PURGE:
            return
        log.info("purging forgotten episodes from the search index's files", collection=active)
        self.status.purging({"state": "purging", "startedAt": self.clock()})
        try:
            report = self.rebuild(None, "purge")
        except RebuildHeld:
            # Another site is rebuilding the shared collection, or has: the next pass follows the
            # alias to the new one, which holds no forgotten point built before it.
            self.status.purging({"state": "owed", "at": self.clock(), "detail": "another site holds the rebuild"})
            return
        except BaseException as exc:
            # Still owed (the mark goes only with the collection): the next pass tries again.
            self.status.purging({"state": "failed", "at": self.clock(), "detail": str(exc)})
            raise
        purged = {
            "state": "purged",
            "at": self.clock(),
            "copied": report.copied,
            "embedded": report.embedded,
            "archivedMissing": report.archived_missing,
        }
        log.info("search index purged", copied=report.copied, embedded=report.embedded)
        self.status.purging(purged)

    def rebuild(self, progress: Callable[[PassReport], None] | None, why: str) -> PassReport:
        """Rebuild into a fresh collection and switch searches to it
        (``sync.search.indexing.rebuilder``)."""
        slot = self._claim(why)
        report = self.rebuilder.rebuild(
            live=self.serving.store,
            live_spec=self.serving.spec,
            make_indexer=self.serving.make_indexer,
            install=self.serving.install,
            progress=progress,
            why=why,
        )
        if slot is not None and self.leases is not None:
            self.leases.finish_job(slot[0], slot[1], "ok", f"{why}: switched to {self.collections.active()}")
            # Reopen through the alias: the builder's handle reaches its collection directly.
            self.serving.reset()
        return report

    def _claim(self, why: str) -> tuple[str, str] | None:
        """On a shared Qdrant, the lease on rebuilding the collection the alias serves (slot: that
        collection), or ``RebuildHeld``; None on the edge store, where this site is alone."""
        if self.shared is None:
            return None
        if self.leases is None:
            raise ConfigError(f"a {why} of a shared Qdrant collection needs the backbone, which holds its lease")
        self.serving.follow_if_moved()
        # The slot is the collection the alias serves now. Followed without opening it: a reindex
        # is also the fix for a collection another model built, which opening refuses.
        slot = self.shared.follow(self.serving.create_collection).physical
        job = f"{REBUILD_JOB}:{self.options.collection}"
        claim = self.leases.claim_job(job, slot, lease_ms(self.options.retire_after))
        if not may_rebuild(claim):
            raise RebuildHeld(
                f"another site is rebuilding the shared collection {slot} (or has: searches follow it): "
                f"this {why} is not needed or waits for it"
            )
        if claim is Claim.TAKE_OVER:
            log.warning("took over a rebuild another site left unfinished", collection=slot)
        return job, slot
