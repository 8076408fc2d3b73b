"""What each AgentDB row looked like, raw, when the engine last settled it: so a re-check converts
and hashes only the rows whose bytes moved.

Re-checking a row means converting it (JSON, text clean-up) and hashing the result, about 60
microseconds a row: 256 rows of the window on every pass was most of a pass's cost. Comparing the
raw column values first costs about 1 microsecond a row, and a row whose raw values did not change
cannot have a different content hash, so the engine skips it.

A digest is Python's keyed hash of the row's values and their types (SipHash, 64 bits, keyed per
process): a collision is a 2**-64 event and cannot be steered by what an agent writes. Kept in
memory only, in two parallel arrays (16 bytes a row, 1.6 MB at 100k episodes); a restart starts
empty, so the first re-check after it converts everything, as before.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import Any

# A row's raw values in the reader's column order, its id first (``Snapshot.raw_between``).
Raw = tuple[Any, ...]


def row_digest(values: Raw) -> int:
    """The row's raw values with their types: 1 and 1.0, or b"1" and "1", differ."""
    return hash((values, tuple(map(type, values))))


class RowDigests:
    """Digests by AgentDB id, kept in id order (new ids arrive at the end: appends are O(1))."""

    def __init__(self) -> None:
        self._ids = array("q")
        self._digests = array("q")

    def __len__(self) -> int:
        return len(self._ids)

    def get(self, local_id: int) -> int | None:
        at = bisect_left(self._ids, local_id)
        if at < len(self._ids) and self._ids[at] == local_id:
            return self._digests[at]
        return None

    def changed(self, rows: Sequence[Raw]) -> list[Raw]:
        """The rows that are new to us or whose raw values differ from what was settled. Given in
        id order (as a re-check reads them), one search finds the first id and both lists are
        walked together; out of order, a row may be reported moved when it is not (converted
        once more), never the other way round."""
        if not rows:
            return []
        ids, digests = self._ids, self._digests
        at, end = bisect_left(ids, rows[0][0]), len(ids)
        moved: list[Raw] = []
        for values in rows:
            local_id = values[0]
            while at < end and ids[at] < local_id:
                at += 1
            if at == end or ids[at] != local_id or digests[at] != row_digest(values):
                moved.append(values)
        return moved

    def remember(self, rows: Iterable[Raw]) -> None:
        """Record rows the engine has settled (synced, unchanged or quarantined, and recorded)."""
        for values in rows:
            self._put(values[0], row_digest(values))

    def forget_all(self) -> None:
        del self._ids[:]
        del self._digests[:]

    def _put(self, local_id: int, digest: int) -> None:
        if not self._ids or local_id > self._ids[-1]:
            self._ids.append(local_id)
            self._digests.append(digest)
            return
        at = bisect_left(self._ids, local_id)
        if at < len(self._ids) and self._ids[at] == local_id:
            self._digests[at] = digest
        else:
            self._ids.insert(at, local_id)
            self._digests.insert(at, digest)
