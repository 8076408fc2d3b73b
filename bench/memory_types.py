"""How well the type rules (``sync/source/types.py``) read a memory's type: precision and recall per
type on tests/data/memory_types.json, each part apart (``tune``: the rules were read against it;
``check``: written after they were frozen; ``blind``: written by another engineer who had not read
the rules; its misses at first sight then shaped three rules, so it is no longer blind) and
``tune`` with ``check`` together, with every miss.

    python -m bench.memory_types [--markdown FILE]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sync.source.types import MEMORY_TYPES, memory_type

ROOT = Path(__file__).resolve().parents[1]
LABELLED = ROOT / "tests" / "data" / "memory_types.json"


@dataclass(frozen=True, slots=True)
class Scores:
    size: int
    precision: dict[str, float | None]  # None: the rules never said this type
    recall: dict[str, float]
    misses: list[tuple[str, str, str, str]]  # (labelled, read, rule, task)


def score(memories: Sequence[Mapping[str, Any]]) -> Scores:
    said, labelled, right = Counter[str](), Counter[str](), Counter[str]()
    misses = []
    for memory in memories:
        read = memory_type(memory)
        said[read.name] += 1
        labelled[memory["type"]] += 1
        if read.name == memory["type"]:
            right[read.name] += 1
        else:
            misses.append((memory["type"], read.name, read.rule, str(memory["task"])))
    return Scores(
        len(memories),
        {t: right[t] / said[t] if said[t] else None for t in MEMORY_TYPES},
        {t: right[t] / labelled[t] if labelled[t] else 0.0 for t in MEMORY_TYPES},
        misses,
    )


def load(path: Path = LABELLED) -> dict[str, list[dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    parts = {"tune": data["tune"], "check": data["check"], "both": data["tune"] + data["check"]}
    return parts | {"blind": data["blind"]}


def markdown(sets: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    scored = {name: score(memories) for name, memories in sets.items()}
    head = " | ".join(f"{name} ({s.size}): precision / recall" for name, s in scored.items())
    lines = [f"| type | {head} |", "|---|" + "---|" * len(scored)]
    for kind in MEMORY_TYPES:
        cells = []
        for s in scored.values():
            p = s.precision[kind]
            cells.append(f"{'-' if p is None else f'{p:.2f}'} / {s.recall[kind]:.2f}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    lines += ["", "Misses (labelled -> read, by which rule):", ""]
    misses = [*scored["both"].misses, *scored["blind"].misses]
    lines += [f"- {a} -> {b} ({rule}): {task}" for a, b, rule, task in misses] or ["- none"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.memory_types", description=__doc__.split("\n")[0])
    parser.add_argument("--markdown", type=Path, help="write the table here too")
    args = parser.parse_args(argv)
    text = markdown(load())
    print(text)
    if args.markdown is not None:
        args.markdown.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
