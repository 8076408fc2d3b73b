"""The web viewer (`memsync ui`): how fast its pages answer with 100,000 memories in the index, and
how much memory it holds.

A site as in production (``make_site``: the warm layer on, the local MiniLM, the embedded store)
syncs a 200-episode AgentDB fixture with ``memsync sync``, which builds its index. With no daemon
running, that index is then grown to ``--points`` points with ``bench.warm``'s synthetic episodes
(``build_points``: realistic texts and BM25 vectors, dense vectors about as far apart as MiniLM
puts real ones), as the indexer writes them. The daemon starts over it, and ``memsync ui`` beside
it. A client logs in with the printed link and asks for each page in turn, ``--rounds`` times a
run: the Memory page with a search (hybrid, through the daemon's socket; a different query each
round, ``bench.warm.make_queries``), a memory's page (the episode and its session's neighbours),
Fleet, Approvals and Digest. Each figure is the time from sending the request to the whole page,
over HTTP on 127.0.0.1 as a browser would; p50 per page and over every page, the median of the
runs. The viewer's RSS is its process's, after the rounds.

    python -m bench.viewer [--runs 3] [--rounds 40] [--points 100000]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

import httpx
import numpy as np

from bench.common import (
    DaemonProcess,
    Figure,
    SiteFiles,
    at_most,
    copy_fixture,
    emit,
    make_site,
    median,
    percentile,
    progress,
    result,
    start_viewer,
    stop_viewer,
    stopwatch,
    tree_rss_mb,
    workdir,
)

TARGET_P50_MS: Final = 200.0
FIXTURE_EPISODES: Final = 200
CORPUS: Final = 500  # real-text families the synthetic points are drawn from (bench.warm)
PAGES: Final = ("memory search", "memory page", "fleet", "approvals", "digest")
SOCKET: Final = "socket search"  # the baseline: the same search asked of the daemon's socket, as `memsync search` asks


def grow_index(site: SiteFiles, points: int) -> float:
    """The site's index grown to ``points`` points with synthetic episodes; seconds spent."""
    from bench.warm import PAGE, bare_pass, build_points, corpus, texts_of
    from daemon.search_worker.files import Collections, index_folder
    from sync.search.embedders.local import LocalEmbedder
    from sync.search.stores import EdgeStore

    settings = site.settings()
    embedder = LocalEmbedder(batch_size=PAGE)
    families, eps = corpus(CORPUS, seed=7)
    bases = np.asarray(bare_pass(embedder, texts_of(eps))[1], dtype=np.float32)
    store = EdgeStore(index_folder(settings).edge_store)
    try:
        store.open_or_create(Collections(settings).active(), embedder.name, embedder.dims)
        held = store.count()
        seconds = build_points(store, families, eps, bases, held, held + points - FIXTURE_EPISODES)
        total = store.count()
    finally:
        store.close()
    progress(f"viewer: the index holds {total:,} points")
    return seconds


def timed(client: httpx.Client, url: str) -> tuple[float, str]:
    with stopwatch() as elapsed:
        answer = client.get(url)
        text = answer.text
        ms = elapsed() * 1000
    if answer.status_code != 200:
        raise RuntimeError(f"{url} answered {answer.status_code}: {text[:300]}")
    return ms, text


