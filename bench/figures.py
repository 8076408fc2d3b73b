"""The benchmarks' latest figures: ``bench/figures.json`` holds them, one entry a benchmark (its
command, the baseline it is compared with, when and on which commit and machine it was measured,
each figure's median, target and whether it is met, and every repetition in a few words), and
docs/BENCHMARKS.md's generated sections are written from it.

``make bench`` (``bench/run_all.py``) folds each new result into the file and rewrites the doc;
``python -m bench.figures`` rewrites the doc from the file alone, and ``--check`` says whether the
doc is what the file says (tests/test_benchmark_figures.py does the same). Standard library only,
so that the test and ``make docs`` need none of the benchmarks' machinery."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "bench" / "figures.json"
DOC = ROOT / "docs" / "BENCHMARKS.md"
SECTIONS = {
    "figures": ("<!-- figures:start -->", "<!-- figures:end -->"),
    "repetitions": ("<!-- repetitions:start -->", "<!-- repetitions:end -->"),
}
NOTICE = (
    "<!-- Generated from bench/figures.json by bench/figures.py (`make bench`, `make docs`): "
    "edits here are overwritten. -->"
)
Entry = dict[str, Any]


def decimals(value: float) -> int:
    """Decimals to show: none from 100 up, one from 10, two above 0.1, two significant digits below."""
    size = abs(value)
    if size >= 100:
        return 0
    if size >= 10:
        return 1
    if size >= 0.1 or size == 0:
        return 2
    return 1 - math.floor(math.log10(size))


def shown(value: float, unit: str) -> str:
    return f"{value:,.{decimals(value)}f} {unit}".rstrip()


def load(path: Path = FIGURES) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def save(data: dict[str, Any], path: Path = FIGURES) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def fold(
    data: dict[str, Any], result: dict[str, Any], *, command: str, repetitions: str, commit: str, machine: str
) -> None:
    """Put one benchmark's new result (``bench/results/<name>.json``, as ``bench.common.emit`` keeps
    it) in place of its entry, keeping the entry's baseline and ratio."""
    name = result["benchmark"]
    old = data["benchmarks"].get(name, {})
    data["benchmarks"][name] = {
        "command": command,
        "baseline": old.get("baseline", ""),
        "ratio": old.get("ratio"),
        "measured": result["at"],
        "commit": commit,
        "machine": machine,
        "load": result["load"],
        "params": result["params"],
        "figures": [
            {key: figure[key] for key in ("metric", "value", "unit", "target", "met")} for figure in result["figures"]
        ],
        "repetitions": repetitions,
    }


def _met(figure: dict[str, Any]) -> str:
    return "" if figure["met"] is None else ("yes" if figure["met"] else "**no**")


def _ratio(entry: Entry) -> str:
    wanted = entry.get("ratio")
    figure = next((f for f in entry["figures"] if f["metric"] == wanted), None)
    return f"{shown(figure['value'], figure['unit'])}: {figure['metric']}" if figure else ""


def render_figures(data: dict[str, Any]) -> str:
    benchmarks: dict[str, Entry] = data["benchmarks"]
    machines = sorted({entry["machine"] for entry in benchmarks.values()})
    lines = [NOTICE, "", f"Measured on {'; '.join(machines)}.", ""]
    lines += ["| benchmark | command | compared with | ratio | measured (UTC, commit, load) |", "|---|---|---|---|---|"]
    for name, entry in benchmarks.items():
        load = "/".join(f"{x:.1f}" for x in entry["load"])
        when = f"{entry['measured'][:16].replace('T', ' ')}, {entry['commit']}, {load}"
        lines.append(f"| [{name}](#{name}) | `{entry['command']}` | {entry['baseline']} | {_ratio(entry)} | {when} |")
    lines += ["", "| benchmark | figure (median over repetitions) | value | target | met |", "|---|---|---|---|---|"]
    for name, entry in benchmarks.items():
        for figure in entry["figures"]:
            value = shown(figure["value"], figure["unit"])
            lines.append(f"| {name} | {figure['metric']} | {value} | {figure['target'] or ''} | {_met(figure)} |")
    return "\n".join(lines)


def render_repetitions(data: dict[str, Any]) -> str:
    lines = [NOTICE, ""]
    for name, entry in data["benchmarks"].items():
        load = "/".join(f"{x:.1f}" for x in entry["load"])
        lines.append(
            f"- {name} ({entry['measured']}, load {load}, params {json.dumps(entry['params'])}): {entry['repetitions']}"
        )
    return "\n".join(lines)


def rendered(text: str, data: dict[str, Any]) -> str:
    """``text`` (the doc) with each generated section written from ``data``."""
    for section, (start, end) in SECTIONS.items():
        if start not in text or end not in text:
            raise ValueError(f"{DOC.name} has no {start} ... {end} section")
        head, _, rest = text.partition(start)
        _, _, tail = rest.partition(end)
        body = render_figures(data) if section == "figures" else render_repetitions(data)
        text = f"{head}{start}\n{body}\n{end}{tail}"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description="Write docs/BENCHMARKS.md's figures from bench/figures.json.")
    parser.add_argument("--check", action="store_true", help="exit 1 if the doc and the file disagree; write nothing")
    args = parser.parse_args()
    text = DOC.read_text(encoding="utf-8")
    expected = rendered(text, load())
    if args.check:
        if expected != text:
            print(f"{DOC.relative_to(ROOT)} is not what bench/figures.json says: run `make docs`", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(expected, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
