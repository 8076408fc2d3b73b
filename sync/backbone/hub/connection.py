"""One connection to the hub file, shared by the hub's parts: opening it (and bringing the file to
the current schema), and running each operation under one lock as one transaction or one read.

Durability: synchronous=FULL, because the sidecars (synchronous=NORMAL) may only ever be behind
the hub, never ahead of it; a sidecar that lost a commit just re-pushes and gets UNCHANGED.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sync.backbone.hub.schema import create_or_migrate
from sync.errors import BackboneUnavailable
from sync.sqlite_db import open_wal, write_tx

T = TypeVar("T")


def current_ms() -> int:
    return time.time_ns() // 1_000_000


class HubConnection:
    def __init__(self, path: Path, site: str, *, busy_timeout_ms: int = 5000, create: bool = True) -> None:
        """``create=False`` opens an existing hub without writing to it (status, export)."""
        self.path = path
        self.site = site
        self.description = f"embedded hub {path}"
        # One sqlite3 connection is not safe for concurrent use: the daemon's threads take turns.
        self._lock = threading.Lock()
        if not create and not path.exists():
            raise BackboneUnavailable(f"embedded hub {path} does not exist yet (no site has synced into it)")
        try:
            self._conn = open_wal(path, synchronous="FULL", busy_timeout_ms=busy_timeout_ms)
            if create:
                create_or_migrate(self._conn)
        except sqlite3.Error as exc:
            raise BackboneUnavailable(f"cannot open the embedded hub {path}: {exc}") from exc

    def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in one write transaction, as one hub operation."""
        with self._lock:
            try:
                with write_tx(self._conn) as conn:
                    return fn(conn)
            except sqlite3.Error as exc:
                raise BackboneUnavailable(f"embedded hub {self.path}: {exc}") from exc

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise BackboneUnavailable(f"embedded hub {self.path}: {exc}") from exc

    def ping(self) -> None:
        self._read("SELECT count(*) FROM sync_cursors", ())

    def close(self) -> None:
        with self._lock:
            self._conn.close()
