"""Backfill: one full sync pass of a 100k-episode AgentDB file into a fresh hub, against a plain copy.

memsync: a fresh hub and sidecar, the site wired exactly as the product wires it
(``daemon.site.Site``), and one timed ``engine.run_pass()``: read and check the file, convert and
hash every row, push to the hub in batches, record each batch in the sidecar.

Baseline, measured in the same run on the same file: plain sqlite3. Read the file's bytes,
deserialize them into an in-memory database (as the reader does), SELECT * FROM episodes, and
executemany the rows into a fresh on-disk file in WAL mode with synchronous=FULL, committing every
500 rows (the hub's largest batch). The two alternate which goes first.

    python -m bench.backfill [--runs 3] [--episodes 100000]
    python -m bench.backfill --profile   # one pass under cProfile instead: the top 15 by cumulative time
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from bench.common import (
    RESULTS,
    Figure,
    agentdb_fixture,
    emit,
    make_site,
    median,
    progress,
    result,
    stopwatch,
    timed_pass,
    workdir,
)

TARGET_RATE = 50_000  # episodes/s ...
TARGET_SLOWDOWN = 4.0  # ... or within this factor of the plain copy
COPY_COMMIT_ROWS = 500


def memsync_passes(
    source: Path, root: Path, profiler: cProfile.Profile | None = None, *, redact: bool = True
) -> tuple[float, float, float]:
    """Seconds for the backfill pass of a fresh site over ``source`` (profiled when asked); then,
    for the full re-check of the same, now synced, rows as the daemon makes it (a restarted daemon
    owes one), the longest single pass (the most a new episode can wait behind it) and the whole
    check, which runs in slices over several passes."""
    from daemon import logs
    from daemon.site import Site, open_backbone, retry_policy

    logs.configure("warning", "json")
    site_files = make_site(root, agentdb=source, redact=redact)
    settings = site_files.settings()
    with Site(settings, open_backbone(settings), retry=retry_policy(settings)) as site:
        backfill_s, _ = timed_pass(site, profiler)
        site.sidecar.set_many({"last_full_at": 0.0})  # long ago: the next full check is due at once
    slices: list[float] = []
    with Site(settings, open_backbone(settings), retry=retry_policy(settings)) as restarted:
        while restarted.engine.full_check_due():
            seconds, report = timed_pass(restarted)
            if not report.full_scan or report.read:
                raise RuntimeError(f"expected a slice of the full re-check with nothing new: {report}")
            slices.append(seconds)
    if not slices:
        raise RuntimeError("a restarted site owed no full re-check")
    return backfill_s, max(slices), sum(slices)


def plain_copy(source: Path, dest: Path) -> tuple[float, int]:
    """Seconds and rows for the plain sqlite3 copy of the episodes table."""
    with stopwatch() as elapsed:
        data = bytearray(source.read_bytes())
        data[18] = data[19] = 1  # rollback-journal header, as the reader does for a WAL-mode header
        src = sqlite3.connect(":memory:")
        src.deserialize(bytes(data))
        del data
        (create,) = src.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'episodes'").fetchone()
        dst = sqlite3.connect(dest, isolation_level=None)
        dst.execute("PRAGMA journal_mode = WAL")
        dst.execute("PRAGMA synchronous = FULL")
        dst.execute(create)
        rows = src.execute("SELECT * FROM episodes")
        insert = f"INSERT INTO episodes VALUES ({', '.join('?' * len(rows.description))})"
        copied = 0
        while batch := rows.fetchmany(COPY_COMMIT_ROWS):
            dst.execute("BEGIN IMMEDIATE")
            dst.executemany(insert, batch)
            dst.execute("COMMIT")
            copied += len(batch)
        seconds = elapsed()
    src.close()
    dst.close()
    return seconds, copied


def one_run(source: Path, episodes: int, copy_first: bool) -> dict[str, Any]:
    timings: dict[str, float] = {}
    order = ("copy", "memsync", "unredacted") if copy_first else ("memsync", "unredacted", "copy")
    for which in order:
        with workdir("backfill") as root:
            if which == "copy":
                timings["copy"], copied = plain_copy(source, root / "copy.db")
                if copied != episodes:
                    raise RuntimeError(f"the copy moved {copied} rows, not {episodes}")
            elif which == "memsync":
                timings["memsync"], timings["slice"], timings["recheck"] = memsync_passes(source, root)
            else:  # the same with privacy.redact = false: what redaction costs a backfill
                timings["unredacted"], _, _ = memsync_passes(source, root, redact=False)
    memsync_rate, copy_rate = episodes / timings["memsync"], episodes / timings["copy"]
    return {
        "unredacted_eps": episodes / timings["unredacted"],
        "redaction_cost": timings["memsync"] / timings["unredacted"],
        "memsync_s": timings["memsync"],
        "copy_s": timings["copy"],
        "memsync_eps": memsync_rate,
        "copy_eps": copy_rate,
        "ratio": memsync_rate / copy_rate,
        "slowdown": copy_rate / memsync_rate,
        "recheck_s": timings["recheck"],
        "recheck_slice_s": timings["slice"],
        "copy_first": copy_first,
    }


def redaction_throughput(source: Path, rows: int = 20_000, repeats: int = 3) -> float:
    """MB/s of text the redactor scans (``sync/source/redaction.py``, the default rules): the text fields
    of the fixture's first ``rows`` episodes, the median of ``repeats``."""
    from collections import Counter

    from sync.source.redaction import Redactor

    with closing(sqlite3.connect(source)) as conn:
        texts = [
            str(value)
            for row in conn.execute(
                "SELECT task, input, output, critique, tags, metadata FROM episodes LIMIT ?", (rows,)
            )
            for value in row
            if value is not None
        ]
    size, redactor, rates = sum(len(t) for t in texts), Redactor(), []
    for _ in range(repeats):
        started = time.perf_counter()
        for text in texts:
            redactor.text(text, Counter())
        rates.append(size / (time.perf_counter() - started) / 1e6)
    return median(rates)


