"""The indexer: its pure decisions from tables, then the real thing end to end (the embedded hub's
change feed, the real MiniLM embedder, both vector stores): archived episodes kept searchable, and
a rebuild that copies from the collection it replaces instead of embedding again."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import CountingEmbedder
from qdrant_client import QdrantClient

from sync.backbone.base import Change, PointRecord, PushItem
from sync.backbone.hub import HubBackbone
from sync.episode import canonical_json
from sync.search.collection.cursor import CursorFile
from sync.search.embedders.bm25 import DEFAULT_BM25, Bm25Config, SparseVector
from sync.search.embedders.local import LocalEmbedder
from sync.search.indexing.copies import Previous, archived_to_embed, plan_copy
from sync.search.indexing.duplicates import canonical_of, link_within_page
from sync.search.indexing.indexer import Indexer
from sync.search.indexing.passages import ToEmbed, passage_items, payload_for
from sync.search.indexing.plan import IndexPlan, plan_page
from sync.search.indexing.seeds import trusted_seed
from sync.search.indexing.text import episode_text, text_hash
from sync.search.payload import (
    ARCHIVED_KEY,
    DUPLICATE_KEY,
    PARENT_KEY,
    PASSAGE_KEY,
    PASSAGES_KEY,
    PAYLOAD_INDEXES,
    SPAN_KEY,
)
from sync.search.query.pipeline import search
from sync.search.request import SearchRequest
from sync.search.stores import (
    CollectionSpec,
    EdgeStore,
    SearchFilter,
    ServerStore,
    StoredPoint,
    VectorStore,
    passage_id,
    point_id,
)

NOW_MS = 1_790_000_000_000
DAY_MS = 86_400_000


def assert_same_float32(got: Sequence[float] | None, want: Sequence[float] | None) -> None:
    """Equal as the float32 vectors the stores keep: a store's round trip (JSON, double) may move
    the last bit, never more than one float32 step."""
    assert got is not None
    assert want is not None
    a, b = np.asarray(got, dtype=np.float32), np.asarray(want, dtype=np.float32)
    assert a.shape == b.shape
    step = np.spacing(np.maximum(np.abs(a), np.abs(b)))
    assert bool(np.all(np.abs(a - b) <= step)), "vectors differ by more than one float32 step"


def episode(site: str, source_id: str, task: str, **extra: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {"sourceSite": site, "sourceId": source_id, "sessionId": "s1", "task": task}
    fields["output"] = "done"
    fields |= {"ts": NOW_MS, "agentName": "coder", "tags": ["a"], "reward": 0.5, "success": True}
    fields |= extra
    fields["contentHash"] = text_hash(repr(sorted(fields.items())))
    return fields


def change(
    seq: int, ep: dict[str, Any] | None, *, site: str = "laptop", sid: str = "1", point: str | None = None
) -> Change:
    if ep is not None:
        site, sid = ep["sourceSite"], ep["sourceId"]
    return Change(seq, site, sid, ep, point)


# --- the pure core ------------------------------------------------------------------------------

EP = episode("laptop", "1", "fix ERR_CONN_4471")
PID = point_id("laptop", "1")
STORED = payload_for(change(1, EP))


def check_plan(
    name: str,
    plan: IndexPlan,
    embed: list[str],
    rewrite: list[str],
    delete: list[str],
    record: list[str],
    unchanged: int,
) -> None:
    """One table row of ``plan_page``: what it embeds, rewrites, deletes, records and leaves."""
    assert [e.point_id for e in plan.embed] == embed, name
    assert [pid for pid, _ in plan.rewrite] == rewrite, name
    assert plan.delete == delete, name
    assert [r.point_id for r in plan.record] == record, name
    assert plan.unchanged == unchanged, name


@pytest.mark.parametrize(
    ("name", "changes", "stored", "embed", "rewrite", "delete", "record", "unchanged"),
    [
        ("new episode", [change(1, EP)], {}, [PID], [], [], [PID], 0),
        ("already indexed and recorded", [change(1, EP, point=PID)], {PID: STORED}, [], [], [], [], 1),
        ("indexed but not recorded (crash before record)", [change(1, EP)], {PID: STORED}, [], [], [], [PID], 1),
        ("text edited", [change(2, EP | {"output": "fixed"})], {PID: STORED}, [PID], [], [], [PID], 0),
        ("reward re-graded: same text", [change(2, EP | {"reward": 1.0})], {PID: STORED}, [], [PID], [], [PID], 0),
        ("forgotten, indexed", [change(3, None)], {PID: STORED}, [], [], [PID], [], 0),
        ("forgotten, never indexed", [change(3, None)], {}, [], [], [], [], 0),
        ("replayed page: latest wins", [change(1, EP), change(3, None)], {PID: STORED}, [], [], [PID], [], 0),
    ],
)
def test_plan_page(
    name: str,
    changes: list[Change],
    stored: dict[str, dict[str, Any]],
    embed: list[str],
    rewrite: list[str],
    delete: list[str],
    record: list[str],
    unchanged: int,
) -> None:
    plan = plan_page(changes, stored)
    check_plan(name, plan, embed, rewrite, delete, record, unchanged)


SEED_PID = "7b0c0f5e-3f5c-4f0e-9a57-1c9a3e9d2a11"  # the seed design's point of an adopted episode


def adopted(seq: int, ep: dict[str, Any] | None, *, point: str | None = None) -> Change:
    """An episode adopted from the seed design (cloud_functions/adopt.ts): the feed names its seed point."""
    return Change(seq, "laptop", "1", ep, point, seed_point_id=SEED_PID)


@pytest.mark.parametrize(
    ("name", "changes", "stored", "embed", "rewrite", "delete", "record", "unchanged"),
    [
        (
            "adopted, seed point not in this store: written under the seed's id",
            [adopted(1, EP, point=SEED_PID)],
            {},
            [SEED_PID],
            [],
            [],
            [],
            0,
        ),
        (
            "adopted, indexed under the seed's id: unchanged",
            [adopted(1, EP, point=SEED_PID)],
            {SEED_PID: STORED},
            [],
            [],
            [],
            [],
            1,
        ),
        (
            "adopted, completed by its first push: a payload rewrite",
            [adopted(2, EP | {"agentName": "claude"}, point=SEED_PID)],
            {SEED_PID: STORED},
            [],
            [SEED_PID],
            [],
            [],
            0,
        ),
        (
            "adopted, edited: the seed's point embedded again and recorded",
            [adopted(3, EP | {"output": "x"})],
            {SEED_PID: STORED},
            [SEED_PID],
            [],
            [],
            [SEED_PID],
            0,
        ),
        (
            "adopted, forgotten: the seed's point deleted",
            [adopted(4, None)],
            {SEED_PID: STORED},
            [],
            [],
            [SEED_PID],
            [],
            0,
        ),
    ],
)
def test_plan_page_adopted(
    name: str,
    changes: list[Change],
    stored: dict[str, dict[str, Any]],
    embed: list[str],
    rewrite: list[str],
    delete: list[str],
    record: list[str],
    unchanged: int,
) -> None:
    plan = plan_page(changes, stored)
    check_plan(name, plan, embed, rewrite, delete, record, unchanged)
    assert PID not in {*(e.point_id for e in plan.embed), *plan.delete}, "never a second point under memsync's id"


# An adopted collection's seed point: the seed's own payload (no textHash), a vector memsync keeps.
SEED_PAYLOAD = {"sourceSite": "laptop", "sourceId": "1", "content": "fix ERR_CONN_4471", "metadata": {"k": 1}}


def halves(text: str) -> list[tuple[int, int]]:
    """A split that cuts every text in two: an episode longer than one passage."""
    return [(0, len(text) // 2), (len(text) // 2, len(text))]


@pytest.mark.parametrize(
    ("name", "change", "stored", "seeds", "split", "adopt", "embed", "unchanged"),
    [
        (
            "seed point, vouched for by the backbone: payload only, nothing embedded",
            adopted(1, EP, point=SEED_PID),
            {SEED_PID: SEED_PAYLOAD},
            {SEED_PID},
            None,
            [SEED_PID],
            [],
            0,
        ),
        (
            "seed point of a long episode: the seed's vector is the first passage, the rest embedded",
            adopted(1, EP, point=SEED_PID),
            {SEED_PID: SEED_PAYLOAD},
            {SEED_PID},
            halves,
            [SEED_PID],
            [passage_id("laptop", "1", 1)],
            0,
        ),
        (
            "edited since the seed embedded it (no point recorded): embedded again",
            adopted(2, EP | {"output": "edited"}),
            {SEED_PID: SEED_PAYLOAD},
            {SEED_PID},
            None,
            [],
            [SEED_PID],
            0,
        ),
        (
            "not trusted (not adopted, or no dense vector of its size): embedded",
            adopted(1, EP, point=SEED_PID),
            {SEED_PID: SEED_PAYLOAD},
            set(),
            None,
            [],
            [SEED_PID],
            0,
        ),
        (
            "already memsync's (textHash): the ordinary path, unchanged",
            adopted(1, EP, point=SEED_PID),
            {SEED_PID: STORED},
            {SEED_PID},
            None,
            [],
            [],
            1,
        ),
    ],
)
def test_plan_page_trusts_an_adopted_seed_point(
    name: str,
    change: Change,
    stored: dict[str, dict[str, Any]],
    seeds: set[str],
    split: Callable[[str], list[tuple[int, int]]] | None,
    adopt: list[str],
    embed: list[str],
    unchanged: int,
) -> None:
    plan = plan_page([change], stored, split or (lambda text: [(0, len(text))]), seeds)
    assert [pid for pid, _ in plan.adopt] == adopt, name
    assert [e.point_id for e in plan.embed] == embed, name
    assert plan.unchanged == unchanged, name
    assert plan.rewrite == [], name
    assert plan.delete == [], name
    for _, payload in plan.adopt:
        # memsync's payload entire (every filter's field and the hash), none of the seed's keys
        assert payload["textHash"] == text_hash(episode_text(EP)), name
        assert {"site", "sourceId", "tags", "ts", "agent"} <= set(payload), name
        assert not {"metadata", "content"} & set(payload), name
        assert (PASSAGES_KEY in payload) == (split is not None), name


SPEC = CollectionSpec("m", 3, adopted=True)


@pytest.mark.parametrize(
    ("name", "spec", "held", "trusted"),
    [
        ("adopted, seed payload, a vector of its size", SPEC, StoredPoint("p", SEED_PAYLOAD, (1.0, 0.0, 0.0)), True),
        ("memsync's own collection", replace(SPEC, adopted=False), StoredPoint("p", SEED_PAYLOAD, (1.0, 0, 0)), False),
        ("written by memsync (textHash)", SPEC, StoredPoint("p", STORED, (1.0, 0.0, 0.0)), False),
        ("no dense vector", SPEC, StoredPoint("p", SEED_PAYLOAD, None), False),
        ("a vector of another size", SPEC, StoredPoint("p", SEED_PAYLOAD, (1.0, 0.0)), False),
    ],
)
def test_trusted_seed(name: str, spec: CollectionSpec, held: StoredPoint, trusted: bool) -> None:
    assert trusted_seed(spec, held) is trusted, name


def archived(seq: int, site: str = "laptop", sid: str = "1") -> Change:
    """The cleanup job moved the episode's body to the cold archive: the key stays, the body goes."""
    return Change(seq, site, sid, None, None, archived=True)


