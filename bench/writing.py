"""The daemon's CPU while an agent writes, beside Litestream 0.3 measured in the same run.

Two writers on the real agentdb packages: the WAL writer (agentdb 1.3.9 through better-sqlite3 in
WAL mode, tests/agentdb_variants/v139/writer.mjs) and the whole-file writer (agentdb 1.6.1 on
sql.js, which rewrites the whole file in place on every save, tests/agentdb_gen/agent.mjs --live).
Each stores EPISODES episodes at about 5 a second (gaps uniform in 100..300 ms, from a seeded PRNG:
the same schedule for every system within a repetition) into a copy of a file that already holds
10 or 5,000 episodes (written by the real package, bench.common.agentdb_fixture). One system at a
time watches the file:

- memsync: the daemon (``python -m daemon run``) into the embedded hub, every setting at the
  product default except ``[warm] enabled = false``: syncing alone, which is what Litestream does.
  Latency = the hub's syncedAt - the writer's commit time (wall-clock ms after the store returned).
  Twice: the hub in the daemon's data folder (apart from the AgentDB file), and the hub in the
  AgentDB file's own folder ("hub beside"), where the daemon's writes to the hub happen beside the
  file it watches (they used to wake its watcher, and tripled its CPU).
- Litestream 0.3.11 (bench/litestream.py) replicating to a file replica, at its defaults
  (monitor-interval and sync-interval 1 s) and at 100 ms. Every episode's output carries a unique
  marker; a watcher thread in this process reads each new LZ4 segment of the replica (every 5 ms)
  and latency = when the marker first appears there - the commit time. After the run,
  ``litestream restore`` rebuilds the database from the replica alone and its episodes are counted.

Each starts on its fresh copy, catches up (memsync: the hub holds the pre-existing episodes;
Litestream: its first snapshot is written) and settles for SETTLE_S; then the write phase, from the
writer's start until the last episode reached the hub or the replica, or GRACE_S after the last
commit when some never do. CPU = utime + stime of the process and its descendants (/proc: 10 ms
ticks) over the phase; RSS (VmRSS of the same processes) sampled every RSS_SAMPLE_S; memsync's
sync passes = its sidecar's ``passes`` counter after - before. A repetition runs the systems
on the same workload, the order rotated from one repetition to the next; figures are medians.

On the whole-file writer Litestream's part is recorded as it happens: it switches the file to WAL
mode when it starts, sql.js then rewrites the file without a WAL, and the records say what reached
the replica, what ``restore`` gives back, the file's journal mode at each step, and whether the
agent's file still reads after Litestream's SIGTERM.

    python -m bench.writing [--runs 3] [--episodes 300] [--preexisting 10 5000] [--writers wal whole-file]
                            [--systems memsync "memsync, hub beside" "litestream 1 s" "litestream 100 ms"]
"""

from __future__ import annotations

import argparse
import json
import secrets
import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import litestream
from bench.common import (
    ROOT,
    DaemonProcess,
    Figure,
    SiteFiles,
    at_most,
    copy_fixture,
    emit,
    hub_episodes,
    hub_total,
    live_agent_argv,
    make_site,
    median,
    percentile,
    progress,
    result,
    sidecar_value,
    tree_cpu_seconds,
    tree_rss_mb,
    wait_caught_up,
    wal_writer_argv,
    workdir,
)

WRITERS = ("wal", "whole-file")
MEMSYNC = "memsync"
MEMSYNC_BESIDE = "memsync, hub beside"  # the hub in the AgentDB file's folder
MEMSYNCS = (MEMSYNC, MEMSYNC_BESIDE)
LITESTREAMS = (f"litestream {litestream.DEFAULTS.label}", f"litestream {litestream.FAST.label}")
SYSTEMS = (*MEMSYNCS, *LITESTREAMS)
SETTINGS = {f"litestream {s.label}": s for s in (litestream.DEFAULTS, litestream.FAST)}
INTERVAL_MS = 200  # about 5 episodes a second
JITTER_MS = 100  # each gap uniform in INTERVAL_MS +- JITTER_MS
SETTLE_S = 3.0  # after the catch-up, so that its tail is not counted in the write phase
GRACE_S = 10.0  # how long after the last commit an episode may still arrive
RSS_SAMPLE_S = 0.25
WATCH_POLL_S = 0.005
TARGET_CPU_RATIO = 2.0  # WAL writer: memsync's CPU / Litestream's at 100 ms
TARGET_P99_MS = 50.0  # WAL writer: memsync's p99
TARGET_WHOLE_FILE_CPU_S = 2.0  # whole-file writer at 5,000 pre-existing episodes
TARGET_WHOLE_FILE_AT = 5000
TARGET_BESIDE_RATIO = 1.10  # memsync's CPU with the hub beside the AgentDB file / with it apart


