"""What the running index reports, in ``status.json``: its state, the last purge and the totals of
its passes, beside what it serves (``memsync status``, the registry's heartbeat and the demo read
it, never importing the index).

The states: ``starting``; ``ok``; ``retrying`` (a transient failure, backing off); ``paused`` (a
provider's exhausted quota, until ``pausedUntil``); ``needs-reindex`` (the collection was built
with another model or BM25 settings); ``foreign-collection`` (the configured name is a collection
memsync did not make); ``error``. A new state is logged once, not at every look that finds it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import structlog

from sync.jsonfile import write_json_atomically
from sync.search.collection.lifecycle import shown_purge
from sync.search.indexing.indexer import PassReport

log = structlog.get_logger("memsync.warm")


@dataclass(frozen=True, slots=True)
class Shown:
    """What the status document shows of the index beside its state, read as it is written."""

    collection: str  # the physical collection that serves
    cursor: int  # the feed position it has reached
    purge_owed: bool  # a forget was applied whose bytes are still in its files
    model: str | None  # the model the open collection was built with (None: not open yet)
    alias: str | None  # the alias every site goes through, on a shared Qdrant
    notice: str | None  # the alias moved under this site
    model_loaded: bool


class IndexStatus:
    """The index's state as ``status`` shows it, written to ``path`` at each change."""

    def __init__(self, path: Path, *, store: str, clock: Callable[[], float], shown: Callable[[], Shown]) -> None:
        self.path = path
        self.store = store
        self.clock = clock
        self._shown = shown
        self.state: dict[str, Any] = {"state": "starting", "detail": None}
        self.totals = PassReport()
        # The last purge: {"state": "purging" | "purged" | "failed" | "owed", "at", "copied", ...}.
        self.purge: dict[str, Any] = {}

    @property
    def name(self) -> str:
        return str(self.state.get("state"))

    def set(
        self, state: str, detail: str | None, *, paused_until: float | None = None, last_pass: PassReport | None = None
    ) -> None:
        if (state, detail) != (self.state.get("state"), self.state.get("detail")) and state != "ok":
            log.warning("warm layer", state=state, detail=detail)
        elif state == "ok" and self.state.get("state") not in ("ok", "starting"):
            log.info("warm layer recovered", previous=self.state.get("detail"))
        self.state = {"state": state, "detail": detail, "pausedUntil": paused_until}
        if last_pass is not None:
            self.state["lastPassAt"] = self.clock()
        self.write()

    def purging(self, purge: dict[str, Any]) -> None:
        """Where the purge is (``purge`` as status shows it), written at once."""
        self.purge = purge
        self.write()

    def write(self) -> None:
        shown = self._shown()
        data = {
            **self.state,
            "purge": shown_purge(self.purge, owed=shown.purge_owed),
            "collection": shown.collection,
            "model": shown.model,
            "store": self.store,
            "alias": shown.alias,
            "notice": shown.notice,
            "modelLoaded": shown.model_loaded,
            "cursor": shown.cursor,
            "totals": asdict(self.totals),
            "updatedAt": self.clock(),
        }
        try:
            write_json_atomically(self.path, data)
        except OSError:
            log.exception("cannot write the warm layer's status file", path=str(self.path))
