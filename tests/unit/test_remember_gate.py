"""The near-duplicate / update gate (``sync.source.journal.gate``), from a table."""

from __future__ import annotations

import pytest

from sync.source.journal.gate import NEAR, Candidate, Verdict, judge, values

OLD = "site:m1"

# (the save, the nearest memory's text, its cosine, the verdict, the values that differ)
TABLE = [
    # the same words: a duplicate, returned
    ("db pool_size is 20 on prod", "db pool_size is 20 on prod", 0.99, Verdict.DUPLICATE, ()),
    # a paraphrase with the same values: a duplicate
    ("Set pool_size to 20 for the prod db", "The prod db needs pool_size 20", 0.96, Verdict.DUPLICATE, ()),
    # a value changed: an update, kept as newer
    ("db pool_size is 30 on prod", "db pool_size is 20 on prod", 0.97, Verdict.UPDATE, ("20", "30")),
    ("retry after E11000 with upsert", "retry after E11001 with upsert", 0.98, Verdict.UPDATE, ("e11000", "e11001")),
    ("deploy uses node v20.11", "deploy uses node v18.2", 0.96, Verdict.UPDATE, ("v18.2", "v20.11")),
    (
        "read config from src/app/settings.py",
        "read config from src/app/config.py",
        0.96,
        Verdict.UPDATE,
        ("src/app/config.py", "src/app/settings.py"),
    ),
    # a negation one has and the other not: an update
    ("do not use the staging cache", "use the staging cache", 0.95, Verdict.UPDATE, ()),
    # at the threshold counts; below it is new, whatever the words
    ("db pool_size is 20 on prod", "db pool_size is 20 on prod", NEAR, Verdict.DUPLICATE, ()),
    ("db pool_size is 20 on prod", "db pool_size is 20 on prod", 0.9499, Verdict.NEW, ()),
    ("db pool_size is 30 on prod", "db pool_size is 20 on prod", 0.80, Verdict.NEW, ()),
    # not compared (no similarity): new
    ("db pool_size is 20 on prod", "db pool_size is 20 on prod", None, Verdict.NEW, ()),
]


@pytest.mark.parametrize(("text", "old", "similarity", "verdict", "differs"), TABLE)
def test_the_gate(text: str, old: str, similarity: float | None, verdict: Verdict, differs: tuple[str, ...]) -> None:
    judged = judge(text, [Candidate(OLD, old, similarity)])
    assert judged.verdict is verdict
    assert judged.differs == differs
    assert (judged.existing is None) == (verdict is Verdict.NEW)


def test_no_candidates_is_new() -> None:
    assert judge("anything at all", []).verdict is Verdict.NEW


def test_the_first_close_candidate_counts() -> None:
    far = Candidate("site:9", "db pool_size is 20 on prod", 0.5)
    dup = Candidate("site:m2", "db pool_size is 20 on prod", 0.99)
    upd = Candidate("site:m3", "db pool_size is 40 on prod", 0.96)
    judged = judge("db pool_size is 20 on prod", [far, dup, upd])
    assert judged.verdict is Verdict.DUPLICATE
    assert judged.existing == dup


def test_values_are_numbers_and_identifiers_not_words() -> None:
    assert values("Set pool_size to 20 in PoolConfig, see db.conf and JIRA-12.") == {
        "pool_size",
        "20",
        "poolconfig",
        "db.conf",
        "jira-12",
    }