# -- the writer ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Commit:
    source_id: int  # the episode's AgentDB id
    seq: int  # the number in its marker
    at_ms: float  # wall clock, right after the store (and, for sql.js, the save) returned


class Writer:
    """The agent as a child process; a thread collects its commit lines as they come."""

    def __init__(self, kind: str, db: Path, episodes: int, seed: int, marker: str, stderr: Path) -> None:
        self.kind, self.episodes = kind, episodes
        if kind == "wal":
            # It stays open (connection held, WAL not checkpointed) until stop(): closing is a
            # checkpoint, which would fall inside or outside the phase by chance.
            hold_ms = int((GRACE_S + 120) * 1000)
            self.argv = wal_writer_argv(
                db, episodes, interval_ms=INTERVAL_MS, hold_ms=hold_ms, jitter_ms=JITTER_MS, seed=seed, marker=marker
            )
        else:
            self.argv = live_agent_argv(
                db, episodes, interval_ms=INTERVAL_MS, jitter_ms=JITTER_MS, seed=seed, marker=marker
            )
        self.stderr = stderr
        self.commits: list[Commit] = []
        self.last_commit_mono = 0.0
        self.proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def start(self) -> None:
        with self.stderr.open("ab") as err:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=err, text=True, cwd=ROOT)
        self._reader = threading.Thread(target=self._read, name="writer-stdout", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc is not None
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            row = json.loads(line)
            if self.kind == "wal" and "stored" in row:
                commit = Commit(int(row["stored"]), int(row["i"]), float(row["tMs"]))
            elif self.kind != "wal" and "id" in row:
                commit = Commit(int(row["id"]), len(self.commits), float(row["savedAtMs"]))
            else:
                continue
            self.commits.append(commit)
            self.last_commit_mono = time.monotonic()

    def done_writing(self) -> bool:
        if len(self.commits) >= self.episodes:
            return True
        if self.proc is not None and self.proc.poll() is not None:
            if self._reader is not None:
                self._reader.join(5)
            if len(self.commits) < self.episodes:
                tail = self.stderr.read_text(encoding="utf-8", errors="replace")[-2000:]
                raise RuntimeError(f"the {self.kind} writer exited {self.proc.returncode}: {tail}")
        return False

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None and len(self.commits) >= self.episodes and self.kind == "wal":
            self.proc.terminate()  # it only holds its connection open now
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        if self._reader is not None:
            self._reader.join(5)


# -- the write phase -----------------------------------------------------------------------------
def write_phase(pid: int, writer: Writer, arrived: Callable[[], int], alive: Callable[[], bool]) -> dict[str, Any]:
    """From the writer's start until every episode arrived (or GRACE_S after the last commit): the
    CPU and RSS of ``pid`` and its descendants. ``arrived()`` is asked only once the writing is done
    (it may cost something: the hub is opened each time)."""
    cpu_before, started = tree_cpu_seconds(pid), time.monotonic()
    rss_peak = tree_rss_mb(pid)
    writer.start()
    next_sample = started + RSS_SAMPLE_S
    while True:
        alive()
        now = time.monotonic()
        if now >= next_sample:
            rss_peak, next_sample = max(rss_peak, tree_rss_mb(pid)), now + RSS_SAMPLE_S
        if writer.done_writing() and (
            arrived() >= writer.episodes or time.monotonic() - writer.last_commit_mono >= GRACE_S
        ):
            break
        time.sleep(0.02)
    cpu, elapsed = tree_cpu_seconds(pid) - cpu_before, time.monotonic() - started
    rss = tree_rss_mb(pid)
    return {
        "cpu_s": cpu,
        "phase_s": elapsed,
        "writing_s": writer.last_commit_mono - started,
        "rss_peak_mb": max(rss_peak, rss),
        "rss_final_mb": rss,
    }


def latency_stats(latencies: list[float]) -> dict[str, float | None]:
    if not latencies:
        return {"p50_ms": None, "p99_ms": None, "max_ms": None}
    return {"p50_ms": percentile(latencies, 50), "p99_ms": percentile(latencies, 99), "max_ms": max(latencies)}


def new_marker() -> str:
    """A string no episode of the fixture holds, so each marker in the replica is one episode."""
    return f"mk{secrets.token_hex(4)}n"


# -- memsync -------------------------------------------------------------------------------------
def passes(site: SiteFiles) -> float | None:
    value = sidecar_value(site.state, "passes")
    return None if value is None else float(value)


def run_memsync(writer_kind: str, preexisting: int, episodes: int, seed: int, *, beside: bool) -> dict[str, Any]:
    with workdir("writing") as root:
        agentdb = root / "agent" / "agentdb.db"
        site = make_site(root, agentdb, warm=False, hub=agentdb.with_name("hub.db") if beside else None)
        copy_fixture(preexisting, site.agentdb)
        writer = Writer(writer_kind, site.agentdb, episodes, seed, new_marker(), root / "writer.err")
        with DaemonProcess(site) as daemon:
            wait_caught_up(site, daemon, preexisting, timeout=300)
            time.sleep(SETTLE_S)
            passes_before = passes(site)
            try:
                phase = write_phase(
                    daemon.pid, writer, lambda: hub_total(site.hub, site.name) - preexisting, daemon.check_alive
                )
            finally:
                writer.stop()
            passes_after = passes(site)
        synced = {int(e["sourceId"]): float(e["syncedAt"]) for e in hub_episodes(site.hub, site.name)}
    latencies = [synced[c.source_id] - c.at_ms for c in writer.commits if c.source_id in synced]
    ran = None if passes_before is None or passes_after is None else passes_after - passes_before
    return {
        **phase,
        "arrived": len(latencies),
        "passes": ran,
        **latency_stats(latencies),
    }


# -- Litestream ----------------------------------------------------------------------------------
def journal_mode(db: Path) -> str:
    """The file's mode by its header (bytes 18-19: 1 rollback journal, 2 WAL), and its -wal's size."""
    try:
        with db.open("rb") as file:
            header = file.read(20)
    except FileNotFoundError:
        return "missing"
    mode = {b"\x01\x01": "rollback", b"\x02\x02": "wal"}.get(header[18:20], f"header {header[18:20].hex()}")
    wal = db.with_name(db.name + "-wal")
    return f"{mode}, -wal {wal.stat().st_size} bytes" if wal.exists() else f"{mode}, no -wal"


def agent_file_check(db: Path, scratch: Path) -> dict[str, Any]:
    """What a reader of the agent's file finds now, on a copy so the file itself is not touched:
    the main file alone (what sql.js loads) and with its -wal beside it (what SQLite opens)."""
    found: dict[str, Any] = {}
    for label, with_wal in (("main_file", False), ("with_wal", True)):
        folder = scratch / label
        folder.mkdir(parents=True)
        copy = folder / db.name
        shutil.copyfile(db, copy)
        wal = db.with_name(db.name + "-wal")
        if with_wal and wal.exists():
            shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
        try:
            conn = sqlite3.connect(copy)
            try:
                check = str(conn.execute("PRAGMA quick_check").fetchone()[0])
                count = int(conn.execute("SELECT count(*) FROM episodes").fetchone()[0])
            finally:
                conn.close()
            found[label] = {"episodes": count, "quick_check": check}
        except sqlite3.Error as exc:
            found[label] = {"error": str(exc)}
    return found


def run_litestream(system: str, writer_kind: str, preexisting: int, episodes: int, seed: int) -> dict[str, Any]:
    setting = SETTINGS[system]
    with workdir("writing-litestream") as root:
        db = copy_fixture(preexisting, root / "agent" / "agentdb.db")
        modes = {"before": journal_mode(db)}
        replica = root / "replica"
        config = litestream.write_config(root / "litestream.yml", db, replica, setting)
        marker = new_marker()
        writer = Writer(writer_kind, db, episodes, seed, marker, root / "writer.err")
        watcher = litestream.ReplicaWatcher(replica, marker, WATCH_POLL_S)
        with litestream.LitestreamProcess(config, root / "litestream.log") as process:
            litestream.wait_snapshot(replica, process)
            time.sleep(SETTLE_S)
            modes["litestream_started"] = journal_mode(db)
            watcher.skip_existing()
            watcher.start()
            try:
                phase = write_phase(process.pid, writer, lambda: len(watcher.first_seen), process.check_alive)
            finally:
                writer.stop()
                modes["writes_done"] = journal_mode(db)
                process.stop()
                watcher.stop()
            modes["litestream_stopped"] = journal_mode(db)
            exit_code = process.exit_code
            log_tail = process.log_tail(8)
        done = litestream.restore(config, db, root / "restored.db")
        restored = litestream.count_episodes(root / "restored.db")
        agent_file = agent_file_check(db, root / "check")
    by_seq = {c.seq: c.at_ms for c in writer.commits}
    latencies = [seen - by_seq[seq] for seq, seen in watcher.first_seen.items() if seq in by_seq]
    return {
        **phase,
        "arrived": len(latencies),
        **latency_stats(latencies),
        "restored": None if restored is None else restored - preexisting,
        "restore_error": None if done.returncode == 0 else done.stderr[-500:],
        "segments_read": watcher.files_read,
        "bytes_decoded": watcher.bytes_decoded,
        "decode_s": round(watcher.decode_seconds, 3),
        "journal_mode": modes,
        "exit_code": exit_code,
        "agent_file": agent_file,
        "log_tail": log_tail if writer_kind != "wal" else None,
    }


# -- the benchmark -------------------------------------------------------------------------------
def one_run(system: str, writer_kind: str, preexisting: int, episodes: int, seed: int) -> dict[str, Any]:
    if system in MEMSYNCS:
        measured = run_memsync(writer_kind, preexisting, episodes, seed, beside=system == MEMSYNC_BESIDE)
    else:
        measured = run_litestream(system, writer_kind, preexisting, episodes, seed)
    return {"writer": writer_kind, "preexisting": preexisting, "system": system, "episodes": episodes, **measured}


def describe_run(r: dict[str, Any]) -> str:
    latency = "nothing arrived" if r["p50_ms"] is None else f"p50 {r['p50_ms']:.0f} / p99 {r['p99_ms']:.0f} ms"
    head = f"{r['system']}, {r['writer']} writer, {r['preexisting']} pre-existing: {r['cpu_s']:.2f} CPU-s"
    head += f" over {r['phase_s']:.0f} s, {r['arrived']}/{r['episodes']} arrived, {latency}"
    if r["system"] in MEMSYNCS:
        return f"{head}, {r['passes']:.0f} passes" if r["passes"] is not None else f"{head}, passes unknown"
    head += f", {r['restored']} restored"
    if r["writer"] == "wal":
        return head
    return f"{head}; the file after: {r['journal_mode']['litestream_stopped']}, {file_verdict(r['agent_file'])}"


def file_verdict(agent_file: dict[str, Any]) -> str:
    def verdict(found: dict[str, Any]) -> str:
        if "error" in found:
            return f"error: {found['error']}"
        return f"{found['episodes']} episodes, quick_check {found['quick_check']}"

    return f"main file alone: {verdict(agent_file['main_file'])}; with its -wal: {verdict(agent_file['with_wal'])}"


def file_broken(agent_file: dict[str, Any]) -> bool:
    """SQLite cannot read the agent's file as it lies (the main file with its -wal, if any)."""
    found = agent_file["with_wal"]
    return "error" in found or found["quick_check"] != "ok"


def median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if r[key] is not None]
    return median(values) if values else None


