"""The approvals whose Telegram message may still need an edit, in a table of the alerts file: on
the embedded hub the sites keep approval messages true to their approvals (``telegram.reconcile``);
Convex keeps its own (``cloud_functions/approvals.ts``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from daemon.alerts.store import AlertStore

TABLE = """CREATE TABLE IF NOT EXISTS tracked_approvals (
  approval_id TEXT PRIMARY KEY,     -- an approval whose message may still need an edit
  status TEXT NOT NULL,             -- as last shown
  defer_count INTEGER NOT NULL
)"""


class TrackedApprovals:
    def __init__(self, store: AlertStore) -> None:
        self.store = store
        # Read first: each poll round opens one, and a write transaction would take the shared
        # file's write lock every time.
        if not store.read("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tracked_approvals'"):
            with store.write() as tx:
                tx.execute(TABLE)

    def track(self, approval_id: str, status: str, defer_count: int) -> None:
        with self.store.write() as tx:
            tx.execute("INSERT OR REPLACE INTO tracked_approvals VALUES (?, ?, ?)", (approval_id, status, defer_count))

    def tracked(self) -> Mapping[str, tuple[str, int]]:
        return {
            r[0]: (r[1], r[2])
            for r in self.store.read("SELECT approval_id, status, defer_count FROM tracked_approvals")
        }

    def untrack(self, approval_id: str) -> None:
        with self.store.write() as tx:
            tx.execute("DELETE FROM tracked_approvals WHERE approval_id = ?", (approval_id,))
