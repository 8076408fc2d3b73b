"""bench/recall.py on a hand-made LoCoMo-format folder (tests/data/locomo_tiny: 2 sessions, 6 turns,
3 questions of categories 1-4 and one of category 5): how turns become episodes (times, dia_id,
tags), what the real agentdb package writes for them, the evidence it reads, and the recall
arithmetic; the whole benchmark through a real daemon is the slow test at the end."""

from __future__ import annotations

import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import pytest
from conftest import ROOT

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench/ is a folder of scripts, not an installed package

from harness.relevance import shared_rank_of as shared_rank  # what bench.recall scores with

from bench.recall import (
    Answered,
    Question,
    below_alone,
    evidence_ids,
    figures,
    found_share,
    load_locomo,
    locomo_record,
    parse_session_date,
    plan_conversation,
    recall_table,
)

TINY: Final = Path(__file__).parents[1] / "data" / "locomo_tiny"
NOW: Final = 1_800_000_000  # the clock the episodes' times are set from
# Session 2 (10:05 am on 10 June, 2023) began 32 days, 20 h and 9 min after session 1 (1:56 pm on 8 May).
SESSION_GAP_S: Final = 32 * 86400 + 20 * 3600 + 9 * 60


def test_session_dates_are_read_as_written() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_date("12:09 am on 1 January, 2024") == datetime(2024, 1, 1, 0, 9, tzinfo=UTC)
    with pytest.raises(ValueError, match="is not like '1:56 pm on 8 May, 2023'"):
        parse_session_date("8 May 2023")


def test_turns_become_episodes_with_their_session_time_dia_id_and_tag() -> None:
    [conv] = load_locomo(TINY)
    planned = {p.key: p for p in plan_conversation(conv, NOW)}
    assert list(planned) == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D2:3"]
    newest = NOW - 3600  # the newest session began an hour before now
    assert [planned[k].ts for k in ("D2:1", "D2:2", "D2:3")] == [newest, newest + 30, newest + 60]
    assert [planned[k].ts for k in ("D1:1", "D1:2", "D1:3")] == [newest - SESSION_GAP_S + 30 * i for i in range(3)]
    assert planned["D1:2"].episode == {
        "sessionId": "t1-s1",
        "task": "Bo: Lovely! I started learning the cello. [shares a photo of a cello leaning on a wooden chair]",
        "input": "conversation between Ana and Bo",
        "reward": 0,
        "success": False,
        "tags": ["t1"],
        "metadata": {"dia_id": "D1:2"},
    }
    assert planned["D2:2"].episode["task"] == "Ana: Pistachio ran his first race at the Brighton track."
    assert planned["D2:2"].episode["sessionId"] == "t1-s2"


def test_questions_of_categories_1_to_4_with_the_evidence_they_name() -> None:
    [conv] = load_locomo(TINY)
    assert [(q.category, q.evidence) for q in conv.questions] == [
        (4, frozenset({"D1:1"})),
        (1, frozenset({"D1:2", "D2:1"})),  # one entry, "D1:2; D2:1"
        (2, frozenset({"D2:2"})),  # "D9:9" names no turn: dropped and counted
    ]
    assert conv.dropped_evidence == 1


def test_the_public_single_file_reads_as_the_folder_does(tmp_path: Path) -> None:
    """locomo10.json holds a list of {"sample_id", "conversation", "qa"}."""
    data = json.loads((TINY / "t1.json").read_text(encoding="utf-8"))
    qa = data.pop("qa")
    (tmp_path / "locomo10.json").write_text(json.dumps([{"sample_id": "t1", "conversation": data, "qa": qa}]))
    assert load_locomo(tmp_path / "locomo10.json") == load_locomo(TINY)


def test_evidence_entries_as_the_data_writes_them() -> None:
    known = frozenset({"D1:1", "D8:6", "D9:17", "D11:26"})
    assert evidence_ids(["D8:6; D9:17"], known) == (frozenset({"D8:6", "D9:17"}), 0)
    assert evidence_ids(["D:11:26", "D", "D10:19", "D1:1"], known) == (frozenset({"D11:26", "D1:1"}), 2)


