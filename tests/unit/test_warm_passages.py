"""Long episodes as passages, end to end: the embedded hub's change feed, the real MiniLM embedder
(its own tokenizer counting the window), both vector stores. A fact that sits past the model's 256
tokens is found by meaning, by keyword and by default, with the passage that holds it; a forget, an
edit and a rebuild reach every passage; short episodes stay one point each."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import CountingEmbedder
from fake_providers import KEY, gemini_respond, serve
from qdrant_client import QdrantClient

from sync.backbone.base import PushItem
from sync.backbone.hub import HubBackbone
from sync.episode import canonical_json
from sync.resilience.retry import RetryPolicy
from sync.search.collection.cursor import CursorFile
from sync.search.embedders.gemini import GeminiEmbedder
from sync.search.embedders.local import LocalEmbedder
from sync.search.indexing.copies import Previous
from sync.search.indexing.indexer import Indexer
from sync.search.indexing.text import text_hash
from sync.search.payload import PARENT_KEY, PASSAGES_KEY, passage_count
from sync.search.query.pipeline import search
from sync.search.query.results_text import render_results
from sync.search.request import Mode, SearchRequest, SearchResult
from sync.search.stores import EdgeStore, SearchFilter, ServerStore, VectorStore, passage_id, point_id

NOW_MS = 1_790_000_000_000
COLLECTION = "agent_memory_hybrid"

# ~30 sentences of one refactoring, well past the model's window, then the one fact nothing else holds.
PARTS = ("header", "sidebar", "footer", "search box", "pricing table", "login form")
FILLER = " ".join(
    f"Step {i}: moved the {PARTS[i % 6]} of the dashboard into its own flex container, "
    f"checked it at {320 + 40 * i} pixels wide and removed the old float rules."
    for i in range(30)
)
FACT = "The genealogy archive's backup tapes are kept deep in the Hallstatt salt mine in Austria."
LONG_TASK = f"Refactor the dashboard layout.\n{FILLER}\n{FACT}\nThen the layout review was closed."
SHORT_TASKS = [
    "investigate OPS-2291: nightly backup job timing out",
    "deploy the billing api to staging with the helm chart",
    "rotate the TLS certificate on the edge proxy",
    "write unit tests for parse_retry_after",
]


@pytest.fixture(params=["edge", "server"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    """Opens handles on one engine's storage (a rebuild writes through a handle of its own)."""
    client = QdrantClient(":memory:") if request.param == "server" else None
    opened: list[VectorStore] = []

    def open_handle() -> VectorStore:
        handle: VectorStore = EdgeStore(tmp_path / "qdrant") if client is None else ServerStore(client=client)
        opened.append(handle)
        return handle

    yield open_handle
    for handle in opened:
        handle.close()
    if client is not None:
        client.close()


class Rig:
    def __init__(self, tmp_path: Path, store: VectorStore, embedder: CountingEmbedder) -> None:
        self.hub = HubBackbone(tmp_path / "hub.db", "laptop")
        self.store, self.embedder = store, embedder
        self.cursors = CursorFile(tmp_path / "indexer.json")
        self.indexer = self.indexer_for(store, COLLECTION)

    def indexer_for(self, store: VectorStore, collection: str, previous: Previous | None = None) -> Indexer:
        indexer = Indexer(
            backbone=self.hub,
            store=store,
            embedder=self.embedder,
            collection=collection,
            cursor_file=self.cursors,
            page_size=4,
            previous=previous,
        )
        indexer.open()
        return indexer

    def push(self, source_id: str, task: str, **extra: Any) -> None:
        body = {"sessionId": "s1", "task": task, "output": "done", "ts": NOW_MS, "agentName": "coder", "tags": ["a"]}
        body |= extra
        local_id = int(source_id)
        content = text_hash(canonical_json(body).decode())
        item = PushItem(source_id, local_id, f"identity-{source_id}", content, body, canonical_json(body))
        self.hub.push([item], local_id)

    def head(self, source_id: str) -> dict[str, Any]:
        (point,) = self.store.get([point_id("laptop", source_id)])
        return point.payload

    def search(self, query: str, mode: Mode = "hybrid", limit: int = 5) -> list[SearchResult]:
        return search(self.store, self.embedder, SearchRequest(query, limit=limit, mode=mode), now_ms=NOW_MS)


@pytest.fixture
def rig(tmp_path: Path, engine: Any, local: LocalEmbedder) -> Iterator[Rig]:
    made = Rig(tmp_path, engine(), CountingEmbedder(local))
    for i, task in enumerate(SHORT_TASKS, 1):
        made.push(str(i), task)
    made.push("9", LONG_TASK)
    report = made.indexer.run()
    assert report.embedded == len(SHORT_TASKS) + 1  # counted in episodes
    yield made
    made.hub.close()


