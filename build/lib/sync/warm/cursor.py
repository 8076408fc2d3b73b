"""Where the index has reached in the backbone's change feed: a small file, light to read.

Its own module because the daemon's main process reads it (is the index behind the feed? then start
the warm layer's worker) without importing the embedders and stores the indexer needs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sync.jsonfile import read_json_object, write_json_atomically


class CursorFile:
    """The feed position this site's store has reached, per collection, in a small JSON file
    written atomically. Not fsynced: a lost position only replays the feed, which is idempotent."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _cursors(self) -> dict[str, Any]:
        data = read_json_object(self.path) or {}
        cursors = data.get("cursors")
        return dict(cursors) if isinstance(cursors, dict) else {}

    def read(self, collection: str) -> int:
        try:
            return int(self._cursors().get(collection, 0))
        except (TypeError, ValueError):
            return 0  # unreadable: replaying the feed is idempotent

    def write(self, collection: str, cursor: int) -> None:
        write_json_atomically(self.path, {"cursors": self._cursors() | {collection: cursor}})
