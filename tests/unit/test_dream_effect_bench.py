"""Tier: unit. The before-and-after-a-dream benchmark's pure parts (bench/dream_effect.py): the
copies it plants in the context set keep each answer's fact whole and come from another agent on
another site, and a block's duplicate entries, a fold's credited recall and the questions a dream
changed are counted as said."""

from __future__ import annotations

import json
import sys

from conftest import ROOT

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench/ is a folder of scripts, not an installed package

from bench.context_set import SET, load_set, squeezed
from bench.dream_effect import (
    COPY_MARK,
    changed_questions,
    credited,
    describe_change,
    duplicate_entries,
    original_of,
    plant,
    reordered,
    reworded_task,
)
from bench.recall import Answered, Question

RAW = json.loads(SET.read_text(encoding="utf-8"))
DATA = load_set()


def test_every_planted_copy_keeps_its_answers_fact_whole_and_has_another_writer() -> None:
    copies = plant(RAW["episodes"], DATA.cases, 40)
    by_id = {e["id"]: e for e in RAW["episodes"]}
    facts: dict[str, str | None] = {}
    for case in DATA.cases:
        if case.memory is not None:
            facts.setdefault(case.memory, case.fact)
    assert len({original_of(c["id"]) for c in copies}) == 40
    assert len(copies) == 60  # one copy for the odd families, two for the even
    for copy in copies:
        original = by_id[original_of(copy["id"])]
        fact = facts[original["id"]]
        text = " ".join(str(copy[k] or "") for k in ("task", "input", "output", "critique"))
        assert fact is None or squeezed(fact) in squeezed(text), copy["id"]
        assert (copy["site"], copy["agent"]) != (original["site"], original["agent"])
        assert copy["task"] != original["task"]
        assert copy["tags"] == original["tags"]  # the same project: a session start finds it too
    assert len({c["id"] for c in copies}) == len(copies)


def test_rewording_and_reordering() -> None:
    assert reworded_task("Fixed E11000 in users.insert", 1) == "Fix for E11000 in users.insert"
    assert reworded_task("Web build killed", 1) == "Noted again: web build killed"
    assert reworded_task("NPM ci dies", 2) == "Same thing, another session: NPM ci dies"
    assert reordered("One. Two. Three.", None) == "Three. One. Two."
    # A fact across two sentences stays whole: the text is left as it was.
    assert reordered("Set A. Then B. Done.", "A. Then B") == "Done. Set A. Then B."
    assert reordered("Set A. Then B.", "A. Then B") == "Set A. Then B."
    assert reordered("Only one sentence", None) == "Only one sentence"


def test_duplicate_entries_count_a_family_once_per_block() -> None:
    copy = f"web-001{COPY_MARK}1"
    assert duplicate_entries(["web-001", "web-002"]) == 0
    assert duplicate_entries(["web-001", copy]) == 1
    assert duplicate_entries([copy, f"web-001{COPY_MARK}2", "web-001", "web-002"]) == 2
    assert duplicate_entries([]) == 0


def test_credited_recall_counts_a_folds_hidden_members_where_its_canonical_is() -> None:
    assert credited(["a", "b"], {"b": ["c", "d"]}) == ("a", "b", "c", "d")
    assert credited(["a"], {}) == ("a",)


def test_changed_questions_name_each_evidence_turns_places_and_the_fold_hiding_it() -> None:
    store = Question("30", 4, "How is Gina's store doing?", frozenset({"30/D4:2"}))
    steady = Question("30", 1, "What did Jon open?", frozenset({"30/D1:2"}))
    others = [f"30/D9:{n}" for n in range(1, 8)]
    before = [
        Answered(store, ("30/D4:1", "30/D2:1", "30/D4:2", *others), 1.0),
        Answered(steady, ("30/D1:2", *others), 1.0),
    ]
    after = [
        Answered(store, ("30/D2:1", *others[:5], "30/D4:2"), 1.0),
        Answered(steady, ("30/D1:2", *others[1:]), 1.0),  # a non-evidence turn left: no change
    ]
    [changed] = changed_questions(before, after, {"30/D4:2": ["30/D4:1"]})
    assert changed["question"] == "How is Gina's store doing?"
    assert changed["shares"] == {"5": [1.0, 0.0]}
    assert changed["evidence"] == {"30/D4:2": {"before": 3, "after": 7, "hidden_in": None}}
    assert changed["left_top5"] == {"30/D4:1": "30/D4:2", "30/D4:2": None}
    assert changed["entered_top5"] == ["30/D9:3", "30/D9:4"]
    said = describe_change(changed)
    assert "R@5 1.00->0.00" in said
    assert "30/D4:2 3->7" in said
    assert "30/D4:1 (hidden in 30/D4:2)" in said