MARKED = STORED | {ARCHIVED_KEY: True}


@pytest.mark.parametrize(
    ("name", "changes", "stored", "archive", "carry", "rewrite", "delete", "unchanged"),
    [
        ("archived, indexed: kept and marked", [archived(4)], {PID: STORED}, [PID], [], [], [], 0),
        ("archived, already marked", [archived(4)], {PID: MARKED}, [], [], [], [], 1),
        ("archived, not in this store: carried from the previous one", [archived(4)], {}, [], [PID], [], [], 0),
        ("restored: the mark goes", [change(5, EP, point=PID)], {PID: MARKED}, [], [], [PID], [], 0),
        ("archived then forgotten in one page", [archived(4), change(6, None)], {PID: MARKED}, [], [], [], [PID], 0),
        ("replayed page: the later archive wins", [change(3, None), archived(4)], {PID: STORED}, [PID], [], [], [], 0),
    ],
)
def test_plan_page_archived(
    name: str,
    changes: list[Change],
    stored: dict[str, dict[str, Any]],
    archive: list[str],
    carry: list[str],
    rewrite: list[str],
    delete: list[str],
    unchanged: int,
) -> None:
    plan = plan_page(changes, stored)
    assert [pid for pid, _ in plan.archive] == archive, name
    assert plan.carry == carry, name
    assert [pid for pid, _ in plan.rewrite] == rewrite, name
    assert plan.delete == delete, name
    assert plan.unchanged == unchanged, name
    assert plan.embed == [], name  # an archived episode is never embedded from the feed: it has no body
    assert all(payload[ARCHIVED_KEY] is True for _, payload in plan.archive), name
    assert all(ARCHIVED_KEY not in payload for _, payload in plan.rewrite), name


