"""The dream cycle on a generated store of 10,000 memories across two sites (tests/harness/
dream_store.py, seed 31): 400 planted clusters (one fix in 2-4 phrasings by other agents, on both
sites), 200 planted updates (a setting's value changed later), 200 planted look-alike pairs (the same
words, identifiers a character or two apart) and background facts of every kind.

The hub is filled once through the real push path and copied fresh for each repetition; each
repetition runs the job's use case (``daemon.usecases.memory.dream.dream``: read every memory, embed it with
the local MiniLM, plan, record) in a child process, whose wall time and peak RSS are the job's.
Judged against the plan: pairwise cluster precision and recall (every pair of memories one fold
puts together, against the pairs of the planted clusters), supersede precision and recall, the
look-alike pairs put together or superseded (must be 0), the memories deleted (export before and
after, by key: must be 0), and unmerge of every step restoring export byte for byte.

No baseline: the targets are the issue's (precision >= 0.95, recall >= 0.9).

    python -m bench.dream [--runs 3] [--memories 10000]
"""

from __future__ import annotations

import argparse
import itertools
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from harness.dream_store import SITES, T0, Planted, generate, push_items

from bench.common import Figure, at_least, at_most, emit, median, progress, result, workdir

Key = tuple[str, str]
NOW_MS = (T0 + 400 * 86_400) * 1000  # after every planted memory: the clock is an argument


def fill(hub_path: Path, planted: Planted) -> None:
    from sync.backbone.hub import HubBackbone

    for site in SITES:
        hub = HubBackbone(hub_path, site)
        try:
            items = list(push_items(planted.by_site(site)))
            for start in range(0, len(items), 500):
                batch = items[start : start + 500]
                hub.push(batch, cursor=batch[-1].local_id)
        finally:
            hub.close()


def export_bytes(hub_path: Path) -> bytes:
    from sync.backbone.hub import HubBackbone

    hub = HubBackbone(hub_path, SITES[0], create=False)
    try:
        return b"\n".join(json.dumps(e, sort_keys=True).encode() for e in hub.episodes())
    finally:
        hub.close()


def child(hub_path: Path) -> None:
    """One job run, in this process: its steps, wall time and peak RSS as JSON on stdout."""
    from daemon.usecases.memory.dream import dream
    from sync.backbone.hub import HubBackbone
    from sync.search.embedders.local import LocalEmbedder

    started = time.perf_counter()
    hub = HubBackbone(hub_path, SITES[0])
    try:
        night = dream(hub, LocalEmbedder(), now_ms=NOW_MS, run="bench")
    finally:
        hub.close()
    out = {
        "seconds": time.perf_counter() - started,
        "phases": dict(night.seconds),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "steps": [
            {"id": s.step_id, "kind": s.kind, "keys": [list(s.canonical), *map(list, s.members)]}
            for s in night.recorded
        ],
        "summary": night.summary,
    }
    sys.stdout.write(json.dumps(out) + "\n")


def pairs(groups: list[list[Key]]) -> set[frozenset[Key]]:
    return {frozenset(p) for g in groups for p in itertools.combinations(g, 2)}


def judge(planted: Planted, steps: list[dict[str, Any]]) -> dict[str, float]:
    folds = [[(k[0], k[1]) for k in s["keys"]] for s in steps if s["kind"] == "consolidates"]
    sups = {(tuple(s["keys"][0]), tuple(s["keys"][1])) for s in steps if s["kind"] == "supersedes"}
    got, truth = pairs(folds), pairs(planted.clusters)
    hit = len(got & truth)
    want_sups = set(planted.updates)
    together = got | {frozenset(s) for s in sups}
    apart_broken = sum(frozenset(p) in together for p in planted.lookalikes)
    return {
        "precision": hit / len(got) if got else 1.0,
        "recall": hit / len(truth) if truth else 1.0,
        "supersede_precision": len(sups & want_sups) / len(sups) if sups else 1.0,
        "supersede_recall": len(sups & want_sups) / len(want_sups) if want_sups else 1.0,
        "lookalikes_together": apart_broken,
        "folds": len(folds),
        "folded": sum(len(f) - 1 for f in folds),
        "supersedes": len(sups),
    }


