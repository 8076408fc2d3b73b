"""Where the index has reached in the backbone's change feed, and what it still owes: a small file,
light to read.

Its own module because the daemon's main process reads it (is the index behind the feed, or does it
owe a purge? then start the warm layer's worker) without importing the embedders and stores the
indexer needs.

Beside the position, per collection, it keeps two promises that must survive a crash:

- ``purgeOwed``: collections that deleted a forgotten episode's point. A deleted point's bytes stay
  in the engine's files (Qdrant's WAL and segments), so the warm layer rebuilds such a collection
  and drops it; the mark is written before the delete and goes only with the collection, so a
  crash anywhere in between still ends in a purge.
- ``dropUnlessActive``: collections a rebuild made or replaced. A crash mid-rebuild leaves a
  half-built one; a crash between the switch and the drop leaves the replaced one, forgotten bytes
  and all. Whichever of them is not the active collection at the next start is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sync.jsonfile import read_json_object, write_json_atomically
from sync.search.collection import lifecycle

_CURSORS = "cursors"
_PURGE = "purgeOwed"
_DROP = "dropUnlessActive"


class CursorFile:
    """The feed position this site's store has reached, per collection, in a small JSON file
    written atomically. Positions are not fsynced (a lost position only replays the feed, which is
    idempotent); the two promises are, when they are made."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _data(self) -> dict[str, Any]:
        return read_json_object(self.path) or {}

    def _update(self, change: Callable[[dict[str, Any]], None], *, durable: bool = False) -> None:
        data = self._data()
        change(data)
        write_json_atomically(self.path, data, durable=durable)

    def read(self, collection: str) -> int:
        try:
            return int(_cursors(self._data()).get(collection, 0))
        except (TypeError, ValueError):
            return 0  # unreadable: replaying the feed is idempotent

    def write(self, collection: str, cursor: int) -> None:
        self._update(lambda data: data.__setitem__(_CURSORS, _cursors(data) | {collection: cursor}))

    # -- what is owed --------------------------------------------------------------------------------
    def owe_purge(self, collection: str) -> None:
        if not self.purge_owed(collection):
            self._update(lambda data: data.__setitem__(_PURGE, [*_names(data, _PURGE), collection]), durable=True)

    def purge_owed(self, collection: str) -> bool:
        return collection in _names(self._data(), _PURGE)

    def drop_unless_active(self, collection: str) -> None:
        if collection not in self.to_drop():
            self._update(lambda data: data.__setitem__(_DROP, [*_names(data, _DROP), collection]), durable=True)

    def to_drop(self) -> list[str]:
        return _names(self._data(), _DROP)

    def owes_work(self, active: str) -> bool:
        """A purge of the active collection, or a collection to drop: work with no change in the feed."""
        data = self._data()
        return lifecycle.owes_work(active, purge_owed=active in _names(data, _PURGE), to_drop=_names(data, _DROP))

    def settled(self, collection: str, *, dropped: bool) -> None:
        """``collection`` needs nothing more: it is the active one after a switch (``dropped``
        False: its position and any purge it owes stay), or it is gone (everything about it goes)."""

        def change(data: dict[str, Any]) -> None:
            data[_DROP] = [n for n in _names(data, _DROP) if n != collection]
            if dropped:
                data[_PURGE] = [n for n in _names(data, _PURGE) if n != collection]
                data[_CURSORS] = {k: v for k, v in _cursors(data).items() if k != collection}

        self._update(change, durable=True)


def _cursors(data: dict[str, Any]) -> dict[str, Any]:
    cursors = data.get(_CURSORS)
    return dict(cursors) if isinstance(cursors, dict) else {}


def _names(data: dict[str, Any], key: str) -> list[str]:
    names = data.get(key)
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []
