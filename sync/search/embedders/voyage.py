"""``VoyageEmbedder``: Voyage embeddings through voyageai, with document and query input types.

Calls go through ``VoyageClient`` (``sync.search.embedders.cloud``), which the reranker shares:
the voyageai client with its own retries off, the project's ``RetryPolicy``, one error mapping,
and the API key scrubbed from every message.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from sync.errors import ConfigError, PermanentError
from sync.retry import RetryPolicy
from sync.search.embedders.base import batches, estimated_tokens, normalised
from sync.search.embedders.cloud import VoyageClient

VOYAGE_DIMENSIONS = (256, 512, 1024, 2048)


class VoyageEmbedder(VoyageClient):
    """Voyage embeddings through voyageai: input_type document vs query."""

    operation = "embedding"
    # voyage-3.5's context is 32,000 tokens (truncation=True cuts the rest silently).
    passage_tokens = 32_000

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "voyage-3.5",
        dims: int = 1024,
        batch_size: int = 128,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(api_key, base_url=base_url, timeout=timeout, retry=retry, stop=stop, clock=clock)
        if dims not in VOYAGE_DIMENSIONS:
            raise ConfigError(f"Voyage output_dimension must be one of {VOYAGE_DIMENSIONS}, got {dims}")
        if not 1 <= batch_size <= 1000:
            raise ConfigError(f"Voyage batch_size must be 1..1000, got {batch_size}")
        self.name = f"voyage/{model}"
        self.dims = dims
        self.model = model
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"VoyageEmbedder(name={self.name!r}, dims={self.dims})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in batches(texts, self.batch_size):
            out += self._call(partial(self._embed, batch, "document"))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._call(partial(self._embed, [text], "query"))[0]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return estimated_tokens(texts)

    def _embed(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        result = self._request(
            lambda: self._client.embed(list(texts), model=self.model, input_type=input_type, output_dimension=self.dims)
        )
        return self._vectors(texts, result.embeddings)

    def _vectors(self, texts: Sequence[str], embeddings: Sequence[Any]) -> list[list[float]]:
        if len(embeddings) != len(texts):
            raise PermanentError(f"Voyage returned {len(embeddings)} embeddings for {len(texts)} texts")
        return normalised(embeddings, self.dims, "Voyage")
