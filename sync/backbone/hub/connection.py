"""One connection to the hub file, shared by the hub's parts: opening it (and bringing the file to
the current schema), and running each operation under one lock as one transaction or one read.

Durability: synchronous=FULL, because the sidecars (synchronous=NORMAL) may only ever be behind
the hub, never ahead of it; a sidecar that lost a commit just re-pushes and gets UNCHANGED.

Every SQLite error is classified once (``classify``): a busy or briefly unreachable file is
transient; a damaged file, or one this user cannot write, is not, and says which file and what to do
rather than being retried forever.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from sync.backbone.hub.schema import create_or_migrate
from sync.errors import BackboneBroken, BackboneUnavailable, MemsyncError, PathProblem, current_user
from sync.sqlite_db import open_wal, primary_code, write_tx

T = TypeVar("T")


def current_ms() -> int:
    return time.time_ns() // 1_000_000


def _unwritable_folder(path: Path) -> Path | None:
    """The folder that keeps this user from creating or writing the hub file, if one does."""
    folder = path.parent
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is None or not os.access(existing, os.W_OK | os.X_OK):
        return existing or folder
    return None


def classify(exc: BaseException, path: Path) -> MemsyncError:
    """What a failure of the hub file means: ``BackboneBroken`` for a damaged file, ``PathProblem``
    for one this user cannot write or open (a person must act: exit 78), ``BackboneUnavailable``
    (retry) for the rest: a busy lock, a full disk, an I/O hiccup."""
    message = str(exc)
    code = primary_code(exc) if isinstance(exc, sqlite3.Error) else 0
    if code in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) or any(
        text in message for text in ("file is not a database", "database disk image is malformed")
    ):
        return BackboneBroken(
            f"the embedded hub {path} is damaged ({message}): no retry will read it. Stop every site's daemon, "
            f"move {path} and its -wal and -shm files aside, and restore it from a backup; or let a new hub "
            "start there and remove each site's state file (state.path), so that its next sync pushes every "
            "episode of its AgentDB file again"
        )
    if code == sqlite3.SQLITE_READONLY or "readonly database" in message:
        return PathProblem(
            f"memsync runs as user {current_user()}, which cannot write the embedded hub {path} ({message}): give that "
            f"user write access to the file, its -wal and -shm files and its folder {path.parent}, or set "
            "backbone.path to a hub file that user owns"
        )
    if code == sqlite3.SQLITE_CANTOPEN or isinstance(exc, PermissionError) or "unable to open database" in message:
        if path.is_dir():
            return PathProblem(
                f"backbone.path {path} is a folder, not the embedded hub's file "
                f"(memsync runs as user {current_user()}): "
                f"point backbone.path at a file in it (e.g. {path / 'hub.db'})"
            )
        folder = _unwritable_folder(path)
        if folder is not None or isinstance(exc, PermissionError):
            return PathProblem(
                f"memsync runs as user {current_user()}, which cannot create or open the embedded hub {path} in "
                f"{folder or path.parent} ({message}): give that user write access to the folder, or set "
                "backbone.path to a folder that user owns"
            )
    return BackboneUnavailable(f"embedded hub {path}: {message}")


class HubConnection:
    def __init__(
        self,
        path: Path,
        site: str,
        *,
        busy_timeout_ms: int = 5000,
        create: bool = True,
        clock: Callable[[], int] = current_ms,
    ) -> None:
        """``create=False`` opens an existing hub without writing to it (status, export).
        ``clock`` (ms) stamps every time the hub records (heartbeats, approvals, job leases and runs,
        tombstones, the archive's runs): the seam a test sets to a fixed instant."""
        self.path = path
        self.site = site
        self.clock = clock
        self.description = f"embedded hub {path}"
        # One sqlite3 connection is not safe for concurrent use: the daemon's threads take turns.
        self._lock = threading.Lock()
        try:
            exists = os.stat(path) is not None
        except FileNotFoundError:
            exists = False
        except OSError as exc:  # a file on its way, no access, a name too long: only a person can fix it
            raise PathProblem.from_os_error(exc, "backbone.path") from None
        if not create and not exists:
            raise BackboneUnavailable(f"embedded hub {path} does not exist yet (no site has synced into it)")
        try:
            self._conn = open_wal(path, synchronous="FULL", busy_timeout_ms=busy_timeout_ms)
            # What is deleted (a forgotten episode) or replaced (an archived body) is overwritten
            # with zeros, not left in a free page of the file for anyone reading its bytes.
            self._conn.execute("PRAGMA secure_delete = ON")
        except (sqlite3.Error, OSError) as exc:
            raise self._opening(exc) from exc
        if create:
            try:
                create_or_migrate(self._conn)
            except sqlite3.Error as exc:
                self._conn.close()
                raise self._opening(exc) from exc

    def _opening(self, exc: sqlite3.Error | OSError) -> MemsyncError:
        error = classify(exc, self.path)
        if isinstance(error, BackboneUnavailable):
            return BackboneUnavailable(f"cannot open the embedded hub {self.path}: {exc}")
        return error

    def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``fn(conn)`` in one write transaction, as one hub operation."""
        with self._lock:
            try:
                with write_tx(self._conn) as conn:
                    return fn(conn)
            except sqlite3.Error as exc:
                raise classify(exc, self.path) from exc

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise classify(exc, self.path) from exc

    def empty_wal(
        self, *, attempts: int = 3, pause_s: float = 0.25, sleep: Callable[[float], None] = time.sleep
    ) -> bool:
        """Copy every committed page into the hub file and cut its -wal to zero bytes: what was just
        deleted (a forgotten episode) is otherwise still readable in the -wal's older frames for as
        long as any daemon keeps the hub open (SQLite resets the log only when the last connection
        closes, and a RESTART writes over old frames only as far as new ones reach). The TRUNCATE
        checkpoint waits (busy timeout) for other connections to finish their reads and writes;
        daemons hold none open between operations, so a busy result is retried briefly. False if it
        never completed."""
        for attempt in range(attempts):
            if attempt:
                sleep(pause_s)
            with self._lock:
                try:
                    busy, _, _ = self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                except sqlite3.Error as exc:
                    error = classify(exc, self.path)
                    if not isinstance(error, BackboneUnavailable):
                        raise error from exc
                    continue
            if not busy:
                return True
        return False

    def ping(self) -> None:
        self._read("SELECT count(*) FROM sync_cursors", ())

    def close(self) -> None:
        with self._lock:
            self._conn.close()
