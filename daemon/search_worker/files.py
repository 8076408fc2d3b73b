"""The warm layer's small state files, apart from the layer itself: ``memsync status`` and the demo
read them without importing the embedders and vector stores (numpy, onnxruntime, qdrant).

- ``collections.json``: which physical collection serves the configured name. ``reindex`` builds a
  fresh one and switches to it when it is complete, so searches never see a half-built index. It
  is fsynced: after a switch the old collection is deleted, and a pointer lost to a crash would
  name it. On a shared Qdrant the alias is the pointer, and this file remembers the collection the
  site last used (``sync.search.collection.shared_pointer``).
- ``status.json``: what the daemon's warm layer last reported, for ``status``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from daemon.config import Settings
from sync.jsonfile import read_json_object, write_json_atomically


class Collections:
    """The edge store's pointer (``sync.search.indexing.rebuilder.Pointer``); on a shared Qdrant, where the
    alias is the pointer, the record of the physical collection this site last used."""

    drops_at_switch = True  # one site uses the edge store's collections: the replaced one goes at once

    def __init__(self, settings: Settings) -> None:
        self.path = settings.warm_dir / "collections.json"
        self.name = settings.warm.collection

    def recorded(self) -> str | None:
        physical = (read_json_object(self.path) or {}).get(self.name)
        return physical if isinstance(physical, str) else None

    def active(self) -> str:
        return self.recorded() or self.name

    def building(self, physical: str) -> None:
        """Nothing to say: no other site sweeps the edge store."""

    def switch(self, physical: str) -> None:
        write_json_atomically(self.path, {self.name: physical}, durable=True)

    def fresh(self) -> str:
        return f"{self.name}-{datetime.now(UTC).strftime('%Y%m%dT%H%M%S%f')}"


def status_path(settings: Settings) -> Path:
    return settings.warm_dir / "status.json"


def read_status(settings: Settings) -> dict[str, Any] | None:
    return read_json_object(status_path(settings))


def write_status(settings: Settings, data: dict[str, Any]) -> None:
    write_json_atomically(status_path(settings), data)
