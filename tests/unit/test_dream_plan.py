"""The dream cycle's decisions (sync/dream/plan.py), from tables of memories and hand-made vectors."""

from __future__ import annotations

import math

import pytest

from sync.dream.plan import Fold, Memory, Standing, Supersede, Thresholds, plan

HOUR = 3_600_000
NOW = 1_000 * HOUR  # any fixed instant: nothing here reads the machine's clock


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


A = unit(1, 0, 0)
A2 = unit(1, 0.25, 0)  # cosine with A ~0.97
B = unit(0, 1, 0)
C = unit(0, 0, 1)


def mem(
    sid: str, text: str, hours_ago: float, *, site: str = "s1", success: bool | None = None, reward: float | None = None
) -> Memory:
    return Memory((site, sid), text, int(NOW - hours_ago * HOUR), success, reward)


def test_paraphrases_fold_and_the_best_is_canonical() -> None:
    memories = [
        mem("1", "Fixed E11000 in users.insert by retrying", 30, success=False),
        mem("2", "Retrying users.insert cleared the E11000 error", 20, site="s2", success=True, reward=0.9),
        mem("3", "E11000 from users.insert: retry it", 10, success=True, reward=0.5),
    ]
    got = plan(memories, [A, A2, A], now_ms=NOW)
    (fold,) = got.folds
    assert (fold.canonical, fold.members) == (("s2", "2"), (("s1", "1"), ("s1", "3")))
    assert fold.cosine_min == pytest.approx(0.97, abs=0.01)
    assert got.supersedes == ()
    assert got.folded == 2


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("ZQX_7781_A must stay off in prod", "ZQX_7781_B must stay off in prod"),
        ("exit 137 was the OOM killer on api", "exit 139 was the OOM killer on api"),
        ("JIRA-4521 fixed by pinning node", "JIRA-4512 fixed by pinning node"),
    ],
)
def test_lookalikes_with_other_identifiers_stay_apart(a: str, b: str) -> None:
    got = plan([mem("1", a, 5), mem("2", b, 4)], [A, A], now_ms=NOW)  # identical vectors
    assert got.folds == ()
    assert got.supersedes == ()


def test_a_changed_value_supersedes_and_does_not_fold() -> None:
    memories = [mem("1", "set pool_size 20 for the api", 50), mem("2", "set pool_size 30 for the api", 5, site="s2")]
    got = plan(memories, [A, A2], now_ms=NOW)
    assert got.folds == ()
    assert got.supersedes == (Supersede(("s2", "2"), ("s1", "1"), (("pool_size", "20", "30"),)),)


def test_the_newest_value_wins_over_every_older_one() -> None:
    memories = [
        mem("1", "pool_size 20 on api", 50),
        mem("2", "pool_size 30 on api", 30),
        mem("3", "pool_size 40 on api", 10),
    ]
    got = plan(memories, [A, A, A], now_ms=NOW)
    assert [(s.newer, s.older) for s in got.supersedes] == [(("s1", "3"), ("s1", "1")), (("s1", "3"), ("s1", "2"))]


def test_dense_disagreement_keeps_apart_what_the_words_allow() -> None:
    memories = [mem("1", "fixed E11000 on users", 5), mem("2", "fixed E11000 on users", 4)]
    assert plan(memories, [A, B], now_ms=NOW).folds == ()
    values = [mem("1", "pool_size 20 on api", 5), mem("2", "pool_size 30 on worker queue", 4)]
    assert plan(values, [A, B], now_ms=NOW).supersedes == ()


def test_a_word_put_in_place_of_another_keeps_two_facts_apart() -> None:
    memories = [
        mem("1", "The team prefers small pull requests", 5),
        mem("2", "The team prefers tested pull requests", 4),
    ]
    assert plan(memories, [A, A], now_ms=NOW).folds == ()


def test_plain_memories_need_the_higher_cosine() -> None:
    memories = [mem("1", "user prefers dark mode", 5), mem("2", "the user likes a dark theme", 4)]
    assert plan(memories, [A, unit(1, 0.5, 0)], now_ms=NOW).folds == ()  # cosine ~0.89
    assert len(plan(memories, [A, A2], now_ms=NOW).folds) == 1


def test_leaders_not_chains() -> None:
    # 1 ~ 2 and 2 ~ 3 but 1 !~ 3: 3 does not ride into 1's cluster through 2.
    v1, v2, v3 = unit(1, 0, 0), unit(1, 0.6, 0), unit(1, 1.6, 0)
    memories = [mem("1", "a b", 5, success=True), mem("2", "a b", 6), mem("3", "a b", 7)]
    got = plan(memories, [v1, v2, v3], now_ms=NOW, thresholds=Thresholds(plain_fold_cosine=0.85))
    (fold,) = got.folds
    assert (fold.canonical, fold.members) == (("s1", "1"), (("s1", "2"),))
    assert fold.cosine_min == pytest.approx(0.857, abs=0.01)


