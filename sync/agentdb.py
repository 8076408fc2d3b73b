"""Reading a live AgentDB file safely, whoever writes it. Never writes to it.

Three kinds of writer exist (see docs/design/reading.md):
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

A file whose time is ahead of this machine's clock (a clock stepped back, a file from a machine
whose clock runs ahead, a network mount's server) would keep looking "written a moment ago": the
wait for its window is bounded by the window itself, and such a file is read whole, and read again
on every poll, until this clock passes its time. ``AgentDBReader.ahead_of_clock_s`` says by how much,
for the log and ``status``.

A read that fails while a writer is at work (a torn header, pages SQLite rejects) is tried again:
the writer moves the file's stamp when it is done. A file that stays as it is, unreadable, for
``SETTLED_NS`` by this machine's monotonic clock is not being written but damaged (overwritten in
place, truncated for good, emptied): that is ``SourceUnavailable``, said as what it is, and the
file is not read again until it changes.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

from sync.episode import ATTRIBUTION_COLUMNS, BASE_COLUMNS
from sync.errors import SnapshotNotReady, SourceMissing, SourceUnavailable

SQLITE_MAGIC = b"SQLite format 3\x00"
HEADER_SIZE = 100
# Coarse file-system clocks tick once a second (ext3, HFS+, FAT's two, some network mounts): twice
# that is safe. Timestamps with sub-millisecond digits come from the kernel's clock, which ticks
# every 1-10 ms (finer still since Linux 6.13): 20 ms covers a tick and the lag between that clock
# and ours. Whole milliseconds (exFAT's 10 ms, some network mounts): 50 ms.
RACY_WINDOW_NS = 2_000_000_000
MS_RACY_WINDOW_NS = 50_000_000
FINE_RACY_WINDOW_NS = 20_000_000
# A read that would start inside a window this short waits it out instead (so it need not be read
# again); a longer one (a coarse clock) is read at once and again on the next poll.
WAIT_OUT_WINDOW_NS = 100_000_000
# A file this far ahead of our clock is worth saying (the log, status): below, a network mount's
# usual drift, which the racy window absorbs anyway.
SKEW_SAID_NS = 2_000_000_000
# An unreadable file unchanged this long is damaged, not being written: sql.js truncates the file,
# then spends a while exporting the database before it writes (over 50 ms at 13 MB).
SETTLED_NS = 2_000_000_000
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
            return self.same_main_file(other) and self.wal_index == other.wal_index
        return self == other

    def same_main_file(self, other: FileStamp | None) -> bool:
        """The database file itself (not its -wal) has not been replaced, resized or written."""
        return other is not None and (self.ino, self.size, self.mtime_ns, self.ctime_ns) == (
            other.ino,
            other.size,
            other.mtime_ns,
            other.ctime_ns,
        )

    def racy_window_ns(self) -> int:
        """How long after its last write a file must stay suspect (see the module's docstring)."""
        stamps = [t for t in (self.mtime_ns, self.ctime_ns) if t]
        if any(t % 1_000_000 for t in stamps):
            return FINE_RACY_WINDOW_NS
        if any(t % 1_000_000_000 for t in stamps):
            return MS_RACY_WINDOW_NS
        return RACY_WINDOW_NS


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


def header_problem(data: bytes, length: int | None = None) -> HeaderProblem | None:
    """Why ``data`` is not a complete, self-consistent SQLite file; None when it is. ``data`` may
    be just the header when ``length`` gives the file's length.

    Pure. The checks are the ones that caught every torn sql.js rewrite in measurement: the magic,
    the change counter equal to the version-valid-for number, and page_count * page_size equal to
    the length actually read. A torn write always starts with the new header, so a wrong magic
    means another kind of file, not a write in progress.
    """
    size = len(data) if length is None else length
    prefix = data[:16]
    if prefix != SQLITE_MAGIC[: len(prefix)]:
        return HeaderProblem("not a SQLite file (no 'SQLite format 3' header)", permanent=True)
    if len(data) < HEADER_SIZE or size < HEADER_SIZE:
        return HeaderProblem(f"file is {min(len(data), size)} bytes, shorter than a SQLite header")
    page_size = int.from_bytes(data[16:18], "big")
    if page_size == 1:
        page_size = 65536
    if page_size < 512 or page_size & (page_size - 1):
        return HeaderProblem(f"page size {page_size} is not a power of two from 512 to 65536", permanent=True)
    if data[24:28] != data[92:96]:
        return HeaderProblem("change counter and version-valid-for differ (caught mid-write)")
    page_count = int.from_bytes(data[28:32], "big")
    if page_count * page_size != size:
        return HeaderProblem(f"header says {page_count} pages of {page_size} bytes but the file has {size}")
    return None


class Snapshot:
    """A consistent view of the episodes table. Rows come back as dicts; TEXT arrives as bytes."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        columns: tuple[str, ...],
        stamp: FileStamp,
        mode: str,
        verify: Callable[[], None] | None = None,
        failed: Callable[[str], NoReturn] | None = None,
    ):
        self._conn = conn
        self.columns = columns
        self.stamp = stamp
        self.mode = mode
        # Read in place from a file someone may rewrite: after each query, raises SnapshotNotReady
        # if the file moved, so that nothing read across a rewrite is ever returned.
        self._verify = verify or (lambda: None)
        # A query SQLite refused on a file that did not move: says whether it is damaged or not yet
        # readable (the reader's judgement), raising either way.
        self._failed = failed or _not_ready
        present = [c if c in columns else f"NULL AS {c}" for c in (*BASE_COLUMNS, *ATTRIBUTION_COLUMNS)]
        self._select = f"SELECT {', '.join(present)} FROM episodes"
        self._names = (*BASE_COLUMNS, *ATTRIBUTION_COLUMNS)

    def _rows(self, where: str, params: Iterable[Any]) -> list[dict[str, Any]]:
        return [self.to_row(values) for values in self._raw(where, params)]

    def _raw(self, where: str, params: Iterable[Any]) -> list[tuple[Any, ...]]:
        try:
            rows = self._conn.execute(f"{self._select} {where}", tuple(params)).fetchall()
        except sqlite3.DatabaseError as exc:
            self._verify()  # a rewrite under us is the likelier story, and the better message
            self._failed(f"reading episodes failed: {exc}")
        self._verify()
        return rows

    def to_row(self, values: tuple[Any, ...]) -> dict[str, Any]:
        """A raw row (``raw_between``'s) as the dict the engine converts; its values in the same order."""
        return dict(zip(self._names, values, strict=True))

    def _scalar(self, sql: str, params: Iterable[Any] = ()) -> Any:
        try:
            row = self._conn.execute(sql, tuple(params)).fetchone()
        except sqlite3.DatabaseError as exc:
            self._verify()
            self._failed(f"reading episodes failed: {exc}")
        self._verify()
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

    def raw_between(self, after: int, upto: int, limit: int) -> list[tuple[Any, ...]]:
        """``rows_between`` as tuples of values, id first: what a re-check compares (cheaper)."""
        return self._raw("WHERE id > ? AND id <= ? ORDER BY id LIMIT ?", (after, upto, limit))

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
        monotonic_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.path = path
        self._attempts = attempts
        self._pause = pause
        self._sleep = sleep
        self._clock_ns = clock_ns  # compared with the file's times (the racy window)
        self._monotonic_ns = monotonic_ns  # how long the file stays unreadable
        # The stamp reads last failed on, and when that was first seen (monotonic): see _unreadable.
        self._failing: tuple[FileStamp, int] | None = None
        self._seen: FileStamp | None = None
        self._racy = True
        # How far the file's time was ahead of our clock at the last look (seconds), when that is
        # more than SKEW_SAID_NS; None otherwise.
        self.ahead_of_clock_s: float | None = None

    def has_changed(self) -> bool:
        """True when the file may hold something the last snapshot did not. Costs two stats and, for
        a WAL database, a 96-byte read of -shm."""
        stamp = file_stamp(self.path)
        if stamp is None:
            return self._racy or self._seen is not None
        return self._racy or not stamp.same_content(self._seen)

    def snapshot(self) -> Snapshot:
        """A snapshot whose every query sees one version of the file, retried across torn reads;
        raises SnapshotNotReady (also from a query, if a rewrite came between) or SourceUnavailable."""
        problem = "no attempt made"
        pause = self._pause
        waited = False
        for _ in range(self._attempts):
            started_ns = self._clock_ns()
            stamp = file_stamp(self.path)
            if stamp is None:
                self._seen, self._racy = None, False
                raise SourceMissing(f"AgentDB file {self.path} does not exist")
            ahead_ns = stamp.newest_ns - started_ns
            self.ahead_of_clock_s = ahead_ns / 1e9 if ahead_ns > SKEW_SAID_NS else None
            wal = self._in_wal_mode(stamp)
            left_ns = 0 if wal and stamp.wal_index is not None else _left_in_window(stamp, started_ns)
            if left_ns and not waited:
                # Written a moment ago: wait out the clock's tick rather than read it twice.
                self._sleep(left_ns / 1e9)
                waited = True
                continue
            try:
                if wal:
                    snap = self._wal_snapshot(stamp)
                elif not left_ns and ahead_ns <= 0 and stamp.racy_window_ns() <= WAIT_OUT_WINDOW_NS:
                    snap = self._file_in_place(stamp)
                else:
                    snap = self._file_snapshot(stamp)  # still being written, a coarse clock, or ahead of ours
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
            # Read through a WAL with its index header in the stamp, every commit is told apart by
            # the counter; the main file then changes only by checkpoints, which show nothing new.
            exact = snap.mode == "wal" and stamp.wal_index is not None
            self._racy = not exact and stamp.newest_ns >= started_ns - stamp.racy_window_ns()
            return snap
        raise SnapshotNotReady(f"{self.path} kept changing while being read: {problem}")

    def _in_wal_mode(self, stamp: FileStamp) -> bool:
        """A -wal exists and the header says WAL: read through SQLite, not as a whole file."""
        if not stamp.has_wal:
            return False
        try:
            with open(self.path, "rb") as f:
                header = f.read(HEADER_SIZE)
        except FileNotFoundError:
            return False
        return len(header) == HEADER_SIZE and header[18] == 2 and header[19] == 2

    def _file_in_place(self, stamp: FileStamp) -> Snapshot:
        """Read a whole-file writer's database where it lies, only the pages the pass needs, and
        check after every query that the file has not moved (``Snapshot``'s verify).

        Sound only where a new write is sure to move the stamp: the clock is fine and the last
        write is older than its tick, which ``snapshot`` has waited out. Copying the whole file
        instead cost 5 ms a pass at 13 MB, most of a pass, for a file that changed by one row."""
        try:
            with open(self.path, "rb") as f:
                header = f.read(HEADER_SIZE)
                problem = header_problem(header, os.fstat(f.fileno()).st_size)
        except FileNotFoundError:
            raise SnapshotNotReady("file vanished while being read (renamed over?)") from None
        if problem is not None:
            self._refuse(problem, stamp)
        if header[18] == 2 or header[19] == 2:
            return self._file_snapshot(stamp)  # a WAL header with no -wal: only a patched copy reads
        uri = f"file:{quote(str(self.path))}?mode=ro&immutable=1"
        conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)

        def verify() -> None:
            if not stamp.same_main_file(file_stamp(self.path)):
                raise SnapshotNotReady("file changed while being read")

        try:
            conn.text_factory = bytes
            columns = _episode_columns(conn, self.path)
            verify()
        except (sqlite3.DatabaseError, SourceUnavailable) as exc:
            conn.close()
            verify()  # torn pages read as no tables, or as a malformed file: was it rewritten?
            if isinstance(exc, SourceUnavailable):
                raise
            self._unreadable(stamp, f"SQLite rejected the file: {exc}")
        except BaseException:
            conn.close()
            raise
        return Snapshot(conn, columns, stamp, "file", verify, lambda reason: self._unreadable(stamp, reason))

    def _file_snapshot(self, stamp: FileStamp) -> Snapshot:
        try:
            with open(self.path, "rb") as f:
                # The header says how long the file must be: a file caught mid-rewrite is turned
                # away after 100 bytes, not after reading megabytes of it.
                early = header_problem(f.read(HEADER_SIZE), os.fstat(f.fileno()).st_size)
                if early is None:
                    f.seek(0)
                    data = f.read()
        except FileNotFoundError:
            raise SnapshotNotReady("file vanished while being read (renamed over?)") from None
        if early is not None:
            self._refuse(early, stamp)
        if not stamp.same_main_file(file_stamp(self.path)):
            raise SnapshotNotReady("file changed while being read")
        problem = header_problem(data)
        if problem is not None:
            self._refuse(problem, stamp, empty=len(data) == 0)
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
            self._unreadable(stamp, f"SQLite rejected the snapshot: {exc}")
        except BaseException:
            conn.close()
            raise
        return Snapshot(conn, columns, stamp, "file", failed=lambda reason: self._unreadable(stamp, reason))

    def _refuse(self, problem: HeaderProblem, stamp: FileStamp, *, empty: bool | None = None) -> NoReturn:
        if problem.permanent:
            raise SourceUnavailable(f"{self.path}: {problem.reason}")
        self._unreadable(stamp, problem.reason, empty=stamp.size == 0 if empty is None else empty)

    def _unreadable(self, stamp: FileStamp, reason: str, *, empty: bool = False) -> NoReturn:
        """A read of the file as ``stamp`` found failed for ``reason``. A writer at work moves the
        stamp when it is done: SnapshotNotReady, read it again. The same stamp still unreadable
        ``SETTLED_NS`` after its first failure (by the monotonic clock: the file's own times may be
        ahead of ours) is damaged: SourceUnavailable, not read again until it changes."""
        now = self._monotonic_ns()
        if self._failing is None or not stamp.same_content(self._failing[0]):
            self._failing = (stamp, now)
        elif now - self._failing[1] >= SETTLED_NS:
            self._seen, self._racy = stamp, False
            if empty:
                raise SourceUnavailable(f"{self.path}: file is empty")
            raise SourceUnavailable(damaged_message(self.path, reason, (now - self._failing[1]) / 1e9))
        raise SnapshotNotReady(reason)

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


def _not_ready(reason: str) -> NoReturn:
    raise SnapshotNotReady(reason)


def damaged_message(path: Path, reason: str, unchanged_s: float) -> str:
    """What the log, ``status`` and the agentdb alert say of a file that stays unreadable."""
    return (
        f"{path} is damaged ({reason}) and has not changed for {unchanged_s:.0f} s, so no agent is "
        "rewriting it: restore it from a backup; memsync reads it again when it changes"
    )


def clock_ahead_message(ahead_s: float) -> str:
    """What the log and ``status`` say of a file whose time is ``ahead_s`` ahead of our clock."""
    return (
        f"the AgentDB file's time is {ahead_s:.0f} s ahead of this machine's clock (a clock set back, or "
        "a file written by a machine whose clock runs ahead): it is read whole on every poll until this "
        "clock passes it; check the clocks (timedatectl)"
    )


def _left_in_window(stamp: FileStamp, now_ns: int) -> int:
    """Nanoseconds until a file written just now is safe to read once and for all (0: it is), for
    clocks fine enough that waiting beats reading it again later. Never more than two windows: a
    file further ahead of ``now_ns`` than its window was not written "just now" by this clock (it
    is ahead of it), and waiting would only wait out the difference between two clocks."""
    window = stamp.racy_window_ns()
    if window > WAIT_OUT_WINDOW_NS or stamp.newest_ns - now_ns > window:
        return 0
    return max(0, stamp.newest_ns + window - now_ns)
