"""Tier: e2e. The recall benchmark with the real agentdb package and a real daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GEN, ROOT, read_agentdb_rows, require_node_modules

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench/ is a folder of scripts, not an installed package


from test_recall_bench import NOW, TINY

from bench.recall import (
    load_locomo,
    plan_conversation,
    run,
    write_agentdb,
)


def test_the_real_package_writes_them_with_those_times(tmp_path: Path) -> None:
    require_node_modules(GEN)
    [conv] = load_locomo(TINY)
    planned = plan_conversation(conv, NOW)
    keys = write_agentdb(tmp_path / "agentdb.db", planned)
    rows = read_agentdb_rows(tmp_path / "agentdb.db")
    assert sorted(keys.values()) == sorted(p.key for p in planned)
    for source_id, key in keys.items():
        row, plan = rows[int(source_id)], next(p for p in planned if p.key == key)
        assert (row["ts"], row["created_at"]) == (plan.ts, plan.ts)
        assert json.loads(row["metadata"]) == {"dia_id": key}
        assert json.loads(row["tags"]) == ["t1"]
        assert row["task"].decode() == plan.episode["task"]
        assert row["session_id"].decode() == f"t1-s{key[1]}"


def test_missing_data_and_unknown_conversations_are_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        load_locomo(tmp_path / "nowhere")
    with pytest.raises(ValueError, match="no conversation named 99"):
        load_locomo(TINY, ["99"])
    done = subprocess.run(
        [sys.executable, "-m", "bench.recall", str(tmp_path / "nowhere")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"recall: {tmp_path / 'nowhere'} does not exist: pass LoCoMo's locomo10.json")
    assert done.stderr.count("\n") == 1  # one sentence, no traceback


@pytest.mark.slow
def test_the_benchmark_through_a_real_daemon() -> None:
    """The tiny folder and the labelled set, written, synced, served by ``memsync run`` and searched
    with ``memsync search``: every evidence turn maps back to its dia_id, so BM25, whose query words
    are in each evidence turn, finds all of them within five."""
    require_node_modules(GEN)
    res = run(TINY, modes=("bm25",))
    index, locomo, labelled = res["runs"]
    assert (index["part"], index["episodes"]) == ("index", 6)
    assert (locomo["corpus"], locomo["questions"]) == ("locomo", 3)
    assert locomo["recall"]["5"] == 100.0
    assert set(locomo["by_category"]) == {"1", "2", "4"}
    assert labelled["corpus"] == "labelled"
    assert labelled["queries"] == 36
    # BM25 finds exact identifiers (the labelled set's other half is paraphrases, where it is weak).
    assert labelled["mrr_identifier"] > 0.8
    assert res["params"]["dropped_evidence"] == 1