def test_marking_archived_keeps_the_payload_and_its_link() -> None:
    ((_, payload),) = plan_page([archived(4)], {PID: STORED | {DUPLICATE_KEY: "head"}}).archive
    assert payload == STORED | {DUPLICATE_KEY: "head", ARCHIVED_KEY: True}


# plan_copy: what a rebuild takes from the collection it replaces.
DENSE = (0.6, 0.8)
OLD_SPARSE = SparseVector((7,), (9.0,))
OTHER_BM25 = Bm25Config(k=1.5)
TO_EMBED = ToEmbed(PID, STORED["text"], STORED)
HELD = StoredPoint(PID, STORED | {DUPLICATE_KEY: "head"}, DENSE, OLD_SPARSE)
EDITED = StoredPoint(PID, STORED | {"textHash": "older text"}, DENSE, OLD_SPARSE)
HELD_ARCHIVED = StoredPoint(PID, MARKED | {DUPLICATE_KEY: "head"}, DENSE, OLD_SPARSE)


@pytest.mark.parametrize(
    ("name", "embed", "carry", "previous", "same_model", "bm25_config", "copy", "to_embed", "missing"),
    [
        ("same text, same spec: copied", [TO_EMBED], [], {PID: HELD}, True, DEFAULT_BM25, [PID], [], []),
        ("same text, other BM25 recipe: copied", [TO_EMBED], [], {PID: HELD}, True, OTHER_BM25, [PID], [], []),
        ("same text, other model: embedded", [TO_EMBED], [], {PID: HELD}, False, DEFAULT_BM25, [], [PID], []),
        ("edited since: embedded", [TO_EMBED], [], {PID: EDITED}, True, DEFAULT_BM25, [], [PID], []),
        ("not in the previous one: embedded", [TO_EMBED], [], {}, True, DEFAULT_BM25, [], [PID], []),
        ("archived, same model: copied", [], [PID], {PID: HELD_ARCHIVED}, True, DEFAULT_BM25, [PID], [], []),
        ("archived, other model: its old text", [], [PID], {PID: HELD_ARCHIVED}, False, DEFAULT_BM25, [], [PID], []),
        ("archived, in neither: missing", [], [PID], {}, True, DEFAULT_BM25, [], [], [PID]),
    ],
)
def test_plan_copy(
    name: str,
    embed: list[ToEmbed],
    carry: list[str],
    previous: dict[str, StoredPoint],
    same_model: bool,
    bm25_config: Bm25Config,
    copy: list[str],
    to_embed: list[str],
    missing: list[str],
) -> None:
    same_bm25 = bm25_config == DEFAULT_BM25
    plan = plan_copy(embed, carry, previous, same_model=same_model, same_bm25=same_bm25, bm25_config=bm25_config)
    assert [p.id for p in plan.copy] == copy, name
    assert [e.point_id for e in plan.embed] == to_embed, name
    assert plan.missing == missing, name
    for point in plan.copy:
        assert tuple(point.dense) == DENSE, name
        assert (point.sparse == OLD_SPARSE) is same_bm25, name  # another recipe: computed again
        assert point.payload[DUPLICATE_KEY] == "head", name  # found with these very vectors
    for item in plan.embed:
        assert DUPLICATE_KEY not in item.payload, name  # new vectors find their own link
        assert item.text == STORED["text"], name
    if carry:
        assert all(p.payload[ARCHIVED_KEY] is True for p in [*plan.copy]), name
        assert all(e.payload[ARCHIVED_KEY] is True for e in plan.embed), name


