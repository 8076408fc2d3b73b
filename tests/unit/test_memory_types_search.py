"""Tier: unit. Search and recent filter by memory type and show it, on points indexed with a type
and on points indexed before types (typed by the same rules from their payload)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import edge_store_of

from sync.search.embedders.local import LocalEmbedder
from sync.search.query.browse import recent
from sync.search.query.pipeline import search
from sync.search.request import RecentRequest, SearchRequest
from sync.search.stores import EdgeStore, SearchFilter

NOW_MS = 1_790_000_000_000
# (text, extra payload): the first two carry a written type; the others were indexed before types.
POINTS: list[tuple[str, dict[str, Any]]] = [
    ("The deploy failed with HTTP 502; fixed the upstream port in nginx.", {"memoryType": "error_fix"}),
    ("Nginx upstream ports: we decided to pin them in the compose file.", {"memoryType": "decision"}),
    ("Never restart nginx on the edge during the deploy window.", {}),
    ("Deployed nginx 1.27 to the edge proxies.", {}),
    ("The nginx config is read from deploy/nginx/edge.conf at boot.", {"tags": ["type:codebase_knowledge"]}),
]


@pytest.fixture
def store(tmp_path: Path, local: LocalEmbedder) -> Iterator[EdgeStore]:
    opened = edge_store_of(tmp_path / "q", local, POINTS, NOW_MS)
    yield opened
    opened.close()


def test_every_result_shows_its_type_written_or_read(store: EdgeStore, local: LocalEmbedder) -> None:
    found = search(store, local, SearchRequest("nginx", limit=10, floor=0.0), now_ms=NOW_MS)
    assert {r.source_id: r.memory_type for r in found} == {
        "0": "error_fix",
        "1": "decision",
        "2": "warning",  # read by the rules: indexed before types
        "3": "event",
        "4": "codebase_knowledge",  # given by its tag
    }
    assert found[0].to_wire()["memoryType"] == found[0].memory_type


@pytest.mark.parametrize(
    ("types", "expected"),
    [(("warning",), {"2"}), (("error_fix", "event"), {"0", "3"}), (("learning",), set())],
)
def test_a_type_filter_keeps_only_those_types(
    store: EdgeStore, local: LocalEmbedder, types: tuple[str, ...], expected: set[str]
) -> None:
    request = SearchRequest("nginx deploy", limit=10, floor=0.0, filter=SearchFilter(types=types))
    assert {r.source_id for r in search(store, local, request, now_ms=NOW_MS)} == expected
    latest = recent(store, RecentRequest(limit=10, filter=SearchFilter(types=types)))
    assert {r.source_id for r in latest} == expected


def test_a_type_outside_the_taxonomy_is_refused_on_the_wire() -> None:
    wire = SearchRequest("x", filter=SearchFilter(types=("warning",))).to_wire()
    assert SearchRequest.from_wire(wire).filter.types == ("warning",)
    wire["filter"]["types"] = ["bugfix"]
    with pytest.raises(ValueError, match="unknown memory type 'bugfix'"):
        SearchRequest.from_wire(wire)
