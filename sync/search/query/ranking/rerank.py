"""Reranking for the warm layer: one narrow interface, one implementation.

- ``VoyageReranker``: a Voyage cross-encoder (rerank-2.5 by default) through voyageai's ``rerank``.

A reranker scores each candidate document against the query and hands back ``(index, score)``
pairs, best first, where ``index`` points into the caller's ``documents``. Scores are comparable
only within one call: they are relative to the query and the other candidates of that request.

Calls retry 429 and 5xx through the project's ``RetryPolicy`` (honouring Retry-After), with the same
error mapping and key scrubbing as the embedders (``sync.search.embedders.cloud``): a rejected key
is a ``ConfigError``, a bad request a ``PermanentError``, an exhausted quota ``QuotaExhausted``, an
unreachable server a ``TransientError``. The API key never appears in a message or a repr.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Protocol

from sync.errors import PermanentError
from sync.resilience.retry import RetryPolicy
from sync.search.embedders.cloud import VoyageClient

# Voyage's API reference (docs.voyageai.com/reference/reranker-api; the voyageai package itself
# documents and checks no limit): at most 1,000 documents a request.
VOYAGE_MAX_DOCUMENTS = 1000


class Reranker(Protocol):
    """Orders candidate documents by their relevance to a query."""

    name: str

    def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None) -> list[tuple[int, float]]:
        """``(index into documents, relevance score)`` pairs, best first; the best ``top_k`` only,
        if given."""
        ...


class VoyageReranker(VoyageClient):
    """Voyage reranking through voyageai's ``rerank``.

    Limits (Voyage's API reference; nothing in the voyageai package checks them):

    - At most ``VOYAGE_MAX_DOCUMENTS`` (1,000) documents a call. More are refused with a
      ``PermanentError`` before anything is sent: splitting them over several requests would give
      scores that are not comparable across requests, and silently dropping some would hide
      candidates from the caller, so the caller must pass fewer (e.g. the top of a first-stage
      retrieval).
    - Query tokens at most 8,000 and query + any one document at most 32,000 (rerank-2.5): longer
      inputs are truncated by the server, since ``truncation=True`` is always sent.
    - "query tokens x documents + all document tokens" at most 600K (rerank-2.5). That cannot be
      checked here without Voyage's tokenizer (a hub download); the server refuses it with a 400,
      raised as ``PermanentError``.
    """

    operation = "rerank"

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "rerank-2.5",
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(api_key, base_url=base_url, timeout=timeout, retry=retry, stop=stop, clock=clock)
        self.name = f"voyage/{model}"
        self.model = model

    def __repr__(self) -> str:
        return f"VoyageReranker(name={self.name!r})"

    def rerank(self, query: str, documents: Sequence[str], top_k: int | None = None) -> list[tuple[int, float]]:
        """``(index, relevance_score)`` for ``documents``, best first; with ``top_k``, only the best
        ``top_k`` (a ``top_k`` above the number of documents returns them all). No documents, no call."""
        if top_k is not None and top_k < 1:
            raise PermanentError(f"rerank top_k must be at least 1, got {top_k}")
        if not documents:
            return []
        if len(documents) > VOYAGE_MAX_DOCUMENTS:
            raise PermanentError(
                f"Voyage reranks at most {VOYAGE_MAX_DOCUMENTS} documents a request, got {len(documents)}: "
                "pass fewer candidates (scores from separate requests are not comparable)"
            )
        # A top_k above the number of documents asks for them all: send no more than there are.
        top_k = None if top_k is None else min(top_k, len(documents))
        return self._call(partial(self._rerank, query, list(documents), top_k))

    def _rerank(self, query: str, documents: list[str], top_k: int | None) -> list[tuple[int, float]]:
        # The client looks each result's index up in ``documents`` and reads ``usage``: a response
        # without them fails inside it with these, and is mapped outside the handler.
        try:
            result = self._request(
                lambda: self._client.rerank(query, documents, model=self.model, top_k=top_k, truncation=True)
            )
        except (AttributeError, IndexError, KeyError, TypeError) as exc:
            unusable = PermanentError(f"Voyage returned an unusable rerank response ({type(exc).__name__})")
        else:
            return self._ranked(result.results, len(documents), top_k or len(documents))
        raise unusable

    def _ranked(self, results: Sequence[Any], count: int, wanted: int) -> list[tuple[int, float]]:
        """The response checked (each index once and in range, finite scores, as many as asked for)
        and sorted best first; the server's order is kept among equal scores."""
        ranked: list[tuple[int, float]] = []
        seen: set[int] = set()
        for item in results:
            index, score = item.index, item.relevance_score
            if type(index) is not int or not 0 <= index < count or index in seen:
                raise PermanentError(
                    self._scrub(f"Voyage returned a rerank result for index {index!r} of {count} documents")
                )
            if type(score) not in (int, float) or not math.isfinite(score):
                raise PermanentError(self._scrub(f"Voyage returned a rerank score {score!r} for document {index}"))
            seen.add(index)
            ranked.append((index, float(score)))
        if len(ranked) != wanted:
            raise PermanentError(f"Voyage returned {len(ranked)} rerank results, expected {wanted}")
        ranked.sort(key=lambda pair: -pair[1])
        return ranked
