"""The links' rules (sync/policy/links.py), which both backbones keep: the kinds, their order and
reasons, the window, and which metadata writes which explicit link come from contracts/links.json,
which cloud_functions/linksPolicy.test.ts runs too."""

from __future__ import annotations

from typing import Any

import pytest
from contract import contract

from sync.policy.links import (
    DERIVED,
    EXPLICIT,
    KINDS,
    LATER,
    METADATA_KINDS,
    REASONS,
    WINDOW,
    EpisodeRef,
    StoredLink,
    explicit_links,
)

LINKS = contract("links.json")


def test_the_kinds_their_order_and_reasons_are_the_contract() -> None:
    assert list(KINDS) == [k["kind"] for k in LINKS["kinds"]]
    assert sorted(EXPLICIT) == sorted(k["kind"] for k in LINKS["kinds"] if k["stored"] == "explicit")
    assert sorted(DERIVED) == sorted(k["kind"] for k in LINKS["kinds"] if k["stored"] == "derived")
    assert {k: dict(v) for k, v in REASONS.items()} == {k["kind"]: k["reason"] for k in LINKS["kinds"]}
    assert list(LATER) == LINKS["later"]
    assert LINKS["window"] == WINDOW
    assert dict(METADATA_KINDS) == LINKS["metadata"]


@pytest.mark.parametrize("case", LINKS["metadata_cases"], ids=lambda c: repr(c["metadata"]))
def test_a_pushed_memory_s_metadata_writes_its_explicit_links(case: dict[str, Any]) -> None:
    own = EpisodeRef.parse(case.get("self", "self:0"))
    assert own is not None
    expected = [StoredLink(own, EpisodeRef.parse(x["to"]), x["kind"]) for x in case["links"]]  # type: ignore[arg-type]
    assert explicit_links(own, case["metadata"]) == expected
