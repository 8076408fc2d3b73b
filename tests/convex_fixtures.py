"""The local Convex for tests (``harness.convex``: tests/convex_local/server.mjs, the real
cloud_functions on convex-test's in-memory backend), started once a session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from harness.convex import LocalConvex, running_local_convex

__all__ = ["LocalConvex", "local_convex", "running_local_convex"]


@pytest.fixture(scope="session")
def local_convex() -> Iterator[LocalConvex]:
    with running_local_convex() as convex:
        yield convex
