"""An embedder that loads its model on first use and can let go of it when idle.

The local model is most of an idle daemon's memory: MiniLM under onnxruntime holds about 160 MB
(the graph optimiser expands the int8 weights) for a daemon that may embed nothing for hours. The
daemon wraps its embedder in ``LazyEmbedder`` and calls ``release`` after ``warm.unload_after``
idle seconds; the next text to embed, or the next search, loads it again (about half a second,
checksum included). ``name`` and ``dims`` stay known while released, so opening a collection or
looking at the change feed never loads the model.

A model that comes back different (the package was upgraded under a running daemon) would put two
models' vectors in one collection, so the reload is refused with a clear error instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from sync.errors import ModelFileError
from sync.memory import release_free_memory
from sync.search.embedders.base import Embedder


class LazyEmbedder:
    def __init__(self, load: Callable[[], Embedder], clock: Callable[[], float] = time.monotonic) -> None:
        self._load = load
        self._clock = clock
        self._lock = threading.Lock()
        self._inner: Embedder | None = None
        self._name: str | None = None
        self._dims: int | None = None
        self._last_used = clock()

    def _model(self, use: bool = True) -> Embedder:
        with self._lock:
            if self._inner is None:
                inner = self._load()
                if self._name is not None and (inner.name, inner.dims) != (self._name, self._dims):
                    raise ModelFileError(
                        f"the embedding model changed while memsync ran (was {self._name}, now {inner.name}): "
                        "restart the daemon, then run memsync reindex"
                    )
                self._inner, self._name, self._dims = inner, inner.name, inner.dims
            if use:
                self._last_used = self._clock()
            return self._inner

    @property
    def name(self) -> str:
        return self._name if self._name is not None else self._model(use=False).name

    @property
    def dims(self) -> int:
        return self._dims if self._dims is not None else self._model(use=False).dims

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def idle_for(self) -> float:
        """Seconds since a text was last embedded (or since this wrapper was made)."""
        return max(0.0, self._clock() - self._last_used)

    @property
    def passage_tokens(self) -> int:
        return self._model(use=False).passage_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self._model().count_tokens(texts) if texts else []

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self._model().embed_documents(texts) if texts else []

    def embed_query(self, text: str) -> list[float]:
        return self._model().embed_query(text)

    def release(self) -> bool:
        """Drop the model (a call already running keeps its own reference); True if one was loaded."""
        with self._lock:
            if self._inner is None:
                return False
            self._inner = None
        release_free_memory()
        return True

    def __repr__(self) -> str:
        return f"LazyEmbedder(name={self._name!r}, loaded={self.loaded})"