def profile(source: Path, top: int = 15) -> str:
    """Top ``top`` functions by cumulative time in one profiled pass (stats kept under bench/results/)."""
    profiler = cProfile.Profile()
    with workdir("backfill-profile") as root:
        memsync_passes(source, root, profiler)
    RESULTS.mkdir(parents=True, exist_ok=True)
    profiler.dump_stats(RESULTS / "backfill.prof")
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def describe_run(r: dict[str, Any]) -> str:
    return (
        f"memsync {r['memsync_eps']:,.0f}/s (without redaction {r['unredacted_eps']:,.0f}/s) "
        f"vs copy {r['copy_eps']:,.0f}/s ({r['slowdown']:.1f}x), "
        f"full re-check {r['recheck_s']:.1f} s in passes of at most {r['recheck_slice_s']:.2f} s"
    )


def run(runs: int = 3, episodes: int = 100_000) -> dict[str, Any]:
    source = agentdb_fixture(episodes)
    source.read_bytes()  # warm the page cache, so that neither side pays for the first read from disk
    records: list[dict[str, Any]] = []
    for i in range(runs):
        progress(f"backfill: run {i + 1}/{runs} ({episodes} episodes)")
        record = one_run(source, episodes, copy_first=i % 2 == 1)
        progress(f"  {describe_run(record)}")
        records.append({"run": i + 1, **record})
    rate = median([r["memsync_eps"] for r in records])
    slowdown = median([r["slowdown"] for r in records])
    met = rate >= TARGET_RATE or slowdown <= TARGET_SLOWDOWN
    figures = [
        Figure("backfill rate, memsync", rate, "episodes/s", f">= {TARGET_RATE:,} episodes/s or <= 4x slower", met),
        Figure("backfill rate, plain sqlite3 copy", median([r["copy_eps"] for r in records]), "episodes/s"),
        Figure(
            "backfill rate, memsync without redaction", median([r["unredacted_eps"] for r in records]), "episodes/s"
        ),
        Figure("backfill time with / without redaction", median([r["redaction_cost"] for r in records]), "x"),
        Figure("redaction throughput (episodes' text fields)", redaction_throughput(source), "MB/s"),
        Figure("memsync / copy rate", median([r["ratio"] for r in records]), "x"),
        Figure("slowdown (copy rate / memsync rate)", slowdown, "x", f"<= {TARGET_SLOWDOWN:g} x", met),
        Figure("full re-check of every synced row, all slices", median([r["recheck_s"] for r in records]), "s"),
        Figure("longest pass of the full re-check", median([r["recheck_slice_s"] for r in records]), "s"),
    ]
    return result(
        "backfill", {"runs": runs, "episodes": episodes, "file_bytes": source.stat().st_size}, records, figures
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=100_000)
    parser.add_argument(
        "--profile", action="store_true", help="instead, profile one pass and print the top 15 (cumulative)"
    )
    args = parser.parse_args()
    if args.profile:
        print(profile(agentdb_fixture(args.episodes)))
    else:
        emit(run(args.runs, args.episodes))


if __name__ == "__main__":
    main()