def unmerge_all(hub_path: Path, steps: list[dict[str, Any]]) -> None:
    from sync.backbone.hub import HubBackbone

    hub = HubBackbone(hub_path, SITES[1])
    try:
        for step in steps:
            hub.undo_dream_step(step["id"], by="bench")
    finally:
        hub.close()


def keys_of(export: bytes) -> set[Key]:
    return {(e["sourceSite"], e["sourceId"]) for e in map(json.loads, export.split(b"\n")) if e}


def run(runs: int = 3, memories: int = 10_000) -> dict[str, Any]:
    planted = generate(memories)
    records: list[dict[str, Any]] = []
    with workdir("dream") as folder:
        seed_hub = folder / "seed.db"
        progress(f"filling a hub with {len(planted.memories)} memories across {len(SITES)} sites")
        fill(seed_hub, planted)
        before = export_bytes(seed_hub)
        for rep in range(runs):
            hub = folder / f"hub-{rep}.db"
            shutil.copyfile(seed_hub, hub)
            progress(f"repetition {rep + 1}/{runs}: the dream job in a child process")
            done = subprocess.run(
                [sys.executable, "-m", "bench.dream", "--child", str(hub)], capture_output=True, text=True, check=True
            )
            out = json.loads(done.stdout.strip().splitlines()[-1])
            after = export_bytes(hub)
            deleted = len(keys_of(before) - keys_of(after))
            unmerge_all(hub, out["steps"])
            restored = export_bytes(hub) == before
            quality = judge(planted, out["steps"])
            records.append(
                {
                    "seconds": round(out["seconds"], 1),
                    "phases": {k: round(v, 2) for k, v in out["phases"].items()},
                    "peak_rss_mb": round(out["peak_rss_mb"]),
                    "deleted": deleted,
                    "unmerge_exact": restored,
                    **{k: round(v, 4) if isinstance(v, float) else v for k, v in quality.items()},
                }
            )
            progress(f"  {records[-1]}")
    last = records[-1]
    figures: list[Figure] = [
        at_least("cluster precision (pairs)", median([r["precision"] for r in records]), "", 0.95),
        at_least("cluster recall (pairs)", median([r["recall"] for r in records]), "", 0.9),
        Figure("supersede precision", median([r["supersede_precision"] for r in records]), ""),
        Figure("supersede recall", median([r["supersede_recall"] for r in records]), ""),
        at_most("look-alike pairs put together", max(r["lookalikes_together"] for r in records), "pairs", 0),
        at_most("memories deleted", max(r["deleted"] for r in records), "memories", 0),
        at_least("unmerge restores export exactly", min(float(r["unmerge_exact"]) for r in records), "", 1),
        Figure("dream job time, 10,000 memories", median([r["seconds"] for r in records]), "s"),
        Figure("dream job peak RSS", median([r["peak_rss_mb"] for r in records]), "MB"),
    ]
    params = {
        "runs": runs,
        "memories": memories,
        "seed": 31,
        "clusters": len(planted.clusters),
        "updates": len(planted.updates),
        "lookalikes": len(planted.lookalikes),
        "folds": last["folds"],
    }
    return result("dream", params, records, figures)


def describe_run(record: dict[str, Any]) -> str:
    return (
        f"{record['seconds']} s ({', '.join(f'{k} {v} s' for k, v in record['phases'].items())}), "
        f"{record['peak_rss_mb']} MB, precision {record['precision']}, recall {record['recall']}, "
        f"{record['folds']} folds, {record['supersedes']} supersedes"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    emit(run(args.runs, args.memories))


if __name__ == "__main__":
    main()
