"""The gap in a move under a shared Qdrant's alias: a site moving memsync's own collection (which an
older memsync served under the configured name itself) under the alias drops the collection, then
makes the alias (``SharedPointer.move_under_alias``). In between, neither a collection nor an alias
has the name. A read that meets the gap waits for the alias and reads again (the same name now
reaches the copy), or answers with a sentence saying so: never with an empty answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from sync.errors import MemsyncError, StoreRejected, StoreUnavailable
from sync.search.collection.shared_pointer import SharedPointer

T = TypeVar("T")

# How long a request that found neither the configured name's collection nor its alias waits for the
# alias (another site is moving the collection under it: it drops one, then makes the other).
GAP_WAIT = 5.0
GAP_POLL = 0.05


class AliasGap:
    """The configured name ``name`` on a shared Qdrant (``shared``; None: the edge store, no gap)."""

    def __init__(self, shared: SharedPointer | None, name: str, stop: threading.Event, wait: float = GAP_WAIT) -> None:
        self.shared = shared
        self.name = name
        self.stop = stop
        self.wait = wait

    def is_open(self) -> bool:
        """Neither a collection nor an alias has the configured name: a site moving the collection
        under the alias has dropped it and not yet made the alias (``SharedPointer.move_under_alias``)."""
        if self.shared is None:
            return False
        try:
            return self.shared.serving() is None and self.shared.origin_of_name() is None
        except MemsyncError:
            return False

    def through(self, read: Callable[[], T]) -> T:
        """``read()``; when it finds the configured name gone in the gap of a move under the alias,
        again once the alias is there (the same name now reaches the copy), or a sentence saying so:
        never an empty answer."""
        try:
            return read()
        except StoreRejected:
            if not self.is_open():
                raise
        deadline = time.monotonic() + self.wait
        while self.is_open():
            if time.monotonic() >= deadline or self.stop.wait(GAP_POLL):
                raise StoreUnavailable(self.sentence())
        return read()

    def sentence(self) -> str:
        name = self.name
        return (
            f"the shared collection {name} is being moved under the alias {name} by a site (a copy, nothing is "
            "embedded) and is out of reach for a moment: search again in a few seconds"
        )
