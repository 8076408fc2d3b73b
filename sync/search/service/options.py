"""What the running index reads of its configuration: the daemon fills it from its ``[warm]``
section (``daemon.search_worker.wiring.index_options``); a test or a benchmark writes it out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from sync.search.collection.files import IndexFolder
from sync.search.query.ranking.fusion import Fusion
from sync.search.query.ranking.learned import Learned


@dataclass(frozen=True, slots=True)
class IndexOptions:
    """What the running index reads of its configuration (the daemon's ``[warm]`` section)."""

    collection: str  # the configured name; on a shared Qdrant, the alias every site goes through
    folder: IndexFolder  # its small files (``sync.search.collection.files``)
    store: Literal["edge", "qdrant"]  # "qdrant": a Qdrant server, which every site may share
    catch_up_interval: float  # seconds between looks at the feed for other sites' episodes
    batch_size: int  # episodes embedded and upserted together
    duplicate_threshold: float  # the cosine at which episodes are linked as near-duplicates
    fusion: Learned | Fusion  # how search ranks the dense and BM25 lists: the learned model, or a fusion
    retire_after: float  # a shared Qdrant's retired collection is dropped this many seconds after
    unload_after: float  # idle seconds before the model is let go (0: never)

    @property
    def shared(self) -> bool:
        """Every site reads and writes through the alias on one Qdrant server."""
        return self.store == "qdrant"
