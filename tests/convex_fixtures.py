"""The local Convex for tests (``harness.convex``: tests/convex_local/server.mjs, the real
cloud_functions on convex-test's in-memory backend), started once a session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness.convex import LocalConvex, running_local_convex

__all__ = ["LocalConvex", "local_convex", "own_convex", "running_local_convex"]


@pytest.fixture(scope="session")
def local_convex() -> Iterator[LocalConvex]:
    with running_local_convex() as convex:
        yield convex


@pytest.fixture
def own_convex() -> Iterator[LocalConvex]:
    """A deployment of the test's own, for a test whose search index catches up from the backbone:
    on the shared one that is every other test's episodes too, minutes of embedding under load."""
    with running_local_convex() as convex:
        yield convex
