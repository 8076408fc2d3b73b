"""Archiving: the cleanup-old-episodes job's work on a hub of 100k episodes, against compressing
the same JSON Lines with the same codec alone.

The hub is filled once by a real sync pass of the benchmark's AgentDB file (episodes a minute
apart: about ten weeks, ten thousand episodes a week), then copied fresh for each repetition.
memsync: ``archive_older_than`` with the job's batch, called as the job calls it, until nothing is
left: read the week's rows, write and fsync the week's gzip file and manifest, read it back and
verify it, then strip the bodies from the hot table in one transaction per week.

Baseline, measured in the same run on the same episodes: the export lines of each week (what the
files hold), serialized with the same JSON encoder and gzip-compressed at the same level, in
memory, nothing read or written. The two alternate which goes first.

    python -m bench.archive [--runs 3] [--episodes 100000]
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bench.common import Figure, agentdb_fixture, emit, make_site, median, progress, result, timed_pass, workdir


def filled_hub(source: Path, root: Path) -> Path:
    """A hub holding every episode of ``source``, synced by the product's own pass."""
    from daemon import logs
    from daemon.site import Site, open_backbone, retry_policy

    logs.configure("warning", "json")
    site_files = make_site(root, agentdb=source)
    settings = site_files.settings()
    with Site(settings, open_backbone(settings), retry=retry_policy(settings)) as site:
        timed_pass(site)
    return Path(settings.hub_path)


def archive_all(hub_path: Path) -> tuple[float, int, int]:
    """Seconds to archive every episode as the job does; episodes archived; bytes written."""
    from daemon.hubserver.scheduled import ARCHIVE_BATCH
    from sync.archive.files import ArchiveFolder
    from sync.backbone.hub import HubBackbone

    hub = HubBackbone(hub_path, "bench")
    try:
        started = time.perf_counter()
        total = 0
        while done := hub.archive_older_than(2**62, ARCHIVE_BATCH):
            total += done
        seconds = time.perf_counter() - started
    finally:
        hub.close()
    return seconds, total, ArchiveFolder.beside(hub_path).size()


def weeks_of(hub_path: Path) -> list[list[Mapping[str, Any]]]:
    """Every episode as the archive files hold them, by site and week."""
    from sync.archive import codec
    from sync.backbone.hub import HubBackbone

    hub = HubBackbone(hub_path, "bench", create=False)
    try:
        weeks: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for episode in hub.episodes():
            weeks[(episode["sourceSite"], codec.iso_week(int(episode["ts"])))].append(episode)
    finally:
        hub.close()
    return [codec.merge([], records) for records in weeks.values()]


def compress_alone(weeks: list[list[Mapping[str, Any]]]) -> tuple[float, int]:
    """Seconds to serialize and gzip the same lines (the baseline); compressed bytes."""
    from sync.archive.codec import LEVEL, jsonl

    started = time.perf_counter()
    size = 0
    for records in weeks:
        size += len(gzip.compress(jsonl(records), compresslevel=LEVEL, mtime=0))
    return time.perf_counter() - started, size


def one_run(template: Path, weeks: list[list[Mapping[str, Any]]], episodes: int, codec_first: bool) -> dict[str, Any]:
    timings: dict[str, float] = {}
    sizes: dict[str, int] = {}
    for which in ("codec", "memsync") if codec_first else ("memsync", "codec"):
        if which == "codec":
            timings["codec"], sizes["codec"] = compress_alone(weeks)
            continue
        with workdir("archive") as root:
            hub = root / "hub.db"
            shutil.copyfile(template, hub)
            timings["memsync"], archived, sizes["memsync"] = archive_all(hub)
            if archived != episodes:
                raise RuntimeError(f"archived {archived} episodes, not {episodes}")
    return {
        "memsync_s": timings["memsync"],
        "codec_s": timings["codec"],
        "memsync_eps": episodes / timings["memsync"],
        "codec_eps": episodes / timings["codec"],
        "ratio": timings["memsync"] / timings["codec"],
        "archive_mb": sizes["memsync"] / 1e6,
        "codec_mb": sizes["codec"] / 1e6,
        "weeks": len(weeks),
        "codec_first": codec_first,
    }


def describe_run(r: dict[str, Any]) -> str:
    return (
        f"archived {r['memsync_eps']:,.0f}/s vs compressing alone {r['codec_eps']:,.0f}/s "
        f"({r['ratio']:.2f}x the time), {r['weeks']} week files, {r['archive_mb']:.1f} MB"
    )


def run(runs: int = 3, episodes: int = 100_000) -> dict[str, Any]:
    source = agentdb_fixture(episodes)
    records: list[dict[str, Any]] = []
    with workdir("archive-template") as root:
        progress(f"archive: syncing {episodes} episodes into a hub (once)")
        template = filled_hub(source, root)
        weeks = weeks_of(template)
        for i in range(runs):
            progress(f"archive: run {i + 1}/{runs}")
            record = one_run(template, weeks, episodes, codec_first=i % 2 == 1)
            progress(f"  {describe_run(record)}")
            records.append({"run": i + 1, **record})
    figures = [
        Figure(
            "archiving rate, memsync (write, verify, strip)", median([r["memsync_eps"] for r in records]), "episodes/s"
        ),
        Figure("the same lines compressed alone", median([r["codec_eps"] for r in records]), "episodes/s"),
        Figure("archiving time / compressing alone", median([r["ratio"] for r in records]), "x"),
        Figure("archive size (gzip JSON Lines)", median([r["archive_mb"] for r in records]), "MB"),
    ]
    return result("archive", {"episodes": episodes, "runs": runs}, records, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=100_000)
    args = parser.parse_args()
    emit(run(args.runs, args.episodes))


if __name__ == "__main__":
    main()