def question(category: int, *evidence: str) -> Question:
    return Question("c", category, "?", frozenset(evidence))


def test_recall_share_and_all_found_at_each_k() -> None:
    ranked = tuple(f"D1:{i}" for i in range(1, 61))  # D1:1 first ... D1:60 last
    assert found_share(ranked, frozenset({"D1:3", "D1:7"}), 5) == 0.5
    assert found_share(ranked, frozenset({"D1:3", "D1:7"}), 10) == 1.0
    assert found_share(ranked, frozenset({"D9:9"}), 50) == 0.0
    answers = [
        Answered(question(4, "D1:1"), ranked, 100.0),  # first: found at every k
        Answered(question(1, "D1:3", "D1:7", "D1:30"), ranked, 120.0),  # 2/3 by 10, 3/3 by 50
        Answered(question(2, "D1:12", "D1:55"), ranked, 300.0),  # 1/2 at 25, not all found within 50
        Answered(question(2, "D2:1"), ranked, 110.0),  # never found
    ]
    table = recall_table(answers)
    assert table["questions"] == 4
    shares = {"5": 1 + 1 / 3, "10": 1 + 2 / 3, "25": 1 + 2 / 3 + 1 / 2, "50": 1 + 1 + 1 / 2}
    assert table["recall"] == pytest.approx({k: 100 * v / 4 for k, v in shares.items()})
    assert table["all"] == {"5": 25.0, "10": 25.0, "25": 25.0, "50": 50.0}
    record = locomo_record("bm25", answers)
    assert record["mode"] == "bm25"
    assert set(record["by_category"]) == {"1", "2", "4"}
    assert record["by_category"]["2"]["questions"] == 2
    assert record["by_category"]["2"]["recall"]["25"] == pytest.approx(25.0)
    assert record["by_category"]["1"]["all"] == {"5": 0.0, "10": 0.0, "25": 0.0, "50": 100.0}
    assert record["p50_ms"] == pytest.approx(115.0)


def test_each_conversation_is_scored_apart_and_a_default_below_one_list_is_named() -> None:
    ranked = tuple(f"D1:{i}" for i in range(1, 61))
    early = [Answered(Question("26", 4, "?", frozenset({"D1:1"})), ranked, 1.0)]
    late = [Answered(Question("30", 4, "?", frozenset({"D1:8"})), ranked, 1.0)]
    default = locomo_record("default", early + late)  # 30's evidence 8th: found from k = 10
    assert set(default["by_conversation"]) == {"26", "30"}
    assert default["by_conversation"]["30"]["recall"] == {"5": 0.0, "10": 100.0, "25": 100.0, "50": 100.0}
    first = tuple(f"D1:{i}" for i in (8, *range(1, 8)))  # bm25 finds 30's evidence first
    bm25 = locomo_record("bm25", [*early, Answered(late[0].question, first, 1.0)])
    dense = locomo_record("dense", early + late)
    assert below_alone([default, bm25, dense]) == ["conversation 30 R@5: default 0.0 < bm25 100.0"]
    assert below_alone([default, dense]) == []
    bar = [f for f in figures([default, bm25, dense]) if "below" in f.metric]
    assert [(f.value, f.met) for f in bar] == [(1, False)]
    assert not [f for f in figures([default, dense]) if "below" in f.metric]  # nothing to compare with


def test_tied_scores_share_their_ranks() -> None:
    assert shared_rank([("a", 0.9), ("b", 0.5)], frozenset({"b"})) == (0.5, 2)
    assert shared_rank([("a", 0.9), ("b", 0.9), ("c", 0.1)], frozenset({"b"})) == (0.75, 2)
    assert shared_rank([("a", 0.9)], frozenset({"z"})) == (0.0, None)