def test_standing_steps_and_people_are_respected() -> None:
    memories = [
        mem("1", "E11000 retry users.insert", 30),
        mem("2", "E11000 retry users.insert", 20),
        mem("3", "E11000 retry users.insert", 10, success=True),
    ]
    vectors = [A, A, A]
    # 1 is a standing canonical: it stays canonical though 3 is better; 2 is already hidden.
    standing = Standing(canonicals=frozenset({("s1", "1")}), hidden=frozenset({("s1", "2")}))
    assert plan(memories, vectors, now_ms=NOW, standing=standing).folds == (Fold(("s1", "1"), (("s1", "3"),), 1.0),)
    # A person pulled 1 and 3 apart: they are not folded again.
    apart = Standing(
        canonicals=frozenset({("s1", "1")}),
        hidden=frozenset({("s1", "2")}),
        apart=frozenset({frozenset({("s1", "1"), ("s1", "3")})}),
    )
    assert plan(memories, vectors, now_ms=NOW, standing=apart).folds == ()


def test_salience_outranks_outcome_when_given() -> None:
    memories = [mem("1", "E11000 retry users.insert", 30, success=True), mem("2", "E11000 retry users.insert", 20)]
    assert plan(memories, [A, A], now_ms=NOW).folds[0].canonical == ("s1", "1")
    got = plan(memories, [A, A], now_ms=NOW, salience={("s1", "2"): 0.9, ("s1", "1"): 0.1})
    assert got.folds[0].canonical == ("s1", "2")


def test_young_memories_wait_for_the_next_night() -> None:
    memories = [mem("1", "E11000 retry users.insert", 30), mem("2", "E11000 retry users.insert", 0.5)]
    got = plan(memories, [A, A], now_ms=NOW)
    assert got.folds == ()
    assert got.considered == 1
    assert len(plan(memories, [A, A], now_ms=NOW + HOUR).folds) == 1


def test_vectors_must_match_the_memories() -> None:
    with pytest.raises(ValueError, match="2 memories but vectors of shape"):
        plan([mem("1", "x", 5), mem("2", "y", 5)], [A], now_ms=NOW)


def test_nothing_to_do() -> None:
    got = plan([], [], now_ms=NOW)
    assert got.folds == ()
    assert got.supersedes == ()
    assert got.considered == 0
    assert plan([mem("1", "x", 5)], [C], now_ms=NOW).folds == ()


@pytest.mark.parametrize(
    ("a", "b"),
    [
        # Two people's charity runs (LoCoMo's turns): the same number, alike to a dense model.
        (
            "Maria: Last weekend I participated in a 5K charity run for a homeless shelter.",
            "John: I set up a 5K charity run in our neighborhood. It was all for a good cause - to help out veterans.",
        ),
        # One acronym named by both: the same identifiers, another event.
        (
            # (its "yesterday" left out: a time the other does not say would not keep them apart)
            "Caroline: I went to a LGBTQ support group and it was so powerful.",
            "Melanie: Wow, Caroline, can't wait to see your show - the LGBTQ community needs more platforms!",
        ),
    ],
)
def test_memories_alike_to_the_model_but_sharing_few_words_stay_apart(a: str, b: str) -> None:
    got = plan([mem("1", a, 5), mem("2", b, 4)], [A, A], now_ms=NOW)  # identical vectors
    assert got.folds == ()
    loose = plan([mem("1", a, 5), mem("2", b, 4)], [A, A], now_ms=NOW, thresholds=Thresholds(fold_words=0.0))
    assert len(loose.folds) == 1  # the words alone keep them apart


DEPLOY = "The nightly deploy of the api failed today; rolled back to the last build."
SHOW = "Caroline: Next month I'm having an art show with my paintings - can't wait!"


@pytest.mark.parametrize(
    ("a", "b", "hours_ago", "folds"),
    [
        # NOW is 16:00 UTC on a Wednesday: 5 and 10 hours ago are the same day, 30 the day before
        # (the same failure, said a day apart as "today" and "yesterday", folds).
        (DEPLOY, DEPLOY, (5, 10), True),
        (DEPLOY, DEPLOY, (5, 30), False),  # two days' failures
        (DEPLOY, "Yesterday the nightly deploy of the api failed, so we rolled back to the last build.", (30, 5), True),
        (DEPLOY, DEPLOY.replace(" today", ""), (5, 30), True),  # one says no time: nothing to disagree with
        # NOW is 11 February: 100 hours ago is 7 February, 15 days ago 27 January (whose "next
        # month" is this month).
        (SHOW, SHOW, (5, 100), True),
        (SHOW, SHOW, (5, 15 * 24), False),  # "next month": March, then February
        (SHOW, "Caroline: I'm having an art show with my paintings this month - can't wait!", (15 * 24, 5), True),
        (SHOW, SHOW.replace("Next month", "Three weeks ago"), (5, 100), False),
    ],
)
def test_times_said_relative_to_the_writing_must_name_the_same_periods(
    a: str, b: str, hours_ago: tuple[float, float], folds: bool
) -> None:
    got = plan([mem("1", a, hours_ago[0]), mem("2", b, hours_ago[1], site="s2")], [A, A], now_ms=NOW)
    assert len(got.folds) == (1 if folds else 0)
