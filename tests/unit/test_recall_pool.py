"""Tier: unit. The fold lab's data (bench/recall_pool.py) on the hand-made LoCoMo folder: turns as
bench/recall.py writes them, the calendar-keeping placement, and the index keys."""

from __future__ import annotations

import sys
from datetime import UTC, datetime

import pytest
from conftest import ROOT

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench/ is a folder of scripts, not an installed package

from bench import recall, recall_pool

TINY = ROOT / "tests" / "data" / "locomo_tiny"


def test_turns_are_written_as_the_cli_benchmark_writes_them() -> None:
    turns, questions = recall_pool.load(TINY)
    planned = recall.plan_conversation(recall.load_locomo(TINY)[0], recall_pool.NOW_S)
    assert [t.dia_id for t in turns] == [p.key for p in planned]
    assert [t.ts_ms for t in turns] == [p.ts * 1000 for p in planned]
    assert turns[0].text.endswith("\nconversation between Ana and Bo")  # task, then input, as indexed
    newest = max(t.ts_ms for t in turns if t.index == 0)
    assert newest == (recall_pool.NOW_S - recall.NEWEST_AGE_S) * 1000
    assert len(questions) == 3  # categories 1-4 with evidence


def test_the_calendar_placement_moves_whole_years() -> None:
    turns, _ = recall_pool.load(TINY, keep_calendar=True)
    first = datetime.fromtimestamp(turns[0].ts_ms / 1000, tz=UTC)
    assert (first.month, first.day, first.hour, first.minute) == (5, 8, 13, 56)  # 1:56 pm on 8 May
    clock = datetime.fromtimestamp(recall_pool.NOW_S, tz=UTC)
    newest = datetime.fromtimestamp(max(t.ts_ms for t in turns) / 1000, tz=UTC)
    assert 0 < (clock - newest).days < 366


@pytest.mark.parametrize(
    ("text", "years", "expected"),
    [("in June 2022 and 2023", 3, "in June 2025 and 2026"), ("room 1234 at 20:22", 3, "room 1234 at 20:22")],
)
def test_years_in_a_question_move_with_the_sessions(text: str, years: int, expected: str) -> None:
    assert recall_pool._moved_years(text, years) == expected


def test_index_keys() -> None:
    turns, _ = recall_pool.load(TINY)
    assert recall_pool.key_raw(turns, 1) == turns[1].text
    assert recall_pool.key_previous(turns, 1) == f"{turns[1].text}\n{turns[0].text.splitlines()[0]}"
    assert recall_pool.key_previous(turns, 0) == turns[0].text  # a session's first turn has none before
    dated = recall_pool.key_date(turns, 0)
    assert dated.startswith(turns[0].text)
    assert dated.splitlines()[-1].count(" ") == 2  # "8 May 2026"-like: day, month, year
    assert recall_pool._split_identifier("memoryLeak42") == ["memory", "Leak", "42"]
