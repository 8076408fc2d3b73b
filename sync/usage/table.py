"""The fleet's use of its memories as the search reads it: a table of each used or pinned memory's
totals, read from the backbone's uses store when the index starts and every ``refresh_s`` seconds
after (in a thread of its own: a search never waits on the backbone), answering a memory's
salience (``sync.policy.salience``) from memory.

The ranking does not count a memory's age twice: the recency decay already weighs it
(``sync.search.query.ranking.rank.decay``), so a memory nobody used ranks at the policy's initial value
(a factor of 1), and only use (and the time since it) moves a result. Measured on LoCoMo
(``bench/salience_lab.py``): decaying never-used memories by their age as well cost recall.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Final

import structlog

from sync.backbone.base import MemoryKey, Uses, UseTotals
from sync.policy.salience import DEFAULT_PARAMS, SalienceParams, Use, salience

log = structlog.get_logger("memsync.salience")

REFRESH_S: Final = 60.0


class SalienceTable:
    def __init__(
        self,
        uses: Uses,
        *,
        clock: Callable[[], float] = time.time,
        params: SalienceParams = DEFAULT_PARAMS,
        refresh_s: float = REFRESH_S,
    ) -> None:
        self.uses = uses
        self.clock = clock
        self.params = params
        self.refresh_s = refresh_s
        self._totals: dict[MemoryKey, UseTotals] = {}
        self._thread: threading.Thread | None = None

    def refresh(self) -> bool:
        """Read the totals again; False (the table kept as it was) when the backbone cannot say."""
        try:
            totals = self.uses.use_totals()
        except Exception as exc:  # noqa: BLE001 - ranking goes on with what it had
            log.debug("the uses store could not be read", error=str(exc))
            return False
        self._totals = totals  # one assignment: a search reads the old table or the new one
        return True

    def of(self, site: str, source_id: str, ts: int | None = None) -> float:
        """The memory's salience now (``ts``, its time, is not counted: see the module's docstring)."""
        found = self._totals.get((site, source_id))
        if found is None:
            return self.params.initial
        use = Use(found.by_kind, found.last_accessed, found.pinned)
        return salience(use, int(self.clock() * 1000), self.params)

    def start(self, stop: threading.Event) -> SalienceTable:
        """Read now, then every ``refresh_s`` seconds in a thread until ``stop``."""
        self.refresh()

        def loop() -> None:
            while not stop.wait(self.refresh_s):
                self.refresh()

        self._thread = threading.Thread(target=loop, name="memsync-salience", daemon=True)
        self._thread.start()
        return self


__all__ = ["SalienceTable"]
