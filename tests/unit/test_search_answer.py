"""Tier: unit. A search's answer on the real engine and the real local model
(sync.search.query.pipeline.answer): results judged, cut at the floor, why each ranked, and the
identifiers the query names said found or absent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sync.search.embedders import bm25
from sync.search.embedders.local import LocalEmbedder
from sync.search.query.pipeline import answer
from sync.search.request import SearchAnswer, SearchRequest
from sync.search.stores import EdgeStore, WarmPoint, point_id

NOW_MS = 1_790_000_000_000
DAY_MS = 86_400_000
TEXTS = {
    "1": "MongoDB insert failed with E11000 duplicate key error on users.email\n"
    "A retry inserted the same user twice; made the signup idempotent with findOneAndUpdate and upsert.",
    "2": "Feature flag ZQX_7781_B gates the new EU tax calculation\nEnabled for AT and DE only.",
    "3": "Rotated the Stripe API key after the leak scare\nUpdated the secret in the vault and redeployed.",
    "4": "Patched xz after CVE-2024-3094\nPinned xz-utils to 5.4.6 on every runner image.",
    "5": "Nightly deploy failed: the docker cache expired and the base image changed under us",
    "6": "Web build killed with exit code 137 during npm ci\nRaised Docker memory to 6 GB.",
    "7": "Renamed the orders CSV export command in shopctl",
    "8": "Reviewed the pull request for the websocket reconnect backoff",
    "9": "Ran the test suite before the release: all green",
    "10": "Signup flow: users with the same email could register twice before the fix",
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, local: LocalEmbedder) -> Iterator[EdgeStore]:
    opened = EdgeStore(tmp_path_factory.mktemp("answer") / "q")
    opened.open_or_create("c", local.name, local.dims)
    vectors = local.embed_documents(list(TEXTS.values()))
    opened.upsert(
        [
            WarmPoint(
                point_id("laptop", key),
                vector,
                bm25.embed_document(text),
                {
                    "site": "laptop",
                    "sourceId": key,
                    "session": "s-signup" if key in ("1", "10") else f"s{key}",
                    "text": text,
                    "ts": NOW_MS - int(key) * DAY_MS,
                    "tags": [],
                },
            )
            for (key, text), vector in zip(TEXTS.items(), vectors, strict=True)
        ]
    )
    yield opened
    opened.close()


def ask(store: EdgeStore, local: LocalEmbedder, query: str, **request: object) -> SearchAnswer:
    return answer(store, local, SearchRequest(query, **request), now_ms=NOW_MS)  # type: ignore[arg-type]


def test_an_identifier_alone_returns_only_what_shares_something_with_it(store: EdgeStore, local: LocalEmbedder) -> None:
    found = ask(store, local, "E11000", limit=10)
    assert [r.source_id for r in found.results] == ["1"]
    assert found.cut == len(TEXTS) - 1  # ten asked for, nine shared nothing with it
    top = found.results[0]
    assert top.why is not None
    assert (top.why.exact, top.why.terms, top.why.of, top.why.words) == (("E11000",), 1, 1, ("E11000",))
    assert top.relevance is not None
    assert top.relevance > 0.5
    assert (found.named, found.absent, found.unchecked) == (("E11000",), (), ())
    everything = ask(store, local, "E11000", limit=10, floor=0.0)
    assert (len(everything.results), everything.cut) == (len(TEXTS), 0)
    assert everything.results[0].source_id == "1"  # the floor cuts, it never reorders


def test_a_named_identifier_no_memory_holds_is_absent_though_its_look_alike_ranks_first(
    store: EdgeStore, local: LocalEmbedder
) -> None:
    for mode, floor in (("bm25", None), ("hybrid", 0.0)):
        found = ask(store, local, "ZQX_7781_A", mode=mode, floor=floor)
        assert found.absent == ("ZQX_7781_A",), mode
        assert found.lookalikes == ("ZQX_7781_B",), mode
        first = found.results[0]
        assert first.source_id == "2", mode
        assert first.why is not None
        assert (first.why.lookalike, first.why.exact) == (("ZQX_7781_B",), ())
    # At the floor, the look-alike is cut (of the labelled sets' results holding one, none was
    # relevant), and the answer still names it.
    found = ask(store, local, "ZQX_7781_A")
    assert (found.results, found.absent, found.lookalikes) == ([], ("ZQX_7781_A",), ("ZQX_7781_B",))
    assert found.cut > 0
    found = ask(store, local, "ZQX_7781_B")
    assert found.absent == ()
    assert found.results[0].why is not None
    assert found.results[0].why.exact == ("ZQX_7781_B",)


def test_why_a_hit_ranked(store: EdgeStore, local: LocalEmbedder) -> None:
    found = ask(store, local, "duplicate users at signup, the same email twice", limit=5)
    ids = [r.source_id for r in found.results]
    assert set(ids[:2]) == {"1", "10"}
    second = found.results[1]
    assert second.why is not None
    assert second.why.session_of == 1  # the two share a session
    assert second.why.ranker in ("learned", "fusion")
    assert None not in (second.why.meaning, second.why.meaning_rank, second.why.lead)
    relevances = [r.relevance for r in found.results]
    assert all(r is not None and 0.0 < r <= 1.0 for r in relevances)


@pytest.mark.parametrize("mode", ["dense", "bm25"])
def test_the_modes_that_compare_one_list_are_not_judged_or_cut(
    store: EdgeStore, local: LocalEmbedder, mode: str
) -> None:
    found = ask(store, local, "E11000 duplicate key", mode=mode, limit=3)
    assert (found.floor, found.cut) == (None, 0)
    assert all(r.relevance is None for r in found.results)
    assert found.results[0].why is not None
    assert found.results[0].why.ranker == mode
