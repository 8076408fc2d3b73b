"""Derived links and their ranking (sync/policy/links.py), from tables: led_to by session and time,
evolved_from by the task's key, mentions by shared identifiers, explicit rows seen from either end."""

from __future__ import annotations

from typing import Any

import pytest

from sync.policy.links import (
    Candidate,
    EpisodeKeys,
    EpisodeRef,
    Link,
    StoredLink,
    candidate,
    derive,
    episode_keys,
    related,
    task_key,
)


def ep(source_id: str, ts: int, *, site: str = "laptop", session: str | None = "s1", **more: Any) -> Candidate:
    return candidate({"sourceSite": site, "sourceId": source_id, "ts": ts, "sessionId": session, **more})


def seen(links: list[Link]) -> list[tuple[str, str, str]]:
    return [(link.kind, str(link.other), link.direction) for link in links]


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Fix the login bug", "fix   the LOGIN bug.", True),
        ("Fix the login bug", "Fix the login bug!", True),
        ("\uff26\uff49\uff58 login", "fix login", True),  # full-width letters fold (NFKC)
        ("Fix the login bug", "Fix the logout bug", False),
        ("deploy v1.2", "deploy v1.3", False),
    ],
)
def test_a_task_s_key_folds_case_spaces_and_trailing_punctuation(a: str, b: str, same: bool) -> None:
    assert (task_key(a) == task_key(b)) is same


@pytest.mark.parametrize("task", [None, "", "  ", "...", 12])
def test_no_task_has_no_key(task: object) -> None:
    assert task_key(task) is None


def test_episode_keys_prefer_the_stored_fields_then_the_metadata_then_the_task() -> None:
    own = episode_keys({"task": "x", "taskKey": "k1", "entities": ["E11000", "e11000", " src/a.py "]})
    assert (own.task_key, own.entities) == ("k1", ("e11000", "src/a.py"))
    meta = episode_keys({"task": "x", "metadata": {"taskKey": "k2", "entities": ["B", "a", 3]}})
    assert (meta.task_key, meta.entities) == ("k2", ("a", "b"))
    plain = episode_keys({"task": "x", "sessionId": "", "ts": True, "metadata": "{}"})
    assert plain == EpisodeKeys(None, None, task_key("x"), ())
    # Neither field nor metadata: the identifiers the task names (what every backbone's record has).
    named = episode_keys({"task": "Mongo E11000 again in src/users/repo.py, see JIRA-4521"})
    assert named.entities == ("e11000", "jira-4521", "src/users/repo.py")


def test_two_tasks_naming_one_error_code_mention_each_other_across_sessions() -> None:
    first = ep("1", 100, session="s1", task="E11000 duplicate key on users.email")
    again = ep("2", 900, session="s2", task="insert fails with E11000 after the import")
    other = ep("3", 500, session="s3", task="rotate the TLS certificate")
    assert ("mentions", "laptop:2") in [(k, o) for k, o, _ in seen(derive(first, [again, other]))]
    assert all(k != "mentions" for k, _, _ in seen(derive(other, [first, again])))


def test_led_to_links_the_episodes_just_before_and_after_in_the_same_site_s_session() -> None:
    subject = ep("2", 20)
    others = [
        ep("1", 10),
        ep("0", 5),
        ep("3", 30),
        ep("4", 40),
        ep("9", 25, session="s2"),  # another session
        ep("8", 25, site="vm"),  # the same session name on another site
        ep("7", 25, session=None),
    ]
    assert [x for x in seen(derive(subject, others)) if x[0] == "led_to"] == [
        ("led_to", "laptop:1", "in"),
        ("led_to", "laptop:3", "out"),
    ]


def test_led_to_breaks_ties_in_time_by_key_and_ignores_the_subject_among_the_others() -> None:
    subject = ep("b", 10)
    links = derive(subject, [subject, ep("a", 10), ep("c", 10)])
    assert seen(links) == [("led_to", "laptop:a", "in"), ("led_to", "laptop:c", "out")]


