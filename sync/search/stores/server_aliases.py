"""A shared Qdrant's aliases and collections, as ``SharedPointer`` uses them
(``sync.search.collection.shared_pointer``): which collection an alias serves, moving it in one
atomic update, the collections behind it, memsync's record in each (where a rebuild got to, when a
collection was retired), and copying a collection's points as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sync.errors import NotOurs
from sync.search.stores import adoption
from sync.search.stores.base import RECORD_KEY
from sync.search.stores.server_client import ServerConnection


class ServerAliases(ServerConnection):
    """The alias operations of a Qdrant server store: one lifecycle for every site of a shared server."""

    def alias_target(self, alias: str) -> str | None:
        """The collection ``alias`` serves; None when there is no such alias."""
        with self._client_errors("read the collection aliases"):
            found = self._client.get_aliases().aliases
        return next((a.collection_name for a in found if a.alias_name == alias), None)

    def is_collection(self, name: str) -> bool:
        """A collection (not an alias) has this name."""
        with self._client_errors("list the collections"):
            return any(c.name == name for c in self._client.get_collections().collections)

    def collections_behind(self, alias: str) -> list[tuple[str, dict[str, Any]]]:
        """The collections named ``<alias>-...`` that ``alias`` does not serve, with their metadata."""
        target = self.alias_target(alias)
        with self._client_errors("list the collections"):
            names = [c.name for c in self._client.get_collections().collections]
            return [
                (n, dict(self._client.get_collection(n).config.metadata or {}))
                for n in sorted(names)
                if n.startswith(f"{alias}-") and n != target
            ]

    def switch_alias(self, alias: str, collection: str) -> None:
        """Point ``alias`` at ``collection`` in one atomic update: every site's next request is served
        by it, none by nothing."""
        from qdrant_client import models as qm

        self._validate_name(alias)
        self._validate_name(collection)
        ops: list[Any] = []
        if self.alias_target(alias) is not None:
            ops.append(qm.DeleteAliasOperation(delete_alias=qm.DeleteAlias(alias_name=alias)))
        ops.append(qm.CreateAliasOperation(create_alias=qm.CreateAlias(collection_name=collection, alias_name=alias)))
        with self._client_errors(f"point alias {alias} at {collection}"):
            self._client.update_collection_aliases(change_aliases_operations=ops)

    def record(self, collection: str) -> dict[str, Any] | None:
        """The memsync record of a collection (None: foreign or missing)."""
        with self._client_errors("read the collection's record"):
            if not self._client.collection_exists(collection):
                return None
            record = (self._client.get_collection(collection).config.metadata or {}).get(RECORD_KEY)
        return dict(record) if isinstance(record, dict) else None

    def note(self, collection: str, **fields: Any) -> None:
        """Add ``fields`` to memsync's record of one of its own collections (None removes a field):
        where a rebuild got to, when it was retired. Never to a collection without a record."""
        with self._client_errors("update the collection's record"):
            metadata = dict(self._client.get_collection(collection).config.metadata or {})
            record = metadata.get(RECORD_KEY)
            if not isinstance(record, dict):
                raise NotOurs(f"collection {collection} at {self._where} was not made by memsync: it is never written")
            record = {k: v for k, v in (record | fields).items() if v is not None}
            self._client.update_collection(collection, metadata=metadata | {RECORD_KEY: record})

    def origin_of(self, collection: str) -> adoption.Origin | None:
        """Who made ``collection`` (None: there is no such collection)."""
        with self._client_errors("read the collection's record"):
            if not self._client.collection_exists(collection):
                return None
            return adoption.origin(self._client.get_collection(collection).config.metadata)

    def moved_copy(self, alias: str) -> str | None:
        """The newest verified copy a move under ``alias`` left (its record's ``copyOf``), not retired."""
        copies = [
            name
            for name, metadata in self.collections_behind(alias)
            if isinstance(record := metadata.get(RECORD_KEY), dict)
            and record.get("copyOf") == alias
            and record.get("retiredAt") is None
        ]
        return copies[-1] if copies else None

    def exact_count(self, collection: str) -> int:
        """The points in ``collection``, counted exactly (not the estimate)."""
        with self._client_errors(f"count the points of {collection}"):
            return self._client.count(collection, exact=True).count

    def copy_points(
        self, source: str, dest: str, page_size: int = 256, on_page: Callable[[int], None] | None = None
    ) -> int:
        """Copy every point of ``source`` into ``dest`` as it is (ids, payloads, every vector: nothing
        is embedded); ``on_page(copied so far)`` after each page. Only into a collection memsync made."""
        from qdrant_client import models as qm

        if adoption.origin(self._metadata(dest)) is not adoption.Origin.OURS:
            raise NotOurs(f"collection {dest} at {self._where} was not made by memsync: it is never written")
        copied = 0
        offset: Any = None
        while True:
            with self._client_errors(f"read the points of {source}"):
                records, offset = self._client.scroll(
                    source, limit=page_size, offset=offset, with_payload=True, with_vectors=True
                )
            batch = [qm.PointStruct(id=r.id, vector=r.vector or {}, payload=r.payload or {}) for r in records]
            if batch:
                with self._client_errors(f"copy points into {dest}"):
                    self._client.upsert(dest, batch, wait=True)
            copied += len(batch)
            if on_page is not None and batch:
                on_page(copied)
            if offset is None:
                return copied
