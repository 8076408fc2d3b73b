"""The pointer of a shared Qdrant (``sync.search.collection.shared_alias`` decides; this applies):
the configured name is an alias on the server, which every site reads and writes through, and the
site's own ``collections.json`` only remembers which physical collection it last used (so it can
tell that the alias moved, or that its collection went away while it was offline).

It keeps the ``Pointer`` contract of ``sync.search.indexing.rebuilder`` (``active``, ``fresh``,
``switch``, ``building``), and adds ``follow``: look at the alias, do what ``locate`` says, and say
where searches and indexing now go. A switch does not drop the collection it replaces: it marks it
retired, and ``sweep`` drops it once ``grace`` has passed (``drops_at_switch`` is False).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

import structlog

from sync.errors import ConfigError, ForeignCollection, NotOurs, StoreRejected, StoreUnavailable
from sync.search.collection.cursor import CursorFile
from sync.search.collection.shared_alias import Behind, Move, Seen, copy_complete, follow_from, lease_ms, locate, sweep
from sync.search.stores import ServerStore
from sync.search.stores.adoption import Origin, foreign_refusal, origin
from sync.search.stores.base import RECORD_KEY, CollectionSpec

log = structlog.get_logger("memsync.warm")


class Remembered(Protocol):
    """This site's record of the physical collection it last used (``collections.json``)."""

    def recorded(self) -> str | None: ...

    def switch(self, physical: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Followed:
    physical: str  # the collection the alias serves, which this site now indexes
    move: Move
    notice: str | None  # what status and the log say when the alias moved under this site


class SharedPointer:
    drops_at_switch = False  # a retired collection goes after the grace (``sweep``), not at the switch

    def __init__(
        self,
        alias: str,
        open_store: Callable[[], ServerStore],
        remembered: Remembered,
        cursor_file: CursorFile,
        *,
        grace: float,
        clock: Callable[[], float],
    ) -> None:
        self.alias = alias
        self.open_store = open_store
        self.remembered = remembered
        self.cursor_file = cursor_file
        self.grace = grace
        self.clock = clock
        self._admin: ServerStore | None = None

    def _store(self) -> ServerStore:
        if self._admin is None:
            self._admin = self.open_store()
        return self._admin

    def close(self) -> None:
        if self._admin is not None:
            self._admin.close()
            self._admin = None

    # -- the Pointer contract (sync.search.indexing.rebuilder) -------------------------------------
    def active(self) -> str:
        """The collection this site uses: the one it last followed the alias to."""
        return self.remembered.recorded() or self.alias

    def fresh(self) -> str:
        return f"{self.alias}-{datetime.fromtimestamp(self.clock(), UTC).strftime('%Y%m%dT%H%M%S%f')}"

    def building(self, physical: str) -> None:
        """A rebuild under the lease is filling ``physical``: no sweep marks it while the lease runs."""
        self._store().note(physical, buildingUntil=self.clock() + lease_ms(self.grace) / 1000)

    def switch(self, physical: str) -> None:
        """Every site's next request goes to ``physical``: it records the feed position it was built
        through (where a site that follows resumes), the alias moves in one update, and the
        collection it replaced is marked retired (dropped by ``sweep`` after the grace)."""
        store = self._store()
        old = store.alias_target(self.alias)
        store.note(physical, builtThrough=self.cursor_file.read(physical), buildingUntil=None)
        if old is None and store.origin_of(self.alias) is not None:
            # A reindex of memsync's own collection served under the name itself (``locate`` refuses
            # any other): it goes, and the alias takes its name at once (Qdrant has no name for both).
            store.drop(self.alias)
        store.switch_alias(self.alias, physical)
        self.remembered.switch(physical)
        if old is not None and old != physical:
            self._retire(store, old)

    # -- following the alias ----------------------------------------------------------------------------
    def serving(self) -> str | None:
        """The collection the alias serves now (one request)."""
        return self._store().alias_target(self.alias)

    def origin_of_name(self) -> Origin | None:
        """Who made the collection that has the configured name (None: no such collection)."""
        return self._store().origin_of(self.alias)

    def follow(self, create: Callable[[str], None]) -> Followed:
        """Where the alias leads now. ``create(physical)`` makes a collection with this site's model
        (the first one, when there is no alias yet)."""
        store = self._store()
        target = store.alias_target(self.alias)
        bound = self.remembered.recorded()
        plain = store.origin_of(self.alias) if target is None else None
        seen = Seen(
            target=target,
            bound=bound,
            bound_exists=bound is not None and bound != self.alias and store.is_collection(bound),
            name_is_collection=plain is not None,
            name_origin=plain,
            moved=store.moved_copy(self.alias) if target is None and plain is None else None,
        )
        move = locate(seen)
        if move is Move.REFUSE_NAME:
            if plain is Origin.FOREIGN:  # no memsync record: someone else's
                raise ForeignCollection(foreign_refusal(self.alias, store.where, configured=self.alias))
            raise ConfigError(
                f"warm.collection = {self.alias!r} names a collection on the shared Qdrant that memsync adopted, "
                "and memsync serves every site through an alias of that name: set warm.collection to a name of "
                f"its own, then run `memsync adopt-collection {self.alias}` (it serves it under that name)"
            )
        if move is Move.MOVE_UNDER_ALIAS:
            # Served as it is (an older memsync did) until one site has moved it (``move_under_alias``).
            return Followed(self.alias, move, None)
        if move is Move.ALIAS_MOVED:
            assert seen.moved is not None
            store.switch_alias(self.alias, seen.moved)
            log.warning("made the alias on the copy a move under it left", alias=self.alias, collection=seen.moved)
            target, bound = seen.moved, None
            move = Move.STAY
        if move is Move.CREATE:
            physical = self.fresh()
            create(physical)
            store.note(physical, builtThrough=0)
            try:
                store.switch_alias(self.alias, physical)
            except StoreRejected:
                # Another site made the alias first: follow it, and let the spare go (nobody used it).
                store.drop(physical)
                return self.follow(create)
            self.remembered.switch(physical)
            log.info("made the shared collection and its alias", alias=self.alias, collection=physical)
            return Followed(physical, move, None)
        if move is Move.ALIAS_BOUND:
            assert bound is not None
            store.switch_alias(self.alias, bound)
            log.info(
                "every site now reaches this site's collection through the alias", alias=self.alias, collection=bound
            )
            return Followed(bound, move, None)
        assert target is not None
        recorded = (store.record(target) or {}).get("builtThrough") if move is not Move.STAY or bound is None else None
        resume = follow_from(self.cursor_file.read(target), recorded if isinstance(recorded, int) else None)
        if move is Move.STAY:
            if bound is None:
                # A first look (or the first since another site moved the collection under the alias):
                # everything up to the recorded position is in it.
                self.cursor_file.write(target, resume)
                self.remembered.switch(target)
            return Followed(target, move, None)
        self.cursor_file.write(target, resume)
        self.remembered.switch(target)
        if bound is not None:
            self.cursor_file.settled(bound, dropped=True)  # this site is done with it, whatever happens to it
        if move is Move.FOLLOW_GONE:
            notice = (
                f"collection {bound} went away while this site was not looking (another site rebuilt the shared "
                f"index and retired it); following alias {self.alias} to {target}, catching up from feed position "
                f"{resume}"
            )
            log.warning("the shared collection this site used went away", collection=bound, now=target, resume=resume)
        else:
            notice = (
                f"another site rebuilt the shared index: following alias {self.alias} to {target} "
                f"from feed position {resume}"
            )
            log.info("followed the alias to another site's rebuild", collection=target, resume=resume)
        return Followed(target, move, notice)

    # -- moving memsync's own collection under the alias ------------------------------------------------
    def move_under_alias(self, built_through: int, on_step: Callable[[str], None] | None = None) -> str:
        """Replace memsync's own collection served under the configured name by the alias (``locate``:
        ``MOVE_UNDER_ALIAS``; the caller holds the rebuild lease): copy its points, vectors and all,
        into ``<name>-<time>``, verify the copy by count (``copy_complete``), drop it, make the alias
        on the copy at once. ``built_through``: the feed position the copied collection holds
        (sites resume there). ``on_step`` hears "created", "copied N", "verified", "dropped",
        "aliased". The new collection's name."""
        store = self._store()
        step = on_step or (lambda _said: None)
        if store.origin_of(self.alias) is not Origin.OURS:
            raise NotOurs(f"collection {self.alias} at {store.where} is not memsync's own: it is never moved")
        record = store.record(self.alias) or {}
        spec = CollectionSpec.from_record(self.alias, record)
        physical = self.fresh()
        with self.open_store() as made:
            made.open_or_create(physical, spec.model_name, spec.dims, spec.bm25)
        self.building(physical)
        step("created")
        store.copy_points(self.alias, physical, on_page=lambda n: step(f"copied {n}"))
        source, copied = store.exact_count(self.alias), store.exact_count(physical)
        if not copy_complete(source, copied):
            store.drop(physical)
            raise StoreUnavailable(
                f"the copy of {self.alias} holds {copied} points and {self.alias} {source} (a site still indexing "
                f"into it?): {self.alias} stays as it is, and the move is tried again at the next pass"
            )
        # Named as the copy before the drop: a stop between the drop and the alias leaves it findable.
        store.note(physical, builtThrough=built_through, buildingUntil=None, copyOf=self.alias)
        step("verified")
        store.drop(self.alias)
        step("dropped")
        store.switch_alias(self.alias, physical)
        step("aliased")
        self.cursor_file.write(physical, max(built_through, self.cursor_file.read(physical)))
        self.remembered.switch(physical)
        log.info("moved the collection under its alias", alias=self.alias, collection=physical, points=copied)
        return physical

    # -- retiring -------------------------------------------------------------------------------------
    def _retire(self, store: ServerStore, physical: str) -> None:
        try:
            store.note(physical, retiredAt=self.clock())
        except NotOurs:
            log.warning("left a collection memsync did not make in place", collection=physical)

    def sweep(self) -> list[str]:
        """Drop the retired collections no site has used for the grace; the names dropped."""
        store = self._store()
        found = []
        for name, metadata in store.collections_behind(self.alias):
            held = metadata.get(RECORD_KEY)
            record: dict[str, object] = held if isinstance(held, dict) else {}
            retired, building = record.get("retiredAt"), record.get("buildingUntil")
            found.append(
                Behind(
                    name,
                    origin(metadata),
                    float(retired) if isinstance(retired, int | float) else None,
                    float(building) if isinstance(building, int | float) else None,
                )
            )
        decided = sweep(found, now=self.clock(), grace=self.grace)
        for name in decided.mark:
            store.note(name, retiredAt=self.clock())
        for name in decided.drop:
            store.drop(name)
            log.info("dropped a retired collection no site has used for the grace", collection=name)
        return list(decided.drop)
