"""Tier: unit. docs/BENCHMARKS.md's generated tables are bench/figures.json rendered (regenerated
here in memory and compared; `make docs` or `make bench` rewrites them); every benchmark there has
its command, date, commit and machine, a short note in the doc, and a "met" that agrees with its
target; a new result folds into its own entry and leaves the others' as they were measured."""

from __future__ import annotations

import copy
import re
import sys
from typing import Any

import pytest
from conftest import ROOT

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # bench/ is a folder of scripts, not an installed package

from bench import figures


def test_the_doc_is_the_figures_file_rendered() -> None:
    text = figures.DOC.read_text(encoding="utf-8")
    assert text == figures.rendered(text, figures.load()), "docs/BENCHMARKS.md is out of date: run `make docs`"


def test_a_hand_edit_of_a_figure_is_seen() -> None:
    text = figures.DOC.read_text(encoding="utf-8")
    edited = text.replace(
        "| latency | latency p50 (10 pre-existing) | 15.9 ms |", "| latency | latency p50 (10 pre-existing) | 9.9 ms |"
    )
    assert edited != text
    assert edited != figures.rendered(edited, figures.load())


def test_every_benchmark_says_how_when_and_where() -> None:
    data = figures.load()
    text = figures.DOC.read_text(encoding="utf-8")
    notes = set(re.findall(r"^### (\w+)$", text, re.MULTILINE))
    assert set(data["benchmarks"]) == notes, "each benchmark has one short note in BENCHMARKS.md"
    for name, entry in data["benchmarks"].items():
        assert entry["command"].startswith(("python -m bench.", ".venv/bin/python -m bench.")), name
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", entry["measured"]), name
        assert re.fullmatch(r"[0-9a-f]{7,40}(\+changes)?", entry["commit"]), name
        assert entry["machine"], name
        assert entry["baseline"], name
        assert entry["figures"], name
        ratio = entry.get("ratio")
        assert ratio is None or any(f["metric"] == ratio for f in entry["figures"]), name


SIMPLE = re.compile(r"(<=|>=) ([\d,.]+) (.+)")


def met(value: float, unit: str, target: str) -> bool | None:
    """Whether ``value`` meets a simple target (`<= 100 ms`); None for any other kind."""
    found = SIMPLE.fullmatch(target)
    if found is None or found.group(3).strip() != unit.strip():
        return None
    bound = float(found.group(2).replace(",", ""))
    return value <= bound if found.group(1) == "<=" else value >= bound


def test_met_agrees_with_each_simple_target() -> None:
    checked = 0
    for entry in figures.load()["benchmarks"].values():
        for figure in entry["figures"]:
            if figure["target"] and (verdict := met(figure["value"], figure["unit"], figure["target"])) is not None:
                assert figure["met"] is verdict, figure
                checked += 1
    assert checked >= 20
    assert met(19.9, "ms", "<= 20 ms") is True
    assert met(20.3, "ms", "<= 20 ms") is False
    assert met(0.85, "x", ">= 0.8 x") is True


@pytest.mark.parametrize("baseline", [64.98945279866332, 87.72629490392649, 0.05829596412556054, 310.3, 20.0])
def test_a_figure_equal_to_its_baseline_meets_its_target_as_written(baseline: float) -> None:
    from bench.common import at_least, at_most

    for figure in (at_least("r", baseline, "%", baseline), at_most("d", baseline, "ms", baseline)):
        assert figure.met is True
        assert met(figure.value, figure.unit, figure.target or "") is True, figure.target
    assert at_least("r", baseline * 0.999, "%", baseline).met is False
    assert at_most("d", baseline * 1.001, "ms", baseline).met is False


def result(name: str, at: str) -> dict[str, Any]:
    return {
        "benchmark": name,
        "at": at,
        "load": [0.5, 0.5, 0.5],
        "params": {"runs": 1},
        "figures": [
            {"metric": "idle CPU", "value": 2.5, "unit": "CPU-s/hour", "target": "<= 5 CPU-s/hour", "met": True}
        ],
        "runs": [{}],
    }


def test_a_new_result_folds_into_its_own_entry() -> None:
    data = figures.load()
    before = copy.deepcopy(data)
    figures.fold(
        data,
        result("idle", "2030-01-02T03:04:05Z"),
        command="python -m bench.run_all --only idle",
        repetitions="2.5 CPU-s/h",
        commit="abc1234",
        machine="1 CPU (test)",
    )
    assert data["benchmarks"]["idle"]["baseline"] == before["benchmarks"]["idle"]["baseline"]
    assert {k: v for k, v in data["benchmarks"].items() if k != "idle"} == {
        k: v for k, v in before["benchmarks"].items() if k != "idle"
    }
    text = figures.rendered(figures.DOC.read_text(encoding="utf-8"), data)
    assert "| idle | idle CPU | 2.50 CPU-s/hour | <= 5 CPU-s/hour | yes |" in text
    assert "| idle | idle RSS |" not in text
    assert "2030-01-02 03:04, abc1234, 0.5/0.5/0.5" in text
    assert "Measured on 1 CPU (test); 2 CPUs" in text
    assert '- idle (2030-01-02T03:04:05Z, load 0.5/0.5/0.5, params {"runs": 1}): 2.5 CPU-s/h' in text