def test_evolved_from_links_the_tries_of_the_same_task_across_sites_later_to_earlier() -> None:
    subject = ep("5", 50, task="Fix the login bug", session=None)
    others = [
        ep("1", 10, task="fix the login bug.", session=None),
        ep("2", 20, task="Fix the login bug", site="vm", session=None),
        ep("3", 90, task="FIX THE LOGIN BUG", session=None),
        ep("4", 95, task="Fix the logout bug", session=None),
    ]
    assert seen(derive(subject, others)) == [
        ("evolved_from", "vm:2", "out"),  # the try just before it
        ("evolved_from", "laptop:3", "in"),  # the try just after it comes from it
    ]


def test_mentions_name_the_shared_identifiers_and_rank_more_shared_first() -> None:
    subject = ep("1", 10, session=None, entities=["E11000", "users.email", "src/db.py", "JIRA-7"])
    one = ep("2", 12, session=None, entities=["e11000"])
    four = ep("3", 99, session=None, entities=["E11000", "users.email", "src/db.py", "jira-7", "other"])
    none = ep("4", 11, session=None, entities=["ECONNRESET"])
    links = related(subject, [one, four, none], [], limit=10)
    assert seen(links) == [("mentions", "laptop:3", "both"), ("mentions", "laptop:2", "both")]
    assert links[0].reason == "both name e11000, jira-7, src/db.py and 1 more"
    assert links[1].reason == "both name e11000"
    assert links[1].shared == ("e11000",)


def test_explicit_rows_are_seen_from_either_end_with_what_is_held_of_the_other() -> None:
    me = EpisodeRef("laptop", "m2")
    subject = Candidate(me, EpisodeKeys(None, 100, None, ()))
    held = ep("12", 90, session=None, task="the session")
    rows = [
        StoredLink(me, EpisodeRef("laptop", "12"), "about"),
        StoredLink(EpisodeRef("laptop", "m3"), me, "updates"),
        StoredLink(me, EpisodeRef("vm", "7"), "similar_to"),
        StoredLink(EpisodeRef("a", "1"), EpisodeRef("a", "2"), "about"),  # not this memory's
        StoredLink(me, me, "about"),  # never to itself
        StoredLink(me, EpisodeRef("a", "3"), "consolidates"),  # not a kind yet
    ]
    links = related(subject, [held], rows, limit=10)
    assert seen(links) == [
        ("updates", "laptop:m3", "in"),
        ("about", "laptop:12", "out"),
        ("similar_to", "vm:7", "out"),
    ]
    assert [(x.reason, x.task, x.ts) for x in links] == [
        ("a newer value of it", None, None),
        ("the episode it is about", "the session", 90),
        ("a near-duplicate of it", None, None),
    ]


def test_related_ranks_by_kind_then_nearness_in_time_and_stops_at_the_limit() -> None:
    subject = ep("5", 50, task="t", entities=["ZQX_7781_A"])
    others = [
        ep("4", 40, task="u", entities=["zqx_7781_a"]),
        ep("6", 60, task="t", session="s2", entities=["zqx_7781_a"]),
        ep("1", 1, task="t", session="s3", entities=["zqx_7781_a"]),
    ]
    rows = [StoredLink(EpisodeRef("laptop", "5"), EpisodeRef("laptop", "1"), "similar_to")]
    assert seen(related(subject, others, rows, limit=10)) == [
        ("similar_to", "laptop:1", "out"),
        ("led_to", "laptop:4", "in"),
        ("evolved_from", "laptop:6", "in"),  # nearer in time
        ("evolved_from", "laptop:1", "out"),
        ("mentions", "laptop:4", "both"),
        ("mentions", "laptop:6", "both"),
        ("mentions", "laptop:1", "both"),
    ]
    assert len(related(subject, others, rows, limit=3)) == 3
    assert related(subject, others, rows, limit=0) == []
