"""The embedders' one narrow interface, and what its implementations share.

An embedder turns texts into vectors of one model. Every vector returned is L2-normalised, so cosine
similarity is a dot product. Vectors of different models are never comparable: ``name`` and
``dims`` are what a collection records.

The implementations: ``local`` (the offline default, all-MiniLM-L6-v2), ``gemini`` and ``voyage``
(the cloud ones, whose call, error-mapping and key-scrubbing code is ``cloud``'s, shared with the
reranker), and ``lazy`` (any of them, loaded on first use and let go when idle).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from sync.errors import PermanentError

T = TypeVar("T")


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of one model."""

    @property
    def name(self) -> str:
        """The model id a collection records; vectors of different names never mix."""
        ...

    @property
    def dims(self) -> int: ...

    @property
    def passage_tokens(self) -> int:
        """The most tokens of a document the model reads (special tokens excluded): a longer episode
        is indexed as passages of at most this many
        (``sync.search.indexing.text.split_passages``)."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """How many of those tokens each text is (the model's own tokenizer, or a safe estimate)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def normalised(matrix: npt.ArrayLike, dims: int, provider: str) -> list[list[float]]:
    """L2-normalise each row; a wrong width, a zero or a non-finite vector is a provider error."""
    array = np.asarray(matrix, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != dims:
        raise PermanentError(f"{provider} returned vectors of shape {array.shape}, expected (n, {dims})")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise PermanentError(f"{provider} returned a zero or non-finite vector")
    result: list[list[float]] = (array / norms).tolist()
    return result


def estimated_tokens(texts: Sequence[str]) -> list[int]:
    """A cloud model's tokens, over-estimated: a third of the UTF-8 bytes (English runs ~4 characters a
    token, a CJK character is 3 bytes and about one token), so a passage never overruns the limit."""
    return [-(-len(text.encode("utf-8")) // 3) for text in texts]


def batches(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
