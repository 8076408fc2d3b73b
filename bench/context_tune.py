"""Choosing the context block's tuned values on half the context set, and checking them on the other.

Replays what the daemon answered for each case of the context set (``python -m bench.context_set
--capture FILE``: the search's and the recent results, as ``memsync context`` asks for them; or the
same searched in process, ``python -m bench.judgement_lab --context FILE``)
through the hook's own pure steps (``daemon.context.hook.plan``, ``compose``, ``fitted``) for
every combination of values in the grids, and scores each block as bench/context_set.py does. Two
stages: the floor's values (the entries' at the code's), then the entries' (how many, how long)
with the floor chosen. Values are chosen on the cases of split ``tune`` only: the combination that
meets the issue's targets there (fact whole >= 90%, unrelated entries <= 2 per block, nothing for
>= 90% of the prompts that should get nothing) with the most margin, then fewer unrelated entries,
then fewer characters; among the floors the tune half cannot tell apart, the strictest (the
highest floor, then the narrowest margin, then the least weight on the project), among the
entries', the one nearest the code's values. The choice is then scored on split ``check``, which
played no part in it. No daemon and no model: minutes on a busy machine.

    python -m bench.context_tune CAPTURE [--top 10]
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.context_set import Case, ContextSet, Scored, block_of, load_set, planned, score, summary_of
from daemon.context.compose import ENTRY_CHARS, compose
from daemon.context.hook import fitted
from daemon.context.relevance import RULES, Rules
from sync.search.request import SearchResult

# Two stages: the floor's values with the entries' fixed, then the entries' with the floor chosen.
FLOOR_GRID: dict[str, Sequence[float]] = {
    "floor": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
    "margin": (0.2, 0.3, 0.5, 1.0),
    "project": (0.0, 0.5, 1.0, 1.5, 2.0),
}
ENTRY_GRID: dict[str, Sequence[int]] = {"max_entries": (2, 3, 4), "entry_chars": (1_000, 1_600, 2_400)}
TOOL = "claude-code"  # the tools' blocks differ only in their envelope and cap (bench/context_set.py)


@dataclass(frozen=True, slots=True)
class Choice:
    rules: Rules
    entry_chars: int

    def label(self) -> str:
        r = self.rules
        return (
            f"floor {r.floor:.2f} margin {r.margin:.2f} project {r.project:.2f} max {r.max_entries} "
            f"entry {self.entry_chars}"
        )


def replay(case: Case, captured: Mapping[str, Any], choice: Choice) -> str:
    """The block the hook gives for ``case`` from what the daemon answered, under ``choice``."""
    project = captured["project"]
    decided = planned(case, project)
    event = "SessionStart" if case.start else "UserPromptSubmit"
    if decided.action != "search":
        return ""
    found = [SearchResult.from_wire(r) for r in captured["found"]]
    recent = [SearchResult.from_wire(r) for r in captured["recent"]]

    def make(budget: int) -> tuple[str, None]:
        block = compose(
            found,
            recent,
            budget=budget,
            start=decided.start,
            query=decided.query,
            project=project,
            rules=choice.rules,
            entry_chars=choice.entry_chars,
        )
        return block.text, None

    out, _ = fitted(TOOL, event, decided.budget, make)
    return block_of(TOOL, out)


def scored_all(data: ContextSet, capture: Mapping[str, Any], choice: Choice, split: str) -> list[Scored]:
    keys: Mapping[str, str] = capture["keys"]
    by_case = {c["case"]: c for c in capture["cases"]}
    return [
        score(case, TOOL, replay(case, by_case[case.id], choice), keys, data.episodes)
        for case in data.cases
        if case.split == split and case.id in by_case
    ]


def meets(row: Mapping[str, Any]) -> bool:
    return bool(row["fact_whole_pct"] >= 90 and row["unrelated_per_block"] <= 2 and row["silent_pct"] >= 90)


def rank_key(row: Mapping[str, Any]) -> tuple[float, ...]:
    """Targets met first, then the worse of the two shares (the margin over 90%), then fewer
    unrelated entries, then fewer characters."""
    return (
        float(meets(row)),
        min(row["fact_whole_pct"], row["silent_pct"]),
        -round(row["unrelated_per_block"], 6),
        -round(row["answer_chars"], 3),
    )


def preference(choice: Choice, reference: Choice) -> tuple[float, ...]:
    """Among choices the tune half cannot tell apart, the larger the better: the strictest floor
    (highest, then narrowest margin, then least project weight), then the entries' values nearest
    the code's."""
    r = choice.rules
    entries = abs(r.max_entries - reference.rules.max_entries) + abs(choice.entry_chars - reference.entry_chars) / 600
    return (r.floor, -r.margin, -r.project, -entries)


def floor_choices(entries: Choice) -> list[Choice]:
    out = []
    for floor, margin, project in itertools.product(*FLOOR_GRID.values()):
        rules = replace(entries.rules, floor=floor, margin=margin, project=project)
        out.append(Choice(rules, entries.entry_chars))
    return out


def entry_choices(floor: Choice) -> list[Choice]:
    return [
        Choice(replace(floor.rules, max_entries=most), chars) for most, chars in itertools.product(*ENTRY_GRID.values())
    ]


def best_of(
    data: ContextSet, capture: Mapping[str, Any], tried: Sequence[Choice], top: int, reference: Choice
) -> Choice:
    rows = [(choice, summary_of(scored_all(data, capture, choice, "tune"))) for choice in tried]
    rows.sort(key=lambda t: (rank_key(t[1]), preference(t[0], reference)), reverse=True)
    print(f"{len(rows)} combinations on split tune; the best {top}:")
    for choice, row in rows[:top]:
        print(f"  {choice.label()}  ->  {line('tune', row)}")
    return rows[0][0]


def line(name: str, row: Mapping[str, Any]) -> str:
    return (
        f"{name}: fact {row['fact_whole_pct']:.1f}% of {row['answerable']}, unrelated "
        f"{row['unrelated_per_block']:.2f}/block, {row['answer_chars']:.0f} chars; silent "
        f"{row['silent_pct']:.1f}% of {row['nothing']}; failed said {row['failed_said_pct']:.0f}%"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("capture", type=Path)
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args()
    data = load_set()
    capture = json.loads(args.capture.read_text(encoding="utf-8"))
    default = Choice(RULES, ENTRY_CHARS)
    floor = best_of(data, capture, floor_choices(default), args.top, default)
    best = best_of(data, capture, entry_choices(floor), args.top, default)
    for name, choice in (("chosen", best), ("the code's defaults", default)):
        print(f"{name}: {choice.label()}")
        for split in ("tune", "check"):
            print(f"  {line(split, summary_of(scored_all(data, capture, choice, split)))}")


if __name__ == "__main__":
    main()