def test_the_fact_sits_past_the_model_s_window(local: LocalEmbedder) -> None:
    before = LONG_TASK[: LONG_TASK.index(FACT)]
    assert local.count_tokens([before])[0] > 400  # MiniLM alone would never read it


@pytest.mark.parametrize(
    ("mode", "query"),
    [
        ("dense", "where are the family history backups stored underground?"),
        ("bm25", "Hallstatt"),
        ("hybrid", "salt mine where the genealogy tapes are kept"),
    ],
)
def test_a_fact_past_the_window_is_found_with_its_passage(rig: Rig, mode: Mode, query: str) -> None:
    results = rig.search(query, mode)
    assert results[0].source_id == "9", [r.task for r in results]
    assert len({r.id for r in results}) == len(results)  # episodes, each once
    found = results[0]
    assert found.id == point_id("laptop", "9")
    assert found.text == f"{LONG_TASK}\ndone"  # the whole episode, not the passage
    assert found.passage is not None
    assert FACT in found.passage.text
    assert found.text[found.passage.start : found.passage.end] == found.passage.text
    assert 0 < found.passage.index < found.passage.count == passage_count(rig.head("9"))
    assert SearchResult.from_wire(found.to_wire()) == found  # what `search --json` and the socket carry
    shown = io.StringIO()
    render_results(results[:1], shown, now=NOW_MS / 1000)
    lines = shown.getvalue().splitlines()
    assert lines[2] == "   Refactor the dashboard layout."  # after how it went, and why it ranked
    assert lines[3].startswith(f"   [passage {found.passage.index + 1}/{found.passage.count}] ")
    assert any("Hallstatt" in line for line in lines[3:])


def test_a_long_episode_is_one_point_per_passage_and_short_ones_one_each(rig: Rig, local: LocalEmbedder) -> None:
    count = passage_count(rig.head("9"))
    assert count >= 3
    assert rig.store.count() == len(SHORT_TASKS) + count
    text = rig.head("9")["text"]
    ids = [passage_id("laptop", "9", i) for i in range(count)]
    points = {p.id: p.payload for p in rig.store.get(ids)}
    assert set(points) == set(ids)
    spans = [points[pid]["span"] for pid in ids]
    assert all(n <= local.passage_tokens for n in local.count_tokens([text[s:e] for s, e in spans]))
    assert all(points[pid][PARENT_KEY] == ids[0] for pid in ids[1:])
    assert all("text" not in points[pid] for pid in ids[1:])  # the text is kept once, on the episode's point
    assert rig.embedder.documents[-count:] == [text[s:e] for s, e in spans]  # each passage once, in order
    for i in range(1, len(SHORT_TASKS) + 1):  # a short episode: its one point, as before passages
        payload = rig.head(str(i))
        assert PASSAGES_KEY not in payload
        assert "span" not in payload
    # Each was embedded whole, once.
    assert sorted(rig.embedder.documents[: len(SHORT_TASKS)]) == sorted(f"{t}\ndone" for t in SHORT_TASKS)


def test_a_forget_removes_every_passage(rig: Rig) -> None:
    count = passage_count(rig.head("9"))
    rig.hub.forget("9")
    report = rig.indexer.run()
    assert report.deleted == 1  # one episode, all its points
    assert rig.store.get([passage_id("laptop", "9", i) for i in range(count)]) == []
    assert rig.store.count() == len(SHORT_TASKS)
    assert [r.source_id for r in rig.search("Hallstatt", "bm25")] == []


def test_an_edit_that_shortens_an_episode_drops_its_extra_passages(rig: Rig) -> None:
    count = passage_count(rig.head("9"))
    rig.push("9", FACT)
    rig.indexer.run()
    assert PASSAGES_KEY not in rig.head("9")
    assert rig.store.get([passage_id("laptop", "9", i) for i in range(1, count)]) == []
    assert rig.store.count() == len(SHORT_TASKS) + 1
    (top,) = rig.search("Hallstatt", "bm25", limit=1)
    assert (top.source_id, top.passage) == ("9", None)


