"""Where a site's search index keeps its small files, apart from the index: ``memsync status`` and
the demo read them without importing the embedders and vector stores (numpy, onnxruntime, qdrant).

- ``collections.json``: which physical collection serves the configured name (``CollectionsFile``).
  ``reindex`` builds a fresh one and switches to it when it is complete, so searches never see a
  half-built index. It is fsynced: after a switch the old collection is deleted, and a pointer lost
  to a crash would name it. On a shared Qdrant the alias is the pointer, and this file remembers
  the collection the site last used (``sync.search.collection.shared_pointer``).
- ``indexer.json``: the feed position each collection reached and what it owes
  (``sync.search.collection.cursor``).
- ``status.json``: what the running index last reported, for ``status``
  (``sync.search.service.status``).
- ``qdrant/``: the edge store's collections, one folder each.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sync.jsonfile import read_json_object, write_json_atomically


@dataclass(frozen=True, slots=True)
class IndexFolder:
    """A site's search index folder (``warm.path``) and the files in it."""

    path: Path

    @property
    def collections(self) -> Path:
        return self.path / "collections.json"

    @property
    def cursor(self) -> Path:
        return self.path / "indexer.json"

    @property
    def status(self) -> Path:
        return self.path / "status.json"

    @property
    def edge_store(self) -> Path:
        return self.path / "qdrant"


class CollectionsFile:
    """The edge store's pointer (``sync.search.indexing.rebuilder.Pointer``); on a shared Qdrant,
    where the alias is the pointer, the record of the physical collection this site last used."""

    drops_at_switch = True  # one site uses the edge store's collections: the replaced one goes at once

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name

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
