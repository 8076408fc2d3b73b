"""The Telegram poller's lease and position, in the alerts file's ``meta`` table: a bot token allows
one long poll of getUpdates at a time (a second poller gets 409), so on the embedded hub, where the
sites' daemons receive button presses, whichever holds this lease polls, from the stored offset."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from sync.policy.leases import Claim, Lease, decide

if TYPE_CHECKING:
    from daemon.alerts.store import AlertStore


class PollerLease:
    def __init__(self, store: AlertStore) -> None:
        self.store = store

    def hold(self, holder: str, lease_ms: int) -> bool:
        """Whoever holds this lease polls (``sync.policy.leases.decide``, renewed by its holder, taken
        over once it lapses)."""
        now = self.store.now_ms()
        with self.store.write() as tx:
            row = tx.execute("SELECT value FROM meta WHERE key = 'poller'").fetchone()
            current = None if row is None else Lease(**json.loads(row[0]))
            if decide(current, holder, now) is Claim.SKIP:
                return False
            lease = Lease("telegram-poller", "-", holder, now + lease_ms)
            tx.execute("INSERT OR REPLACE INTO meta VALUES ('poller', ?)", (json.dumps(asdict(lease)),))
            return True

    def release(self, holder: str) -> None:
        with self.store.write() as tx:
            row = tx.execute("SELECT value FROM meta WHERE key = 'poller'").fetchone()
            if row is not None and json.loads(row[0])["holder"] == holder:
                tx.execute("DELETE FROM meta WHERE key = 'poller'")

    def update_offset(self) -> int | None:
        rows = self.store.read("SELECT value FROM meta WHERE key = 'offset'")
        return int(rows[0][0]) if rows else None

    def set_update_offset(self, offset: int) -> None:
        with self.store.write() as tx:
            tx.execute("INSERT OR REPLACE INTO meta VALUES ('offset', ?)", (str(offset),))
