"""Latency from an episode reaching the AgentDB file to its arrival in the hub.

A live agent on the real agentdb package (sql.js: a whole-file rewrite on every save) stores
episodes at a steady pace while the real daemon, at its default settings, syncs them into the
embedded hub. Per episode: latency = the hub's syncedAt (ms, stamped when the hub first receives
it) - the agent's savedAtMs (wall clock right after its save returned). Both clocks are this
machine's wall clock. Repeated with a bigger file (more pre-existing episodes), so that every
snapshot of the file costs more.

    python -m bench.latency [--runs 5] [--episodes 200] [--interval-ms 50] [--preexisting 10 1000]
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.common import (
    DaemonProcess,
    Figure,
    at_most,
    copy_fixture,
    emit,
    hub_episodes,
    make_site,
    median,
    percentile,
    progress,
    result,
    run_live_agent,
    wait_caught_up,
    workdir,
)

TARGET_P50_MS = 100
TARGET_P99_MS = 500


def one_run(preexisting: int, episodes: int, interval_ms: int, seed: int) -> dict[str, Any]:
    with workdir("latency") as root:
        site = make_site(root)
        copy_fixture(preexisting, site.agentdb)
        with DaemonProcess(site) as daemon:
            # Steady state: the daemon's start-up catch-up is not part of what is measured.
            wait_caught_up(site, daemon, preexisting, timeout=120)
            saved = run_live_agent(site.agentdb, episodes, interval_ms=interval_ms, seed=seed)
            wait_caught_up(site, daemon, preexisting + len(saved), timeout=120)
        synced = {int(e["sourceId"]): float(e["syncedAt"]) for e in hub_episodes(site.hub, site.name)}
    latencies = [synced[i] - at for i, at in saved.items()]
    return {
        "preexisting": preexisting,
        "episodes": len(latencies),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "max_ms": max(latencies),
        "min_ms": min(latencies),
    }


def scenario_figures(preexisting: int, runs: list[dict[str, Any]]) -> list[Figure]:
    mine = [r for r in runs if r["preexisting"] == preexisting]
    label = f"({preexisting} pre-existing)"
    return [
        at_most(f"latency p50 {label}", median([r["p50_ms"] for r in mine]), "ms", TARGET_P50_MS),
        at_most(f"latency p99 {label}", median([r["p99_ms"] for r in mine]), "ms", TARGET_P99_MS),
        Figure(f"latency max {label}", median([r["max_ms"] for r in mine]), "ms"),
    ]


def describe_run(r: dict[str, Any]) -> str:
    return f"{r['preexisting']} pre-existing: p50 {r['p50_ms']:.0f} / p99 {r['p99_ms']:.0f} / max {r['max_ms']:.0f} ms"


def run(
    runs: int = 5, episodes: int = 200, interval_ms: int = 50, preexisting: tuple[int, ...] = (10, 1000)
) -> dict[str, Any]:
    records: list[dict[str, Any]] = []
    for n in preexisting:
        for i in range(runs):
            progress(f"latency: {n} pre-existing, run {i + 1}/{runs}")
            record = one_run(n, episodes, interval_ms, seed=i + 1)
            progress(f"  {describe_run(record)}")
            records.append({"run": i + 1, **record})
    figures = [fig for n in preexisting for fig in scenario_figures(n, records)]
    params = {"runs": runs, "episodes": episodes, "interval_ms": interval_ms, "preexisting": list(preexisting)}
    return result("latency", params, records, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--interval-ms", type=int, default=50)
    parser.add_argument("--preexisting", type=int, nargs="+", default=[10, 1000])
    args = parser.parse_args()
    emit(run(args.runs, args.episodes, args.interval_ms, tuple(args.preexisting)))


if __name__ == "__main__":
    main()
