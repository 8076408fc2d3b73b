"""Reading a live AgentDB file safely, whoever writes it. Never writes to it.

Three kinds of writer exist (see docs/ARCHITECTURE.md):
- sql.js (agentdb 1.6.1) rewrites the whole file in place on every save: no lock, no journal. A
  reader can catch it half-written, and a long-lived SQLite connection returns stale pages after
  it. So we read the whole file into memory, accept it only if its header is self-consistent and
  its size and inode did not move while we read, and open the bytes as an in-memory database.
- A temp-file-and-rename writer (agentdb 3.0.0-alpha) is read the same way; rename is atomic.
- better-sqlite3 in WAL mode (agentdb 1.3.9) commits into ``-wal``; the main file alone is stale.
  While a ``-wal`` file exists we use a read-only connection, one short read transaction a query,
  so that we never hold back the writer's checkpoints.

Change detection costs a ``stat`` of the file and its ``-wal`` and, for a WAL database, a read of the
WAL index header at the start of ``-shm``: SQLite bumps its change counter on every commit, so a
commit is seen exactly, whatever the clock. Two writes within one tick of the file system's clock
can leave a stamp unchanged (the "racy git" problem), so a file whose own bytes were modified
shortly before we read it stays suspect, and is read again on the next poll, until it is old enough.
How long that is depends on the file system's clock: 50 ms where timestamps carry sub-second
digits, two seconds where they are whole seconds.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sync.episode import ATTRIBUTION_COLUMNS, BASE_COLUMNS
from sync.errors import SnapshotNotReady, SourceUnavailable

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
# Coarse file-system clocks tick once a second (ext3, HFS+, FAT's two, some network mounts): twice
# that is safe. A timestamp with sub-second digits comes from a finer clock, which ticks every 10 ms
# at most (exFAT; Linux's coarse kernel clock ticks every 1-10 ms): 50 ms covers a tick and the lag
# between that clock and ours.
RACY_WINDOW_NS = 2_000_000_000
FINE_RACY_WINDOW_NS = 50_000_000
# The WAL index header: two 48-byte copies at the start of -shm, written in the host's byte order;
# its change counter moves on every commit. Readers never write it.
WAL_INDEX_HEADER = 48
_OPTIONAL_COLUMNS = frozenset(BASE_COLUMNS) - {"id"} | frozenset(ATTRIBUTION_COLUMNS)


@dataclass(frozen=True, slots=True)
class FileStamp:
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
    wal_size: int = -1
    wal_mtime_ns: int = 0
    # The WAL index header while a -wal exists and the header read whole; None otherwise.
    wal_index: bytes | None = None

    @property
    def newest_ns(self) -> int:
        """When the bytes this stamp cannot tell apart were last written: with the WAL index read,
        every commit is told apart by its counter, so only the main file's clock matters."""
        if self.wal_index is not None:
            return max(self.mtime_ns, self.ctime_ns)
        return max(self.mtime_ns, self.ctime_ns, self.wal_mtime_ns)

    @property
    def has_wal(self) -> bool:
        return self.wal_size >= 0

    def same_content(self, other: FileStamp | None) -> bool:
        """True when nothing a reader could see has changed between the two stamps. The -wal's
        size and time are left out when both index headers were read: a writer's frames of a
        transaction not yet committed move them, and nothing visible changed."""
        if other is None:
            return False
        if self.wal_index is not None and other.wal_index is not None:
            return (self.ino, self.size, self.mtime_ns, self.ctime_ns, self.wal_index) == (
                other.ino,
                other.size,
                other.mtime_ns,
                other.ctime_ns,
                other.wal_index,
            )
        return self == other

    def racy_window_ns(self) -> int:
        """How long after its last write a file must stay suspect (see the module's docstring)."""
        fine = any(t % 1_000_000_000 for t in (self.mtime_ns, self.ctime_ns) if t)
        return FINE_RACY_WINDOW_NS if fine else RACY_WINDOW_NS