def cpu_ratio(records: list[dict[str, Any]], system: str, reference: str) -> float | None:
    """The median over repetitions of ``system``'s CPU / ``reference``'s in the same repetition."""
    ratios = [
        ours["cpu_s"] / theirs["cpu_s"]
        for ours in records
        for theirs in records
        if ours["system"] == system
        and theirs["system"] == reference
        and theirs["run"] == ours["run"]
        and theirs["cpu_s"] > 0
    ]
    return median(ratios) if ratios else None


def scenario_figures(writer_kind: str, preexisting: int, records: list[dict[str, Any]]) -> list[Figure]:
    mine = [r for r in records if r["writer"] == writer_kind and r["preexisting"] == preexisting]
    label = f"({writer_kind} writer, {preexisting} pre-existing)"
    figures: list[Figure] = []

    def add(metric: str, value: float | None, unit: str, limit: float | None = None) -> None:
        if value is None:
            return  # e.g. no latency where nothing arrived: the rows-arrived figure says so
        figures.append(at_most(metric, value, unit, limit) if limit is not None else Figure(metric, value, unit))

    wal = writer_kind == "wal"
    cpu_limit = TARGET_WHOLE_FILE_CPU_S if not wal and preexisting == TARGET_WHOLE_FILE_AT else None
    for system in MEMSYNCS:
        ours = [r for r in mine if r["system"] == system]
        add(f"{system} CPU {label}", median_of(ours, "cpu_s"), "CPU-s", cpu_limit)
        add(f"{system} sync passes {label}", median_of(ours, "passes"), "passes")
        add(f"{system} latency p50 {label}", median_of(ours, "p50_ms"), "ms")
        add(f"{system} latency p99 {label}", median_of(ours, "p99_ms"), "ms", TARGET_P99_MS if wal else None)
    for system in LITESTREAMS:
        theirs = [r for r in mine if r["system"] == system]
        name = f"Litestream {SETTINGS[system].label}"
        add(f"{name} CPU {label}", median_of(theirs, "cpu_s"), "CPU-s")
        add(f"{name} latency p50 {label}", median_of(theirs, "p50_ms"), "ms")
        add(f"{name} latency p99 {label}", median_of(theirs, "p99_ms"), "ms")
        add(f"{name} episodes in the replica {label}", median_of(theirs, "arrived"), "episodes")
        add(f"{name} episodes restored {label}", median_of(theirs, "restored"), "episodes")
        if theirs:
            broken = sum(file_broken(r["agent_file"]) for r in theirs)
            add(f"{name} runs leaving the agent's file unreadable by SQLite {label}", broken, "runs")
    # Ratios within each repetition (the two ran minutes apart, on about the same machine load)
    for system in MEMSYNCS:
        add(
            f"{system} / Litestream {litestream.FAST.label} CPU {label}",
            cpu_ratio(mine, system, LITESTREAMS[1]),
            "x",
            TARGET_CPU_RATIO if wal else None,
        )
    add(
        f"memsync CPU, hub beside / hub apart {label}",
        cpu_ratio(mine, MEMSYNC_BESIDE, MEMSYNC),
        "x",
        TARGET_BESIDE_RATIO if wal else None,
    )
    return figures


