"""How memsync opens its own SQLite files (the sidecar, the embedded hub): one place for the pragmas.

Never used on the AgentDB file, which memsync only reads (see ``sync.source.agentdb.reader``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote


def open_wal(
    path: Path, *, synchronous: str = "NORMAL", busy_timeout_ms: int = 5000, readonly: bool = False
) -> sqlite3.Connection:
    """A connection in WAL mode with explicit transactions (``isolation_level=None``).

    WAL lets status readers and several sites' writers share a file; BEGIN IMMEDIATE (see
    ``write_tx``) takes the write lock up front so that busy waits happen at BEGIN, not mid-way.
    """
    if readonly:
        conn = sqlite3.connect(
            f"file:{quote(str(path))}?mode=ro",
            uri=True,
            isolation_level=None,
            timeout=busy_timeout_ms / 1000,
            check_same_thread=False,
        )
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Made here, not by SQLite (0644 less the umask): 0666 less the umask, so that the process
        # umask alone decides, 0600 or a shared hub's 0660; its -wal and -shm take its mode.
        # Only a new file (O_EXCL): closing a descriptor of a file this process has open elsewhere
        # would drop the POSIX locks SQLite holds on it. A path it cannot make (it exists, or its
        # folder is unwritable) is left to SQLite, whose error the callers turn into a sentence.
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666))
        conn = sqlite3.connect(path, isolation_level=None, timeout=busy_timeout_ms / 1000, check_same_thread=False)
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    return conn


@contextmanager
def write_tx(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def primary_code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code (SQLITE_BUSY, SQLITE_TOOBIG...) without the extended bits."""
    return int(getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF


def apply_schema(conn: sqlite3.Connection, statements: tuple[str, ...], version: str) -> None:
    """Create what is missing, in one transaction, and record the schema version."""
    with write_tx(conn):
        for statement in statements:
            conn.execute(statement)
        conn.execute("CREATE TABLE IF NOT EXISTS schema_info (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        conn.execute("INSERT OR IGNORE INTO schema_info VALUES ('version', ?)", (version,))


FORGOTTEN = "[forgotten]"


def forget_text(conn: sqlite3.Connection, table: str, column: str, text: str) -> int:
    """Every copy of ``text`` in ``table.column`` replaced by ``[forgotten]`` (``forget
    --matching`` reaching a file of memsync's that keeps text outside the backbone: quarantine
    previews, Telegram messages kept for their edits); how many rows. ``secure_delete`` overwrites
    the old cells and a TRUNCATE checkpoint cuts the -wal that still holds them (retried by the
    caller's next forget if a reader kept it busy). ``table`` and ``column`` are memsync's own
    names, never input."""
    conn.execute("PRAGMA secure_delete = ON")
    with write_tx(conn):
        changed = conn.execute(
            f"UPDATE {table} SET {column} = replace({column}, ?, ?) WHERE instr({column}, ?) > 0",
            (text, FORGOTTEN, text),
        ).rowcount
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return int(changed)
