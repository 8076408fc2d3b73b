"""LazyEmbedder (sync.search.embedders.lazy): the real local model, loaded on first use, let go on request,
loaded again when needed; a different model on reload is refused."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from conftest import FakeClock

from sync.errors import ModelFileError
from sync.search.embedders.base import Embedder
from sync.search.embedders.lazy import LazyEmbedder
from sync.search.embedders.local import LocalEmbedder


class Loads:
    """Loads the real local model, counting the loads."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> Embedder:
        self.count += 1
        return LocalEmbedder()


class Renamed:
    """The real model under another name: what a package upgrade under a running daemon looks like."""

    def __init__(self, inner: Embedder, name: str) -> None:
        self.inner, self.name, self.dims, self.passage_tokens = inner, name, inner.dims, inner.passage_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


def loaded(lazy: LazyEmbedder) -> bool:
    return lazy.loaded  # a call, so that mypy does not pin the property after the first assert


def test_loads_on_first_use_lets_go_and_loads_again() -> None:
    loads, clock = Loads(), FakeClock(1000.0)
    lazy = LazyEmbedder(loads, clock)
    assert not loaded(lazy)
    assert loads.count == 0
    assert lazy.dims == 384  # knowing the model means loading it once
    assert loads.count == 1
    first = lazy.embed_query("rotate the TLS certificate")
    assert lazy.release()
    assert not loaded(lazy)
    assert not lazy.release()  # nothing left to let go
    # Name and dims stay known: opening a collection or reading the feed does not load the model.
    assert lazy.name.startswith("all-MiniLM-L6-v2")
    assert lazy.dims == 384
    assert loads.count == 1
    assert lazy.embed_query("rotate the TLS certificate") == pytest.approx(first)
    assert loaded(lazy)
    assert loads.count == 2
    assert lazy.embed_documents([]) == []


def test_idle_time_counts_from_the_last_embedding() -> None:
    clock = FakeClock(1000.0)
    lazy = LazyEmbedder(Loads(), clock)
    clock.now += 30
    assert lazy.idle_for() == 30
    _ = lazy.name  # looking the model up is not using it
    assert lazy.idle_for() == 30
    lazy.embed_documents(["a page of one"])
    assert lazy.idle_for() == 0
    clock.now += 599.5
    assert lazy.idle_for() == 599.5


def test_a_model_that_comes_back_different_is_refused() -> None:
    models = iter(["all-MiniLM-L6-v2@old", "all-MiniLM-L6-v2@new"])
    real = LocalEmbedder()
    lazy = LazyEmbedder(lambda: Renamed(real, next(models)))
    assert lazy.name == "all-MiniLM-L6-v2@old"
    lazy.release()
    with pytest.raises(ModelFileError, match=r"was all-MiniLM-L6-v2@old, now all-MiniLM-L6-v2@new.*memsync reindex"):
        lazy.embed_query("anything")
    assert not loaded(lazy)
