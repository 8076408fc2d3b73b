"""Run every benchmark, fold each result into bench/figures.json and rewrite docs/BENCHMARKS.md's
figures from it (``make bench``).

A benchmark run on its own (``python -m bench.recall LOCOMO_DEV``) keeps its result in
bench/results/; ``--render-only`` folds the results there that are newer than bench/figures.json's
entry for them, then rewrites the doc. Each entry keeps its own command, date, commit and machine,
so the others' last figures stay as they were measured.

    python -m bench.run_all [--only latency backfill convex_backfill idle warm writing hooks context_set mcp
                             remember archive dream viewer recall]
                            [--render-only]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import (
    archive,
    backfill,
    context_set,
    convex_backfill,
    dream,
    figures,
    hooks,
    idle,
    latency,
    mcp,
    recall,
    remember,
    viewer,
    warm,
    writing,
)
from bench.common import RESULTS, ROOT, emit, progress

Record = dict[str, Any]
# name: (run it with its defaults, one repetition's numbers in a few words)
BENCHMARKS: dict[str, tuple[Callable[[], Record], Callable[[Record], str]]] = {
    "latency": (latency.run, latency.describe_run),
    "backfill": (backfill.run, backfill.describe_run),
    "convex_backfill": (convex_backfill.run, convex_backfill.describe_run),
    "idle": (idle.run, idle.describe_run),
    "warm": (warm.run, warm.describe_run),
    "writing": (writing.run, writing.describe_run),
    "hooks": (hooks.run, hooks.describe_run),
    "context_set": (context_set.run, context_set.describe_run),
    "mcp": (mcp.run, mcp.describe_run),
    "remember": (remember.run, remember.describe_run),
    "archive": (archive.run, archive.describe_run),
    "dream": (dream.run, dream.describe_run),
    "viewer": (viewer.run, viewer.describe),
    # Without LoCoMo's data (an argument, never downloaded) only the labelled set: run
    # `python -m bench.recall LOCOMO_DEV` for the rest, then `--render-only`.
    "recall": (recall.run, recall.describe_run),
}


def machine() -> str:
    cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    models = [line.partition(":")[2].strip() for line in cpuinfo if line.startswith("model name")]
    model = models[0] if models else "unknown CPU"
    cpus = len(os.sched_getaffinity(0))  # what nproc says
    return f"{cpus} CPUs ({model}), Linux {platform.release()}, Python {platform.python_version()}"


def commit() -> str:
    """The code measured: HEAD, marked when the work tree had changes."""
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    name = head.stdout.strip() or "unknown"
    return f"{name}+changes" if dirty.stdout.strip() else name


def fold_results(data: dict[str, Any], names: list[str], command: Callable[[str], str]) -> list[str]:
    """Fold each named benchmark's saved result newer than its entry; the names folded."""
    folded = []
    for name in names:
        path = RESULTS / f"{name}.json"
        if not path.exists():
            continue
        result = json.loads(path.read_text(encoding="utf-8"))
        if result["at"] <= data["benchmarks"].get(name, {}).get("measured", ""):
            continue
        describe = BENCHMARKS[name][1]
        figures.fold(
            data,
            result,
            command=command(name),
            repetitions="; ".join(describe(r) for r in result["runs"]),
            commit=commit(),
            machine=machine(),
        )
        folded.append(name)
    return folded


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=list(BENCHMARKS), default=list(BENCHMARKS))
    parser.add_argument(
        "--render-only", action="store_true", help="fold saved results and rewrite the doc; run nothing"
    )
    args = parser.parse_args()
    failed = []
    ran = []
    for name in [] if args.render_only else args.only:
        progress(f"=== {name} ===")
        try:
            emit(BENCHMARKS[name][0]())
            ran.append(name)
        except Exception as exc:
            progress(f"{name} failed: {type(exc).__name__}: {exc}")
            failed.append(name)
    data = figures.load()
    if args.render_only:
        folded = fold_results(
            data, list(BENCHMARKS), lambda name: f"python -m bench.{name} (see bench/results/{name}.json)"
        )
    else:
        folded = fold_results(data, ran, lambda name: f"python -m bench.run_all --only {name}")
    figures.save(data)
    figures.DOC.write_text(figures.rendered(figures.DOC.read_text(encoding="utf-8"), data), encoding="utf-8")
    progress(f"folded {', '.join(folded) or 'nothing'} into bench/figures.json; figures written to docs/BENCHMARKS.md")
    if failed:
        progress(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
