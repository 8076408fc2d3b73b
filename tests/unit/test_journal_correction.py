"""``sync.source.journal.correction``, pure: a saved memory's type or tags corrected, the project
tags kept, each correction recorded, nothing changed when nothing differs."""

from __future__ import annotations

import pytest

from sync.source.journal.correction import MAX_KEPT, MAX_TAGS, Correction, correct

AT = 1_800_000_000_000


def fix(memory_type: str | None = None, tags: list[str] | None = None, by: str = "ana") -> Correction:
    return Correction(memory_type, tags, by, AT)


def test_a_type_is_written_where_a_saves_type_is_and_recorded() -> None:
    done = correct(["ops"], {"project": "shop"}, fix("decision"))
    assert done.changed
    assert done.metadata["memory_type"] == "decision"
    assert done.metadata["project"] == "shop"
    assert done.tags == ("ops",)
    assert done.metadata["corrections"] == [{"at": AT, "by": "ana", "memory_type": {"from": None, "to": "decision"}}]


def test_tags_are_replaced_but_the_project_tags_stay() -> None:
    done = correct(["ops", "project:shop", "old"], {"memory_type": "warning"}, fix(tags=[" deploy ", "", "deploy"]))
    assert done.tags == ("deploy", "project:shop")
    assert done.metadata["memory_type"] == "warning"
    assert done.was_tags == ("ops", "project:shop", "old")
    record = done.metadata["corrections"][-1]
    assert record["tags"] == {"from": ["ops", "project:shop", "old"], "to": ["deploy", "project:shop"]}
    assert "memory_type" not in record


def test_the_same_type_and_tags_in_another_order_change_nothing() -> None:
    metadata = {"memory_type": "warning"}
    done = correct(["project:shop", "ops"], metadata, fix("warning", ["ops"]))
    assert not done.changed
    assert done.metadata is metadata
    assert done.tags == ("project:shop", "ops")


def test_corrections_keep_their_history_up_to_a_limit() -> None:
    metadata: dict[str, object] = {}
    tags: tuple[str, ...] = ()
    for n in range(MAX_KEPT + 5):
        done = correct(tags, metadata, fix(tags=[f"t{n}"]))
        tags, metadata = done.tags, dict(done.metadata)
    history = metadata["corrections"]
    assert isinstance(history, list)
    assert len(history) == MAX_KEPT
    assert history[-1]["tags"]["to"] == [f"t{MAX_KEPT + 4}"]


@pytest.mark.parametrize(
    ("correction", "said"),
    [
        (fix(), "nothing to correct"),
        (fix("not_a_type"), "not_a_type"),
        (fix(tags=[f"t{n}" for n in range(MAX_TAGS + 1)]), f"at most {MAX_TAGS} tags"),
        (fix(tags=["x" * 500]), "at most 200 characters"),
    ],
)
def test_what_cannot_be_a_correction_is_said(correction: Correction, said: str) -> None:
    with pytest.raises(ValueError, match=said):
        correct([], {}, correction)