# Passages: a split by lines stands in for the embedder's window.
def by_lines(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for line in text.split("\n"):
        spans.append((start, start + len(line)))
        start += len(line) + 1
    return spans if len(spans) > 1 else [(0, len(text))]


LONG = episode("laptop", "1", "fix ERR_CONN_4471", output="first\nsecond")  # three lines, three passages
P1, P2 = passage_id("laptop", "1", 1), passage_id("laptop", "1", 2)
SHORT = payload_for(change(1, episode("laptop", "1", "fix ERR_CONN_4471 first second")))
LONG_HEAD = payload_for(change(1, LONG)) | {PASSAGES_KEY: 3, SPAN_KEY: [0, 17]}
LEGACY = payload_for(change(1, LONG))  # indexed before passages: one point, its text cut at the window
LONG_TEXT = str(LEGACY["text"])


@pytest.mark.parametrize(
    ("name", "changes", "stored", "embed", "rewrite", "delete", "stale", "unchanged"),
    [
        ("new long episode: every passage", [change(1, LONG)], {}, [PID, P1, P2], [], [], [], 0),
        ("long, indexed as passages", [change(1, LONG, point=PID)], {PID: LONG_HEAD}, [], [], [], [], 1),
        # Indexed before passages: the same text is never cut again here (a rebuild's copy re-cuts it).
        ("long, indexed before passages", [change(1, LONG, point=PID)], {PID: LEGACY}, [], [], [], [], 1),
        ("long, before passages, re-graded", [change(2, LONG | {"reward": 1.0})], {PID: LEGACY}, [], [PID], [], [],
         0),
        ("long, re-graded: every passage rewritten", [change(2, LONG | {"reward": 1.0})], {PID: LONG_HEAD}, [],
         [PID, P1, P2], [], [], 0),
        ("long, forgotten: every passage", [change(3, None)], {PID: LONG_HEAD}, [], [], [PID, P1, P2], [], 0),
        ("long edited short: the rest is stale", [change(2, LONG | {"output": ""})], {PID: LONG_HEAD}, [PID], [], [],
         [P1, P2], 0),
        ("short edited long", [change(2, LONG)], {PID: SHORT}, [PID, P1, P2], [], [], [], 0),
    ],
)  # fmt: skip
def test_plan_page_passages(
    name: str,
    changes: list[Change],
    stored: dict[str, dict[str, Any]],
    embed: list[str],
    rewrite: list[str],
    delete: list[str],
    stale: list[str],
    unchanged: int,
) -> None:
    plan = plan_page(changes, stored, by_lines)
    assert [e.point_id for e in plan.embed] == embed, name
    assert [pid for pid, _ in plan.rewrite] == rewrite, name
    assert plan.delete == delete, name
    assert plan.stale == stale, name
    assert plan.unchanged == unchanged, name
    for item in plan.embed:
        start, end = item.payload[SPAN_KEY] if SPAN_KEY in item.payload else (0, len(item.text))
        assert item.text == payload_for(changes[-1])["text"][start:end], name


def test_a_rebuild_cuts_a_long_episode_indexed_before_passages_and_copies_one_cut_as_before() -> None:
    items = passage_items("laptop", "1", payload_for(change(1, LONG)), by_lines(LEGACY["text"]))
    legacy = {PID: StoredPoint(PID, LEGACY, DENSE, OLD_SPARSE)}
    plan = plan_copy(items, [], legacy, same_model=True, same_bm25=True, bm25_config=DEFAULT_BM25)
    assert ([p.id for p in plan.copy], [e.point_id for e in plan.embed]) == ([], [PID, P1, P2])
    cut = {i.point_id: StoredPoint(i.point_id, i.payload, DENSE, OLD_SPARSE) for i in items}
    plan = plan_copy(items, [], cut, same_model=True, same_bm25=True, bm25_config=DEFAULT_BM25)
    assert ([p.id for p in plan.copy], plan.embed) == ([PID, P1, P2], [])
    assert [p.payload for p in plan.copy] == [i.payload for i in items]


@pytest.mark.parametrize("head", [PID, SEED_PID], ids=["memsync's own id", "adopted: the seed's point"])
def test_a_rebuild_copies_an_archived_long_episode_passage_by_passage(head: str) -> None:
    """An archived episode is carried by a rebuild from the collection it replaces (the feed no longer
    has its body): every passage, cut again from the kept text, under the same ids as they were, an
    adopted episode's first one under its seed's point as a memsync episode's under its own."""
    items = passage_items("laptop", "1", payload_for(change(1, LONG)) | {ARCHIVED_KEY: True}, by_lines(LONG_TEXT), head)
    held = {i.point_id: StoredPoint(i.point_id, i.payload, DENSE, OLD_SPARSE) for i in items}
    plan = plan_copy([], [head], held, same_model=True, same_bm25=True, bm25_config=DEFAULT_BM25, split=by_lines)
    assert ([p.id for p in plan.copy], plan.embed, plan.missing) == ([head, P1, P2], [], [])
    assert [p.payload for p in plan.copy] == [i.payload for i in items]
    assert [p.payload[PARENT_KEY] for p in plan.copy[1:]] == [head, head]
    # Under another model the same cut is embedded from the kept text.
    plan = plan_copy([], [head], held, same_model=False, same_bm25=True, bm25_config=DEFAULT_BM25, split=by_lines)
    assert ([e.point_id for e in plan.embed], [e.text for e in plan.embed]) == (
        [head, P1, P2],
        ["fix ERR_CONN_4471", "first", "second"],
    )


def test_passage_items_carry_the_filter_fields_and_their_parent_not_the_text() -> None:
    head, first, second = passage_items("laptop", "1", payload_for(change(1, LONG)), by_lines(LEGACY["text"]))
    assert (head.point_id, head.text, head.payload) == (PID, "fix ERR_CONN_4471", LONG_HEAD)
    assert (first.point_id, first.text, second.point_id, second.text) == (P1, "first", P2, "second")
    assert second.payload == {k: LEGACY[k] for k in (*PAYLOAD_INDEXES, "sourceId", "textHash")} | {
        PARENT_KEY: PID,
        PASSAGE_KEY: 2,
        SPAN_KEY: [24, 30],
    }
    # One passage that is the whole text: the episode's point exactly as before passages.
    (only,) = passage_items("laptop", "1", STORED, [(0, len(STORED["text"]))])
    assert (only.point_id, only.text, only.payload) == (PID, STORED["text"], STORED)


def test_a_rewrite_keeps_the_near_duplicate_link_and_records_the_new_content_hash() -> None:
    graded = EP | {"reward": 1.0, "contentHash": "c-graded"}
    plan = plan_page([change(2, graded)], {PID: STORED | {DUPLICATE_KEY: "head"}})
    ((_, payload),) = plan.rewrite
    assert (payload["reward"], payload[DUPLICATE_KEY]) == (1.0, "head")
    assert plan.record == [PointRecord("laptop", "1", PID, "c-graded")]


def test_the_payload_has_every_filter_field_and_the_text_shown() -> None:
    payload = payload_for(change(1, EP | {"critique": "check the pool"}))
    assert (payload["site"], payload["sourceId"]) == ("laptop", "1")
    assert (payload["agent"], payload["session"], payload["ts"], payload["tags"]) == ("coder", "s1", NOW_MS, ["a"])
    assert (payload["reward"], payload["success"], payload["contentHash"]) == (0.5, True, EP["contentHash"])
    assert payload["text"] == "fix ERR_CONN_4471\ndone\ncheck the pool"
    assert payload["textHash"] == text_hash(payload["text"])


@pytest.mark.parametrize(
    ("own", "match", "match_payload", "expected"),
    [
        ("b", "a", {}, "a"),  # a heads its own group
        ("c", "b", {DUPLICATE_KEY: "a"}, "a"),  # b is a's duplicate: link to the head
        ("a", "a", {}, None),  # its own old vector (an edit)
        ("a", "b", {DUPLICATE_KEY: "a"}, None),  # an edited head resembling its own duplicate
    ],
)
def test_canonical_of(own: str, match: str, match_payload: dict[str, Any], expected: str | None) -> None:
    assert canonical_of(own, match, match_payload) == expected


def test_link_within_page_links_to_the_earliest_member() -> None:
    items = [ToEmbed(i, i, {}) for i in ("a", "b", "c", "d")]
    vectors: Sequence[Sequence[float]] = [[1.0, 0.0], [0.999, 0.04], [0.0, 1.0], [0.998, 0.06]]
    assert link_within_page(items, vectors, 0.95) == [None, "a", None, "a"]
    assert link_within_page(items, vectors, 0.99999) == [None, None, None, None]


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture(params=["edge", "server"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[VectorStore]:
    opened: VectorStore = (
        EdgeStore(tmp_path / "qdrant") if request.param == "edge" else ServerStore(client=QdrantClient(":memory:"))
    )
    yield opened
    opened.close()


def push(rig: Rig, site: str, source_id: str, task: str, **extra: Any) -> None:
    body = {"sessionId": "s1", "task": task, "output": "done", "ts": NOW_MS, "agentName": "coder", "tags": ["a"]}
    body |= extra
    content = text_hash(canonical_json(body).decode())
    local_id = int(source_id)
    rig.site(site).push(
        [PushItem(source_id, local_id, f"identity-{site}-{source_id}", content, body, canonical_json(body))],
        local_id,
    )


class Rig:
    def __init__(self, tmp_path: Path, store: VectorStore, embedder: CountingEmbedder) -> None:
        self.path = tmp_path / "hub.db"
        self.hub = HubBackbone(self.path, "laptop")
        self._sites = {"laptop": self.hub}
        self.store = store
        self.embedder = embedder
        self.cursors = CursorFile(tmp_path / "indexer.json")
        self.indexer = Indexer(
            backbone=self.hub,
            store=store,
            embedder=embedder,
            collection="agent_memory_hybrid",
            cursor_file=self.cursors,
            page_size=4,
            links=self.hub,
        )
        self.indexer.open()

    def site(self, name: str) -> HubBackbone:
        """The hub as site ``name`` opens it: every site pushes through its own, to the one file."""
        if name not in self._sites:
            self._sites[name] = HubBackbone(self.path, name)
        return self._sites[name]

    def close(self) -> None:
        for hub in self._sites.values():
            hub.close()

    def payload(self, site: str, source_id: str) -> dict[str, Any] | None:
        found = self.store.get([point_id(site, source_id)])
        return found[0].payload if found else None

    def recorded(self) -> dict[tuple[str, str], str | None]:
        return {(c.site, c.source_id): c.point_id for c in self.hub.changes(0, 1000)}


@pytest.fixture
def rig(tmp_path: Path, store: VectorStore, local: LocalEmbedder) -> Iterator[Rig]:
    made = Rig(tmp_path, store, CountingEmbedder(local))
    yield made
    made.close()


TASKS = [
    "fix ERR_CONN_4471 in the retry loop of the http client",
    "deploy the billing api to staging with the helm chart",
    "database migration failed with E11000 duplicate key on users.email",
    "write unit tests for parse_retry_after",
    "rotate the TLS certificate on the edge proxy",
    "investigate OPS-2291: nightly backup job timing out",
]


def test_every_site_s_episodes_are_indexed_and_their_point_ids_recorded(rig: Rig) -> None:
    for i, task in enumerate(TASKS, 1):
        push(rig, "laptop" if i % 2 else "vm", str(i), task)
    report = rig.indexer.run()
    assert (report.changes, report.embedded, report.failed, report.drained) == (6, 6, 0, True)
    assert rig.store.count() == 6
    assert rig.recorded() == {(c.site, c.source_id): point_id(c.site, c.source_id) for c in rig.hub.changes(0, 99)}
    assert all(v is not None for v in rig.recorded().values())
    payload = rig.payload("vm", "2")
    assert payload is not None
    assert payload["text"] == f"{TASKS[1]}\ndone"
    assert rig.cursors.read("agent_memory_hybrid") == report.cursor


def test_it_is_idempotent_and_never_re_embeds_unchanged_text(rig: Rig) -> None:
    for i, task in enumerate(TASKS, 1):
        push(rig, "laptop", str(i), task)
    rig.indexer.run()
    assert len(rig.embedder.documents) == 6
    assert rig.indexer.run().changes == 0
    rig.cursors.path.unlink()  # a lost cursor replays the whole feed...
    replay = rig.indexer.run()
    assert (replay.changes, replay.embedded, replay.unchanged) == (6, 0, 6)  # ...at the cost of a lookup
    assert len(rig.embedder.documents) == 6


def test_an_edit_is_re_embedded_and_a_re_grade_only_rewrites_the_payload(rig: Rig) -> None:
    push(rig, "laptop", "1", TASKS[0])
    push(rig, "laptop", "2", TASKS[1])
    rig.indexer.run()
    push(rig, "laptop", "1", TASKS[0], output="fixed by capping the backoff")
    push(rig, "laptop", "2", TASKS[1], reward=1.0)
    report = rig.indexer.run()
    assert (report.embedded, report.rewritten) == (1, 1)
    assert rig.embedder.documents[-1] == f"{TASKS[0]}\nfixed by capping the backoff"
    first, second = rig.payload("laptop", "1"), rig.payload("laptop", "2")
    assert first is not None
    assert second is not None
    assert "capping the backoff" in first["text"]
    assert second["reward"] == 1.0
    hits = search(rig.store, rig.embedder, SearchRequest("capping the backoff", limit=1), now_ms=NOW_MS)
    assert [h.source_id for h in hits] == ["1"]
    assert all(v is not None for v in rig.recorded().values())  # the edits were recorded again


def test_a_forgotten_episode_leaves_the_index(rig: Rig) -> None:
    push(rig, "laptop", "1", TASKS[0])
    push(rig, "laptop", "2", TASKS[1])
    rig.indexer.run()
    rig.hub.forget("1")
    assert rig.indexer.run().deleted == 1
    assert rig.payload("laptop", "1") is None
    assert rig.store.count() == 1


def test_near_duplicates_are_linked_never_dropped_and_collapse_in_search(rig: Rig) -> None:
    push(rig, "laptop", "1", "restart the worker pool after the OOM kill on host db-3")
    push(rig, "vm", "2", "restart the worker pool after the OOM kill on host db-3.")  # another site, same memory
    push(rig, "laptop", "3", TASKS[4])
    rig.indexer.run()
    push(rig, "laptop", "4", "Restart the worker pool after the OOM kill on host db-3")  # a later page
    report = rig.indexer.run()
    assert report.linked == 1
    head = point_id("laptop", "1")
    links = [
        (rig.payload(s, i) or {}).get(DUPLICATE_KEY)
        for s, i in (("laptop", "1"), ("vm", "2"), ("laptop", "3"), ("laptop", "4"))
    ]
    assert links == [None, head, None, head]
    assert rig.store.count() == 4
    # ... and recorded on the backbone as similar_to links, duplicate -> head (contracts/links.json).
    similar = [(str(x.other), x.direction) for x in rig.hub.related("laptop", "1") if x.kind == "similar_to"]
    assert sorted(similar) == [("laptop:4", "in"), ("vm:2", "in")]
    query = SearchRequest("worker pool OOM restart", limit=3)
    collapsed = search(rig.store, rig.embedder, query, now_ms=NOW_MS)
    assert collapsed[0].duplicates == 2
    assert len([r for r in collapsed if "worker pool" in r.text]) == 1
    every = search(
        rig.store, rig.embedder, SearchRequest("worker pool OOM restart", limit=3, collapse=False), now_ms=NOW_MS
    )
    assert len([r for r in every if "worker pool" in r.text]) == 3


def test_the_threshold_is_configurable(tmp_path: Path, local: LocalEmbedder) -> None:
    store = EdgeStore(tmp_path / "q")
    rig = Rig(tmp_path, store, CountingEmbedder(local))
    rig.indexer.duplicate_threshold = 0.5
    push(rig, "laptop", "1", "deploy the billing api to staging")
    push(rig, "laptop", "2", "ship the billing service to the staging cluster")
    assert rig.indexer.run().linked == 1
    rig.close()
    store.close()


def test_search_filters_and_decay(rig: Rig) -> None:
    push(rig, "laptop", "1", "rotate the TLS certificate on the edge proxy", ts=NOW_MS - 200 * DAY_MS)
    push(
        rig,
        "vm",
        "2",
        "rotate the TLS certificate on the edge proxy again",
        ts=NOW_MS,
        tags=["ops"],
        agentName="ops",
    )
    push(rig, "laptop", "3", TASKS[3], ts=NOW_MS)
    rig.indexer.duplicate_threshold = 0.999
    rig.indexer.run()
    only_vm = search(
        rig.store, rig.embedder, SearchRequest("TLS certificate", filter=SearchFilter(site="vm")), now_ms=NOW_MS
    )
    assert {r.site for r in only_vm} == {"vm"}
    by_agent = search(
        rig.store, rig.embedder, SearchRequest("TLS certificate", filter=SearchFilter(agent="ops")), now_ms=NOW_MS
    )
    assert [r.source_id for r in by_agent] == ["2"]
    by_tag = search(
        rig.store, rig.embedder, SearchRequest("certificate", filter=SearchFilter(tags=("ops",))), now_ms=NOW_MS
    )
    assert [r.source_id for r in by_tag] == ["2"]
    recent = search(
        rig.store,
        rig.embedder,
        SearchRequest("certificate", filter=SearchFilter(since_ms=NOW_MS - DAY_MS)),
        now_ms=NOW_MS,
    )
    assert "1" not in {r.source_id for r in recent}
    assert episode_text({"task": "x"}) == "x"


# --- archived episodes and rebuilds, end to end ------------------------------------------------

OLD_MS = NOW_MS - 400 * DAY_MS


@pytest.fixture(params=["edge", "server"])
def handles(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], VectorStore]]:
    """Opens handles on one engine's storage: a rebuild writes the fresh collection through its own
    handle while the old one still serves (as the warm layer does)."""
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


@pytest.fixture
def shared_rig(tmp_path: Path, handles: Callable[[], VectorStore], local: LocalEmbedder) -> Iterator[Rig]:
    """A rig whose store is a handle on the engine's shared storage."""
    made = Rig(tmp_path, handles(), CountingEmbedder(local))
    yield made
    made.close()


def rebuild(rig: Rig, fresh: VectorStore, embedder: CountingEmbedder, collection: str) -> Indexer:
    """What the warm layer's rebuild does: the feed from 0 into a fresh collection, the live one as
    ``previous``."""
    assert rig.indexer.spec is not None
    builder = Indexer(
        backbone=rig.hub,
        store=fresh,
        embedder=embedder,
        collection=collection,
        cursor_file=rig.cursors,
        page_size=4,
        previous=Previous(rig.store, rig.indexer.spec),
    )
    builder.open()
    return builder


def test_an_archived_episode_keeps_its_point_marked_and_a_restore_unmarks_it(rig: Rig) -> None:
    push(rig, "laptop", "1", TASKS[0], ts=OLD_MS)
    push(rig, "laptop", "2", TASKS[1])
    rig.indexer.run()
    embedded = len(rig.embedder.documents)
    assert rig.hub.archive_older_than(NOW_MS - DAY_MS, 100) == 1
    report = rig.indexer.run()
    assert (report.archived, report.deleted, report.embedded) == (1, 0, 0)
    payload = rig.payload("laptop", "1")
    assert payload is not None
    assert payload[ARCHIVED_KEY] is True
    assert payload["text"] == f"{TASKS[0]}\ndone"  # the body left the backbone, not the index
    hits = search(rig.store, rig.embedder, SearchRequest("ERR_CONN_4471 retry loop", limit=1), now_ms=NOW_MS)
    assert [(h.source_id, h.archived) for h in hits] == [("1", True)]
    assert not rig.cursors.purge_owed("agent_memory_hybrid")  # nothing was deleted: nothing to purge

    assert rig.hub.restore_archive() == 1
    restored = rig.indexer.run()
    assert (restored.rewritten, restored.embedded) == (1, 0)
    payload = rig.payload("laptop", "1")
    assert payload is not None
    assert ARCHIVED_KEY not in payload
    assert len(rig.embedder.documents) == embedded  # marking and unmarking rewrite payloads only


def test_a_rebuild_with_the_same_spec_embeds_nothing_and_carries_archived_points(
    shared_rig: Rig, handles: Callable[[], VectorStore]
) -> None:
    rig = shared_rig
    for i, task in enumerate(TASKS, 1):
        push(rig, "laptop" if i % 2 else "vm", str(i), task, ts=OLD_MS if i <= 2 else NOW_MS)
    rig.indexer.run()
    rig.hub.archive_older_than(NOW_MS - DAY_MS, 100)  # laptop:1 and vm:2
    rig.hub.forget("3")
    report = rig.indexer.run()
    assert (report.archived, report.deleted) == (2, 1)
    assert rig.cursors.purge_owed("agent_memory_hybrid")  # the forgotten text is in the store's files
    before = len(rig.embedder.documents)

    builder = rebuild(rig, handles(), rig.embedder, "agent_memory_hybrid-2")
    built = builder.run()
    assert len(rig.embedder.documents) == before  # the embedder was never called
    assert (built.embedded, built.copied, built.archived, built.archived_missing) == (0, 5, 2, 0)
    fresh = builder.store
    assert fresh.count() == 5
    assert fresh.get([point_id("laptop", "3")]) == []  # forgotten: not carried over
    assert not rig.cursors.purge_owed("agent_memory_hybrid-2")  # built without it
    kept = {p.id: p for p in fresh.get([point_id("laptop", "1"), point_id("vm", "4")], with_vectors=True)}
    old = {p.id: p for p in rig.store.get(list(kept), with_vectors=True)}
    assert kept.keys() == old.keys()
    for pid, point in kept.items():
        assert_same_float32(point.dense, old[pid].dense)
        sparse, old_sparse = point.sparse, old[pid].sparse
        assert sparse is not None
        assert old_sparse is not None
        assert sparse.indices == old_sparse.indices
        assert_same_float32(sparse.values, old_sparse.values)
        assert point.payload == old[pid].payload
    hits = search(fresh, rig.embedder, SearchRequest("ERR_CONN_4471 retry loop", limit=1), now_ms=NOW_MS)
    assert [(h.source_id, h.archived) for h in hits] == [("1", True)]


def test_a_rebuild_for_another_model_embeds_again_archived_points_from_their_kept_text(
    shared_rig: Rig, handles: Callable[[], VectorStore], local: LocalEmbedder
) -> None:
    rig = shared_rig
    push(rig, "laptop", "1", TASKS[0], ts=OLD_MS)
    push(rig, "laptop", "2", TASKS[1])
    rig.indexer.run()
    rig.hub.archive_older_than(NOW_MS - DAY_MS, 100)
    rig.indexer.run()

    other = CountingEmbedder(local)
    other.name = "another-model"  # another spec: its vectors must not be mixed with the old ones
    built = rebuild(rig, handles(), other, "agent_memory_hybrid-2").run()
    assert (built.embedded, built.copied, built.archived, built.archived_missing) == (2, 0, 1, 0)
    assert sorted(other.documents) == sorted([f"{TASKS[0]}\ndone", f"{TASKS[1]}\ndone"])


def test_an_archived_episode_nobody_indexed_is_embedded_from_the_archive(rig: Rig) -> None:
    """Archived before this index saw it (a site that joins late, a new index): its record comes
    from the archive's file, and it is searchable, marked archived."""
    push(rig, "laptop", "1", TASKS[0], ts=OLD_MS)
    push(rig, "laptop", "2", TASKS[1], ts=OLD_MS)
    rig.hub.archive_older_than(NOW_MS - DAY_MS, 100)
    rig.hub.forget("2")  # gone from the archive too: nothing can bring it back
    report = rig.indexer.run()
    assert (report.archived_missing, report.embedded, report.archived) == (0, 1, 1)
    assert rig.store.count() == 1
    (point,) = rig.store.get([point_id("laptop", "1")])
    assert point.payload["archived"] is True
    hits = search(rig.store, rig.embedder, SearchRequest("ERR_CONN_4471 retry loop", limit=1), now_ms=NOW_MS)
    assert [(h.source_id, h.archived) for h in hits] == [("1", True)]


@pytest.mark.parametrize(
    ("in_archive", "embedded", "missing"),
    [((), 0, ["b"]), (("b",), 1, []), (("a", "b"), 1, [])],
)
def test_archived_points_in_no_collection_come_from_the_archives_records(
    in_archive: tuple[str, ...], embedded: int, missing: list[str]
) -> None:
    changes = [Change(1, "laptop", "a", {"task": "x"}), Change(2, "laptop", "b", None, archived=True)]
    records = {
        ("laptop", k): {"sourceSite": "laptop", "sourceId": k, "task": f"task {k}", "archived": True}
        for k in in_archive
    }
    revived, still = archived_to_embed(changes, [point_id("laptop", "b")], records)
    assert len(revived) == embedded
    assert still == [point_id("laptop", k) for k in missing]
    for item in revived:
        assert item.payload["archived"] is True
        assert item.payload["task"] == "task b"
        assert item.text.startswith("task b")
