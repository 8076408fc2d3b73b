"""Tier: unit. Whether any memory holds an identifier the query names (sync.search.query.presence),
on the real engine: absent said only when every memory that could hold it was read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.search.embedders import bm25
from sync.search.query.presence import DEPTH, not_seen, presence, terms_to_try, texts_of
from sync.search.stores import EdgeStore, SearchFilter, WarmPoint, passage_id, point_id

DIMS = 4


def point(n: int, text: str, *, site: str = "laptop", **payload: object) -> WarmPoint:
    return WarmPoint(
        point_id(site, str(n)),
        [1.0, float(n % 7), 0.5, 0.25],
        bm25.embed_document(text),
        {"site": site, "sourceId": str(n), "text": text, "tags": []} | payload,
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EdgeStore]:
    opened = EdgeStore(tmp_path / "q")
    opened.open_or_create("c", "test-model", DIMS)
    yield opened
    opened.close()


def test_an_identifier_no_memory_holds_is_absent_even_with_its_look_alike_stored(store: EdgeStore) -> None:
    store.upsert([point(1, "Feature flag ZQX_7781_B gates the EU tax code"), point(2, "deploy notes")])
    assert presence(store, ["ZQX_7781_A"], seen=[]).absent == ("ZQX_7781_A",)
    assert presence(store, ["ZQX_7781_B"], seen=[]).absent == ()


def test_a_memory_outside_what_the_search_read_still_counts(store: EdgeStore) -> None:
    """The search read none of these (``seen`` empty): the identifier's rarest term lists them all."""
    store.upsert([point(n, f"rollout note {n} for ZQX_7781_B") for n in range(40)])
    store.upsert([point(99, "a long incident log " * 50 + "the fix was ZQX_7781_A, not B")])
    assert presence(store, ["ZQX_7781_A"], seen=[]).absent == ()


def test_what_the_search_read_settles_it_without_asking_the_store(store: EdgeStore) -> None:
    assert presence(store, ["E11000"], seen=["E11000 duplicate key"]) == presence(store, [], seen=[])
    assert not_seen(["E11000", "ZQX_7781_A"], ["E11000 here", "nothing"]) == ["ZQX_7781_A"]


def test_an_identifier_of_common_words_only_is_unchecked_never_absent(store: EdgeStore) -> None:
    store.upsert([point(n, f"the user id {n} was wrong") for n in range(DEPTH + 4)])
    found = presence(store, ["user_id"], seen=[])
    assert (found.absent, found.unchecked) == ((), ("user_id",))


def test_absent_means_absent_under_the_filter(store: EdgeStore) -> None:
    store.upsert([point(1, "ERR_CONN_4471 on payments", site="vm")])
    assert presence(store, ["ERR_CONN_4471"], seen=[], filter=SearchFilter(site="laptop")).absent == ("ERR_CONN_4471",)
    assert presence(store, ["ERR_CONN_4471"], seen=[], filter=SearchFilter(site="vm")).absent == ()


def test_a_further_passage_is_read_through_its_episode(store: EdgeStore) -> None:
    text = "first part of a long log\n" + "second part names JIRA-4521 once"
    head = point(5, text, passages=2, span=[0, 24])
    tail = WarmPoint(
        passage_id("laptop", "5", 1),
        [0.0, 1.0, 0.0, 0.0],
        bm25.embed_document("second part names JIRA-4521 once"),
        {"site": "laptop", "sourceId": "5", "parent": head.id, "passage": 1, "span": [25, len(text)], "tags": []},
    )
    store.upsert([head, tail])
    assert texts_of(store, [(tail.id, tail.payload)]) == [text]
    assert presence(store, ["JIRA-4521"], seen=[]).absent == ()
    assert presence(store, ["JIRA-4512"], seen=[]).absent == ("JIRA-4512",)


@pytest.mark.parametrize(
    ("identifier", "first"),
    [
        ("ZQX_7781_A", "7781"),  # a number before a word
        ("ERR_CONN_4471", "4471"),
        ("E11000", "E11000"),  # letters with digits before anything
        ("ranker-v7.2.1", "v7"),
        ("ERR_CONNECTION", "CONNECTION"),  # words: the longer first
    ],
)
def test_the_rarest_looking_term_is_tried_first(identifier: str, first: str) -> None:
    assert terms_to_try(identifier)[0] == dict(bm25.query_terms(identifier))[first]