def run(
    runs: int = 3,
    episodes: int = 300,
    preexisting: tuple[int, ...] = (10, 5000),
    writers: tuple[str, ...] = WRITERS,
    systems: tuple[str, ...] = SYSTEMS,
) -> dict[str, Any]:
    litestream.check_decoder()
    records: list[dict[str, Any]] = []
    for i in range(runs):
        order = systems[i % len(systems) :] + systems[: i % len(systems)]
        for writer_kind in writers:
            for n in preexisting:
                for system in order:
                    progress(f"writing: {system}, {writer_kind} writer, {n} pre-existing, run {i + 1}/{runs}")
                    record = one_run(system, writer_kind, n, episodes, seed=i + 1)
                    progress(f"  {describe_run(record)}")
                    records.append({"run": i + 1, **record})
    figures = [fig for w in writers for n in preexisting for fig in scenario_figures(w, n, records)]
    params = {
        "runs": runs,
        "episodes": episodes,
        "interval_ms": INTERVAL_MS,
        "jitter_ms": JITTER_MS,
        "preexisting": list(preexisting),
        "writers": list(writers),
        "systems": list(systems),
        "memsync": "product defaults, [warm] enabled = false; the hub in the data folder, or beside the AgentDB file",
        "litestream": {
            "version": litestream.version(),
            "replica": "file",
            "settings": {
                s.label: {"monitor-interval": s.monitor_interval, "sync-interval": s.sync_interval}
                for s in SETTINGS.values()
            },
        },
        "settle_s": SETTLE_S,
        "grace_s": GRACE_S,
        "watch_poll_ms": WATCH_POLL_S * 1000,
    }
    return result("writing", params, records, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--preexisting", type=int, nargs="+", default=[10, 5000])
    parser.add_argument("--writers", nargs="+", choices=WRITERS, default=list(WRITERS))
    parser.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    args = parser.parse_args()
    emit(run(args.runs, args.episodes, tuple(args.preexisting), tuple(args.writers), tuple(args.systems)))


if __name__ == "__main__":
    main()
