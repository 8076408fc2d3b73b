"""The site's spool of uses: where the context hook, the MCP server and the CLI note which memories
they handed to or opened for an agent, off their hot path, for the daemon to fold into the backbone
(``sync.usage.fold``).

A use is one JSON line appended to a small file beside the site's state (``spool_path``): its own
id (so that the backbone counts it once however often it is delivered), its kind, when, the agent
and the memories' keys. Appending is one ``open``, one ``flock``, one ``write`` and one ``fstat``
(tens of microseconds): a line is far shorter than ``PIPE_BUF``, and the lock makes concurrent
appends whole. The daemon takes the file whole by renaming it (``take``), under the same lock; a
writer that opened the old name before the rename sees, once it holds the lock, that its file is
no longer the spool's and opens the new one, so nothing is written where nobody reads.

It is imported by the hook on every prompt, so it defines no class (a dataclass costs the import a
millisecond): reading the spool back is ``sync.usage.fold``'s.

Noting a use never fails its caller: a spool that cannot be written (a read-only folder, a full
disk) or that has grown past ``MAX_BYTES`` (no daemon has folded it for a long time) drops the use
and says why in the return value; where no daemon ever ran (the state's folder does not exist) a use
is not noted, nor said. Standard library only: the hook's light path imports this.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

MAX_BYTES: Final = 8 * 1024 * 1024  # about 40,000 uses: a daemon away that long loses the newest
MAX_KEYS: Final = 50  # memories one use names (a context block holds a dozen)
SUFFIX: Final = ".uses"
TAKEN: Final = ".folding"


def spool_path(state_path: Path) -> Path:
    """The spool of the site whose state (sidecar) file is ``state_path``: beside it."""
    return state_path.with_name(state_path.name + SUFFIX)


def taken_path(spool: Path) -> Path:
    return spool.with_name(spool.name + TAKEN)


def line(use_id: str, kind: str, at_ms: int, keys: Sequence[tuple[str, str]], agent: str | None) -> bytes:
    """One use as the spool holds it (``sync.usage.fold.parse`` reads it back)."""
    record: dict[str, object] = {"id": use_id, "kind": kind, "at": at_ms, "keys": [list(k) for k in keys]}
    if agent:
        record["agent"] = agent
    return (json.dumps(record, separators=(",", ":"), ensure_ascii=False) + "\n").encode()


def note(
    spool: Path,
    kind: str,
    keys: Sequence[tuple[str, str]],
    *,
    at_ms: int,
    agent: str | None = None,
    max_bytes: int = MAX_BYTES,
) -> str | None:
    """Append one use of ``keys`` to ``spool``; None when written, else why not (one sentence)."""
    wanted = tuple(dict.fromkeys(keys))[:MAX_KEYS]
    if not wanted or not spool.parent.is_dir():
        return None  # nothing used; or no daemon ever ran here (it makes the folder): none would fold it
    # 128 random bits, as uuid4's: os.urandom spares the hook importing uuid (milliseconds).
    written = line(os.urandom(16).hex(), kind, at_ms, wanted, agent)
    try:
        return _append(spool, written, max_bytes)
    except OSError as exc:
        return f"cannot write the use spool {spool}: {exc.strerror or exc}"


def _append(spool: Path, line: bytes, max_bytes: int) -> str | None:
    for _ in range(3):  # the daemon renamed the spool under us: open the new one
        fd = os.open(spool, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                current = os.stat(spool)
            except FileNotFoundError:
                continue
            if (held.st_dev, held.st_ino) != (current.st_dev, current.st_ino):
                continue
            if held.st_size + len(line) > max_bytes:
                return f"the use spool {spool} is full ({max_bytes} bytes): is the daemon running?"
            os.write(fd, line)
            return None
        finally:
            os.close(fd)  # closing releases the lock
    return f"the use spool {spool} kept moving"


def take(spool: Path) -> Path | None:
    """Move what the spool holds aside for folding (``taken_path``), under the writers' lock; the
    file left by a fold that died comes first. None when there is nothing to fold."""
    taken = taken_path(spool)
    if taken.exists():
        return taken
    try:
        fd = os.open(spool, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_size == 0:
            return None
        os.rename(spool, taken)
        return taken
    finally:
        os.close(fd)


def done(taken: Path) -> None:
    """The taken file is folded: gone."""
    with contextlib.suppress(FileNotFoundError):
        taken.unlink()


__all__ = ["MAX_BYTES", "done", "line", "note", "spool_path", "take", "taken_path"]
