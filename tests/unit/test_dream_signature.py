"""The dream cycle's lexical tests (sync/dream/signature.py), from tables."""

from __future__ import annotations

import pytest

from sync.dream.signature import keyed_values, periods, relative_times, signature


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ("Fixed E11000 in users.insert by retrying", "Retrying users.insert cleared the E11000 error", True),
        ("ZQX_7781_A must stay off in prod", "ZQX_7781_B must stay off in prod", False),
        ("set pool_size 20 for the api", "set pool_size 30 for the api", False),
        ("exit 137 was the OOM killer", "The OOM killer caused exit code 137", True),
        ("exit 137 was the OOM killer", "exit 139 was a segfault", False),
        ("user prefers dark mode", "the user likes a dark theme", True),  # both name nothing
        ("JIRA-4521 fixed by pinning node 20", "JIRA-4512 fixed by pinning node 20", False),
        ("pool_size 32 for the api3 service", "pool_size 32 for the api7 service", False),  # short names too
    ],
)
def test_same_fact(a: str, b: str, same: bool) -> None:
    assert signature(a).same_fact(signature(b)) is same


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("pool_size 20", {"pool_size": "20"}),
        ("pool_size = 20", {"pool_size": "20"}),
        ("raised pool_size from 20 to 30", {"pool_size": "30"}),
        ("timeout of 30s for the gateway", {"timeout": "30s"}),
        ("set workers to 8, memory_limit: 512mb", {"workers": "8", "memory_limit": "512mb"}),
        ("no numbers here", {}),
        ("E11000 on users", {}),  # an error code is an identifier, not a value
        ("exit 137 after HTTP 502", {}),  # codes name things
    ],
)
def test_keyed_values(text: str, values: dict[str, str]) -> None:
    assert keyed_values(text) == values


def test_a_value_like_identifier_is_a_number_not_an_identifier() -> None:
    older, newer = signature("memory_limit 512MB on the worker"), signature("memory_limit 1024MB on the worker")
    assert older.ids == newer.ids == frozenset({"memory_limit"})
    assert older.subject() == newer.subject()
    assert newer.changed(older) == (("memory_limit", "512mb", "1024mb"),)


def test_subject_and_change() -> None:
    older, newer = signature("pool_size 20 for the api"), signature("raised pool_size from 20 to 30 for the api")
    assert older.subject() == newer.subject()
    assert newer.changed(older) == (("pool_size", "20", "30"),)
    assert signature("nothing keyed").subject() is None


@pytest.mark.parametrize(
    ("older", "newer", "same"),
    [
        ("set pool_size to 20 for the api service", "raised pool_size from 20 to 30 for the api service", True),
        ("set pool_size to 20 for the api service", "set pool_size to 30 for the api service", True),
        ("set pool_size to 20 for the api service", "set pool_size to 30 for the worker service", False),
        ("pool_size 20 on api", "max_workers 20 on api", False),
    ],
)
def test_one_subject_across_an_update(older: str, newer: str, same: bool) -> None:
    assert (signature(older).subject() == signature(newer).subject()) is same


@pytest.mark.parametrize(
    ("a", "b", "lookalike"),
    [
        (
            "The team prefers small pull requests for releases",
            "The team prefers tested pull requests for releases",
            True,
        ),
        ("the user prefers dark mode", "the user prefers dark mode", False),  # the same words: a repeat
        ("Fixed it by adding a retry", "Fixed it by adding retry", False),  # a stopword
        ("Fixed it by adding a retry", "Fixed it quickly by adding a retry", False),  # a word added
        ("Fixed E11000 in users.insert by retrying", "Retrying users.insert cleared the E11000 error", False),
    ],
)
def test_lookalike_words(a: str, b: str, lookalike: bool) -> None:
    assert signature(a).lookalike(signature(b)) is lookalike


@pytest.mark.parametrize(
    ("text", "times"),
    [
        ("The deploy failed today.", {("day", 0)}),
        ("Tonight, or tomorrow at the latest", {("day", 0), ("day", 1)}),
        ("Yesterday's fix held; 2 days ago it did not", {("day", -1), ("day", -2)}),
        ("Next month the show; last week the rehearsal; this year the tour", {("month", 1), ("week", -1), ("year", 0)}),
        ("three weeks ago, a month ago", {("week", -3), ("month", -1)}),
        ("The month's report for the next step", set()),
    ],
)
def test_times_said_relative_to_the_writing(text: str, times: set[tuple[str, int]]) -> None:
    assert relative_times(text) == times


def test_relative_times_resolve_against_each_writing_time() -> None:
    wednesday = 1_000 * 3_600_000  # 1970-02-11 16:00 UTC
    assert periods(frozenset({("day", -1)}), wednesday) == periods(frozenset({("day", 0)}), wednesday - 86_400_000)
    monday, sunday = wednesday - 2 * 86_400_000, wednesday - 3 * 86_400_000
    assert periods(frozenset({("week", 0)}), monday) == periods(frozenset({("week", 0)}), wednesday)
    assert periods(frozenset({("week", 0)}), sunday) != periods(frozenset({("week", 0)}), monday)
    assert periods(frozenset({("month", 1)}), wednesday) == {("month", 1970 * 12 + 2)}  # March
    assert periods(frozenset(), wednesday) == frozenset()