def test_a_re_grade_rewrites_every_passage_without_the_model(rig: Rig) -> None:
    count = passage_count(rig.head("9"))
    ids = [passage_id("laptop", "9", i) for i in range(count)]
    before = {p.id: p.payload for p in rig.store.get(ids)}
    embedded, counted = len(rig.embedder.documents), len(rig.embedder.counted)
    rig.push("9", LONG_TASK, tags=["a", "reviewed"])
    report = rig.indexer.run()
    assert (report.rewritten, report.embedded) == (1, 0)
    assert (len(rig.embedder.documents), len(rig.embedder.counted)) == (embedded, counted)  # not even counted
    after = {p.id: p.payload for p in rig.store.get(ids)}
    for pid in ids:  # the new tags and content hash; everything else, parent, index and span included, kept
        assert after[pid]["tags"] == ["a", "reviewed"]
        assert after[pid]["contentHash"] != before[pid]["contentHash"]
        assert {k: v for k, v in after[pid].items() if k not in ("tags", "contentHash")} == {
            k: v for k, v in before[pid].items() if k not in ("tags", "contentHash")
        }
    # A filter reaches the passage that matched, not only the episode's first point.
    flt = SearchFilter(tags=("reviewed",))
    found = search(rig.store, rig.embedder, SearchRequest("Hallstatt", mode="bm25", filter=flt), now_ms=NOW_MS)
    assert [(r.source_id, r.passage is not None) for r in found] == [("9", True)]


def test_a_rebuild_copies_every_passage_and_embeds_nothing(rig: Rig, engine: Any) -> None:
    assert rig.indexer.spec is not None
    embedded = len(rig.embedder.documents)
    builder = rig.indexer_for(engine(), f"{COLLECTION}-2", Previous(rig.store, rig.indexer.spec))
    report = builder.run()
    assert len(rig.embedder.documents) == embedded
    assert report.copied == len(SHORT_TASKS) + 1  # episodes
    assert builder.store.count() == rig.store.count() == len(SHORT_TASKS) + passage_count(rig.head("9"))
    results = search(builder.store, rig.embedder, SearchRequest("Hallstatt", limit=3, mode="bm25"), now_ms=NOW_MS)
    assert results[0].source_id == "9"
    assert results[0].passage is not None
    assert FACT in results[0].passage.text


def test_a_cloud_embedder_gets_passages_within_its_own_window(tmp_path: Path, policy: RetryPolicy) -> None:
    """Gemini (its REST API served on 127.0.0.1) reads 2,048 tokens: a 13 kB episode goes as
    passages, none over the window as estimated (a third of its bytes), the fact in a later one."""
    for server in serve(gemini_respond):
        gemini = GeminiEmbedder(KEY, base_url=server.url, retry=policy, clock=lambda: NOW_MS / 1000)
        rig = Rig(tmp_path, EdgeStore(tmp_path / "qdrant"), CountingEmbedder(gemini))
        try:
            rig.push("1", SHORT_TASKS[0])
            rig.push("2", f"{FILLER}\n{FILLER}\n{FILLER}\n{FACT}")
            rig.indexer.run()
            sent = [req["content"]["parts"][0]["text"] for r in server.requests for req in r.body["requests"]]
            assert passage_count(rig.head("2")) == len(sent) - 1 >= 2
            assert all(len(text.encode()) <= 3 * gemini.passage_tokens for text in sent)
            (found,) = rig.search("Hallstatt", "bm25")
            assert found.source_id == "2"
            assert found.passage is not None
            assert found.passage.index > 0
            assert FACT in found.passage.text
        finally:
            rig.store.close()
            rig.hub.close()


def test_an_archived_long_episode_keeps_its_passages_through_a_rebuild(rig: Rig, engine: Any) -> None:
    old = NOW_MS - 400 * 86_400_000
    rig.push("9", LONG_TASK, ts=old)
    rig.indexer.run()
    count = passage_count(rig.head("9"))
    assert rig.hub.archive_older_than(NOW_MS - 86_400_000, 100) == 1
    assert rig.indexer.run().archived == 1
    assert rig.head("9")["archived"] is True
    assert rig.indexer.spec is not None
    embedded = len(rig.embedder.documents)
    # The feed no longer has its body: the rebuild carries its points over, every passage with it.
    builder = rig.indexer_for(engine(), f"{COLLECTION}-2", Previous(rig.store, rig.indexer.spec))
    report = builder.run()
    assert (report.archived, report.archived_missing, report.embedded) == (1, 0, 0)
    assert len(rig.embedder.documents) == embedded
    assert builder.store.count() == len(SHORT_TASKS) + count
    request = SearchRequest("Hallstatt", mode="bm25")
    (found,) = search(builder.store, rig.embedder, request, now_ms=NOW_MS)
    assert (found.source_id, found.archived) == ("9", True)
    assert found.passage is not None
    assert FACT in found.passage.text