def file_stamp(path: Path) -> FileStamp | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    try:
        wal = os.stat(f"{path}-wal")
        wal_size, wal_mtime = wal.st_size, wal.st_mtime_ns
    except FileNotFoundError:
        return FileStamp(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    index = wal_index_header(path)
    return FileStamp(st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, wal_size, wal_mtime, index)


def wal_index_header(path: Path) -> bytes | None:
    """The WAL index header from ``-shm``, or None when there is none or it was caught mid-update
    (its two copies differ): then the stamp falls back to the -wal's size and time."""
    try:
        with open(f"{path}-shm", "rb", buffering=0) as shm:
            data = shm.read(2 * WAL_INDEX_HEADER)
    except OSError:
        return None
    first = data[:WAL_INDEX_HEADER]
    if len(data) < 2 * WAL_INDEX_HEADER or first != data[WAL_INDEX_HEADER:] or not any(first):
        return None
    return first


@dataclass(frozen=True, slots=True)
class HeaderProblem:
    reason: str
    # True when waiting cannot help: the bytes are some other kind of file, not a torn SQLite one.
    permanent: bool = False


def header_problem(data: bytes) -> HeaderProblem | None:
    """Why ``data`` is not a complete, self-consistent SQLite file; None when it is.

    Pure. The checks are the ones that caught every torn sql.js rewrite in measurement: the magic,
    the change counter equal to the version-valid-for number, and page_count * page_size equal to
    the length actually read. A torn write always starts with the new header, so a wrong magic
    means another kind of file, not a write in progress.
    """
    prefix = data[:16]
    if prefix != SQLITE_MAGIC[: len(prefix)]:
        return HeaderProblem("not a SQLite file (no 'SQLite format 3' header)", permanent=True)
    if len(data) < HEADER_SIZE:
        return HeaderProblem(f"file is {len(data)} bytes, shorter than a SQLite header")
    page_size = int.from_bytes(data[16:18], "big")
    if page_size == 1:
        page_size = 65536
    if page_size < 512 or page_size & (page_size - 1):
        return HeaderProblem(f"page size {page_size} is not a power of two from 512 to 65536", permanent=True)
    if data[24:28] != data[92:96]:
        return HeaderProblem("change counter and version-valid-for differ (caught mid-write)")
    page_count = int.from_bytes(data[28:32], "big")
    if page_count * page_size != len(data):
        return HeaderProblem(f"header says {page_count} pages of {page_size} bytes but {len(data)} bytes were read")
    return None


class Snapshot:
    """A consistent view of the episodes table. Rows come back as dicts; TEXT arrives as bytes."""

    def __init__(self, conn: sqlite3.Connection, columns: tuple[str, ...], stamp: FileStamp, mode: str):
        self._conn = conn
        self.columns = columns
        self.stamp = stamp
        self.mode = mode
        present = [c if c in columns else f"NULL AS {c}" for c in (*BASE_COLUMNS, *ATTRIBUTION_COLUMNS)]
        self._select = f"SELECT {', '.join(present)} FROM episodes"
        self._names = (*BASE_COLUMNS, *ATTRIBUTION_COLUMNS)

    def _rows(self, where: str, params: Iterable[Any]) -> list[dict[str, Any]]:
        try:
            cursor = self._conn.execute(f"{self._select} {where}", tuple(params))
            names = self._names
            return [dict(zip(names, values, strict=True)) for values in cursor]
        except sqlite3.DatabaseError as exc:
            raise SnapshotNotReady(f"reading episodes failed: {exc}") from exc

    def _scalar(self, sql: str, params: Iterable[Any] = ()) -> Any:
        try:
            row = self._conn.execute(sql, tuple(params)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise SnapshotNotReady(f"reading episodes failed: {exc}") from exc
        return None if row is None else row[0]

    def max_id(self) -> int:
        return int(self._scalar("SELECT coalesce(max(id), 0) FROM episodes"))

    def count(self) -> int:
        return int(self._scalar("SELECT count(*) FROM episodes"))

    def count_after(self, cursor: int) -> int:
        return int(self._scalar("SELECT count(*) FROM episodes WHERE id > ?", (cursor,)))

    def oldest_created_after(self, cursor: int) -> int | None:
        """``created_at`` of the first row past the cursor, as stored (seconds, usually)."""
        if "created_at" not in self.columns:
            return None
        value = self._scalar("SELECT created_at FROM episodes WHERE id > ? ORDER BY id LIMIT 1", (cursor,))
        return value if isinstance(value, int) else None

    def rows_between(self, after: int, upto: int | None, limit: int) -> list[dict[str, Any]]:
        """Rows with ``after < id <= upto`` in id order (never by reward), at most ``limit``."""
        if upto is None:
            return self._rows("WHERE id > ? ORDER BY id LIMIT ?", (after, limit))
        return self._rows("WHERE id > ? AND id <= ? ORDER BY id LIMIT ?", (after, upto, limit))

    def rows_by_id(self, ids: Iterable[int]) -> list[dict[str, Any]]:
        wanted = sorted(set(ids))
        rows: list[dict[str, Any]] = []
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            marks = ",".join("?" * len(chunk))
            rows.extend(self._rows(f"WHERE id IN ({marks}) ORDER BY id", chunk))
        return rows

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _episode_columns(conn: sqlite3.Connection, path: Path) -> tuple[str, ...]:
    tables = [
        bytes(r[0]).decode() if isinstance(r[0], bytes) else str(r[0])
        for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    ]
    if "episodes" not in tables:
        shown = ", ".join(tables[:8]) or "none"
        raise SourceUnavailable(f"{path} has no episodes table (tables: {shown}): is it an AgentDB file?")
    info = conn.execute("PRAGMA table_info(episodes)").fetchall()
    names = [bytes(r[1]).decode() if isinstance(r[1], bytes) else str(r[1]) for r in info]
    if "id" not in names:
        raise SourceUnavailable(f"{path}: the episodes table has no id column")
    return tuple(n for n in names if n == "id" or n in _OPTIONAL_COLUMNS)


class AgentDBReader:
    """Takes consistent snapshots of one AgentDB file and says cheaply whether it changed."""

    def __init__(
        self,
        path: Path,
        *,
        attempts: int = 40,
        pause: float = 0.005,
        sleep: Callable[[float], None] = time.sleep,
        clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.path = path
        self._attempts = attempts
        self._pause = pause
        self._sleep = sleep
        self._clock_ns = clock_ns
        self._seen: FileStamp | None = None
        self._racy = True

    def has_changed(self) -> bool:
        """True when the file may hold something the last snapshot did not. Costs two stats."""
        stamp = file_stamp(self.path)
        if stamp is None:
            return self._racy or self._seen is not None
        return self._racy or not stamp.same_content(self._seen)

    def snapshot(self) -> Snapshot:
        """A consistent snapshot, retried across torn reads; raises SnapshotNotReady or SourceUnavailable."""
        problem = "no attempt made"
        pause = self._pause
        for _ in range(self._attempts):
            started_ns = self._clock_ns()
            stamp = file_stamp(self.path)
            if stamp is None:
                self._seen, self._racy = None, False
                raise SourceUnavailable(f"AgentDB file {self.path} does not exist")
            try:
                snap = self._wal_snapshot(stamp) if self._in_wal_mode(stamp) else self._file_snapshot(stamp)
            except SourceUnavailable:
                # Not worth reading again until the file changes.
                self._seen, self._racy = stamp, False
                raise
            except SnapshotNotReady as torn:
                problem = str(torn)
                self._sleep(pause)
                pause = min(pause * 2, 0.25)
                continue
            self._seen = stamp
            self._racy = stamp.newest_ns >= started_ns - stamp.racy_window_ns()
            return snap
        raise SnapshotNotReady(f"{self.path} kept changing while being read: {problem}")

    def _in_wal_mode(self, stamp: FileStamp) -> bool:
        if not stamp.has_wal:
            return False
        try:
            with open(self.path, "rb") as f:
                header = f.read(HEADER_SIZE)
        except FileNotFoundError:
            return False
        return len(header) == HEADER_SIZE and header[18] == 2 and header[19] == 2

    def _file_snapshot(self, stamp: FileStamp) -> Snapshot:
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            raise SnapshotNotReady("file vanished while being read (renamed over?)") from None
        after = file_stamp(self.path)
        if after is None or (after.ino, after.size, after.mtime_ns, after.ctime_ns) != (
            stamp.ino,
            stamp.size,
            stamp.mtime_ns,
            stamp.ctime_ns,
        ):
            raise SnapshotNotReady("file changed while being read")
        problem = header_problem(data)
        if problem is not None:
            if problem.permanent:
                raise SourceUnavailable(f"{self.path}: {problem.reason}")
            if len(data) == 0 and self._stable_for_a_while(stamp):
                raise SourceUnavailable(f"{self.path}: file is empty")
            raise SnapshotNotReady(problem.reason)
        if data[18] == 2 or data[19] == 2:
            # A WAL-mode header with no -wal beside it (a closed WAL database, or sql.js <= 1.15.1):
            # the file is complete, but SQLite would go looking for a WAL. Read it as rollback mode.
            buf = bytearray(data)
            buf[18] = buf[19] = 1
            data = bytes(buf)
        conn = sqlite3.connect(":memory:", check_same_thread=False)
        try:
            conn.deserialize(data)
            del data
            conn.text_factory = bytes
            columns = _episode_columns(conn, self.path)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise SnapshotNotReady(f"SQLite rejected the snapshot: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return Snapshot(conn, columns, stamp, "file")

    def _stable_for_a_while(self, stamp: FileStamp) -> bool:
        return self._clock_ns() - stamp.newest_ns > stamp.racy_window_ns()

    def _wal_snapshot(self, stamp: FileStamp) -> Snapshot:
        uri = f"file:{quote(str(self.path))}?mode=ro"
        try:
            # Autocommit: every SELECT is its own short read transaction, so the writer's
            # checkpoints are never held back by an idle reader.
            conn = sqlite3.connect(uri, uri=True, timeout=2.0, isolation_level=None, check_same_thread=False)
        except sqlite3.OperationalError as exc:
            raise SnapshotNotReady(f"opening the WAL database failed: {exc}") from exc
        try:
            conn.text_factory = bytes
            columns = _episode_columns(conn, self.path)
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise SnapshotNotReady(f"reading the WAL database failed: {exc}") from exc
        except BaseException:
            conn.close()
            raise
        return Snapshot(conn, columns, stamp, "wal")