def one_run(run: int, site: SiteFiles, rounds: int, queries: list[str], tmp: Path) -> dict[str, Any]:
    ui, login = start_viewer(site.config, tmp / f"ui-{run}.log")
    base = login.split("/login")[0]
    from daemon.control.client import ControlClient
    from daemon.usecases.memory.search import search_request

    daemon = ControlClient(site.settings().socket_path)
    times: dict[str, list[float]] = {page: [] for page in (*PAGES, SOCKET)}
    try:
        with httpx.Client(timeout=60) as client:
            client.get(login)  # the cookie; the redirect's page is not timed
            memory_url = ""
            for i in range(rounds + 2):  # two rounds of warm-up, not counted
                query = queries[i % len(queries)]
                with stopwatch() as elapsed:
                    daemon.answer(search_request(query, now=time.time()))
                    socket_ms = elapsed() * 1000
                ms, text = timed(client, f"{base}/?q={quote(query)}")
                found = re.search(r'href="(/memory/[^"]+)"', text)
                memory_url = found[1] if found else memory_url
                sample = {"memory search": ms, SOCKET: socket_ms}
                if memory_url:
                    sample["memory page"] = timed(client, base + memory_url)[0]
                sample["fleet"] = timed(client, base + "/fleet")[0]
                sample["approvals"] = timed(client, base + "/approvals")[0]
                sample["digest"] = timed(client, base + "/digest")[0]
                if i >= 2:
                    for page, value in sample.items():
                        times[page].append(value)
        rss = tree_rss_mb(ui.pid)
    finally:
        stop_viewer(ui)
    every = [v for page, values in times.items() if page != SOCKET for v in values]
    record: dict[str, Any] = {
        "run": run,
        "rss_mb": round(rss, 1),
        "p50_ms": round(percentile(every, 50), 1),
        "p99_ms": round(percentile(every, 99), 1),
    }
    for page, values in times.items():
        record[page] = {"p50_ms": round(percentile(values, 50), 1), "n": len(values)} if values else None
    progress(f"  {describe(record)}")
    return record


def describe(r: dict[str, Any]) -> str:
    pages = ", ".join(f"{p} {r[p]['p50_ms']:.0f}" for p in (*PAGES, SOCKET) if r.get(p))
    head = f"run {r['run']}: all pages p50 {r['p50_ms']:.0f} / p99 {r['p99_ms']:.0f} ms"
    return f"{head} ({pages}); RSS {r['rss_mb']:.0f} MB"


def figures(records: list[dict[str, Any]], points: int) -> list[Figure]:
    out = [
        at_most(
            f"page p50, every page ({points:,} memories)", median([r["p50_ms"] for r in records]), "ms", TARGET_P50_MS
        )
    ]
    out.append(Figure(f"page p99, every page ({points:,} memories)", median([r["p99_ms"] for r in records]), "ms"))
    for page in PAGES:
        values = [r[page]["p50_ms"] for r in records if r.get(page)]
        if values:
            out.append(Figure(f"{page} p50", median(values), "ms"))
    sockets = [r[SOCKET]["p50_ms"] for r in records if r.get(SOCKET)]
    pages = [r["memory search"]["p50_ms"] for r in records if r.get("memory search")]
    if sockets and pages:
        out.append(Figure(f"{SOCKET} p50 (the baseline)", median(sockets), "ms"))
        out.append(Figure("memory search page / socket search (p50)", median(pages) / median(sockets), "x"))
    out.append(Figure("viewer RSS", median([r["rss_mb"] for r in records]), "MB"))
    return out


def run(runs: int = 3, rounds: int = 40, points: int = 100_000) -> dict[str, Any]:
    from bench.warm import make_queries

    records: list[dict[str, Any]] = []
    queries = [r.query for r in make_queries(max(rounds + 2, 50), seed=13)]
    with workdir("viewer") as root:
        site = make_site(root, copy_fixture(FIXTURE_EPISODES, root / "agent" / "agentdb.db"))
        progress(f"viewer: syncing {FIXTURE_EPISODES} episodes, then growing the index to {points:,} points")
        synced = subprocess.run(
            [sys.executable, "-m", "daemon", "sync", "--config", str(site.config)],
            capture_output=True,
            text=True,
            timeout=1800,
            check=False,
        )
        if synced.returncode != 0:
            raise RuntimeError(f"memsync sync failed: {synced.stderr}")
        build_s = grow_index(site, points)
        daemon = DaemonProcess(site).start()
        try:
            for i in range(1, runs + 1):
                progress(f"viewer: run {i}/{runs}, {rounds} rounds of every page")
                records.append(one_run(i, site, rounds, queries, root) | {"load1": round(os.getloadavg()[0], 1)})
        finally:
            daemon.stop()
    params = {"runs": runs, "rounds": rounds, "points": points, "build_s": round(build_s)}
    return result("viewer", params, records, figures(records, points))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="viewer processes started, one after the other")
    parser.add_argument("--rounds", type=int, default=40, help="times each page is asked for, per run")
    parser.add_argument("--points", type=int, default=100_000, help="memories in the index")
    args = parser.parse_args()
    emit(run(args.runs, args.rounds, args.points))


if __name__ == "__main__":
    main()
