"""An idle daemon: CPU seconds per hour and resident memory.

The real daemon (``python -m daemon run``, default settings, so the warm layer is on) syncs a
1000-episode AgentDB file and indexes it, then nothing writes to the file. After it has caught up
(the hub and the search index) and settled, and again once it has let the idle embedding model go
(``run`` says how), its CPU time (utime + stime from /proc/PID/stat, all threads, of the daemon
and its descendants: the warm layer's worker process while it runs, and, through cutime and cstime,
one that ended) is sampled across idle windows and extrapolated to an hour; RSS is VmRSS from
/proc/PID/status, summed the same way (the daemon's own peak, VmHWM, is reported beside it).
Per-thread CPU (/proc/PID/task/*/stat) shows where the daemon's idle time goes. The clock tick is
10 ms, so one 60 s window resolves 0.6 CPU-s/hour.

The peer, in the same run: Litestream 0.3 (bench/litestream.py) at its defaults (monitor-interval
and sync-interval 1 s), replicating an idle copy of the same AgentDB file, switched to WAL mode, to
a file replica. Once its first snapshot is written and it has settled, it is measured the same way
over as many windows of the same length.

    python -m bench.idle [--windows 3] [--window-s 60] [--episodes 1000] [--unload-after 90] [--sync-only]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

from bench import litestream
from bench.common import (
    AgentProcess,
    DaemonProcess,
    Figure,
    SiteFiles,
    at_most,
    copy_fixture,
    emit,
    make_site,
    median,
    process_tree,
    progress,
    result,
    sidecar_value,
    tree_cpu_seconds,
    tree_rss_mb,
    wait_caught_up,
    wait_for,
    wait_indexed,
    workdir,
)

TARGET_CPU_S_PER_HOUR = 5.0
TARGET_RSS_MB = 80.0
TARGET_SEARCHABLE_MS = 2000.0  # bench.warm's write-to-searchable target, here after an idle spell
UNLOAD_AFTER_S = 90  # warm.unload_after for this run: reached within it (the default is 600)
LOADED_WINDOW_S = 30.0
SETTLE_S = 5.0  # past the reader's "racy" window (2 s on a coarse clock), in which a file is read again
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(stat_file: Path) -> float:
    """utime + stime from a /proc stat file (for a process: every thread, living or gone)."""
    text = stat_file.read_text()
    fields = text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds by thread, labelled "main" or by the kernel's thread name and id."""
    threads: dict[str, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = "main" if int(task.name) == pid else f"{(task / 'comm').read_text().strip()}/{task.name}"
            threads[name] = cpu_seconds(task / "stat")
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread ended while we looked
    return threads


def memory_mb(pid: int) -> dict[str, float]:
    values: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0]) / 1024
    return values


def last_pass_at(site: SiteFiles) -> str | None:
    return sidecar_value(site.state, "last_pass_at")


def window(daemon: DaemonProcess, site: SiteFiles, seconds: float) -> dict[str, Any]:
    """CPU and memory of the daemon and its descendants (the warm layer's worker, while it runs)."""
    pid = daemon.pid
    passed, threads = last_pass_at(site), thread_cpu(pid)
    cpu, started = tree_cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    daemon.check_alive()
    cpu, elapsed = tree_cpu_seconds(pid) - cpu, time.monotonic() - started
    threads = {name: round(t - threads.get(name, 0.0), 2) for name, t in thread_cpu(pid).items()}
    memory = memory_mb(pid)
    return {
        "seconds": elapsed,
        "cpu_s": cpu,
        "cpu_s_per_hour": cpu / elapsed * 3600,
        "rss_mb": tree_rss_mb(pid),
        "daemon_rss_mb": memory["VmRSS"],
        "processes": len(process_tree(pid)),
        "peak_rss_mb": memory["VmHWM"],
        "passes_ran": last_pass_at(site) != passed,
        "thread_cpu_s": {name: t for name, t in threads.items() if t > 0},
    }


def describe_run(r: dict[str, Any]) -> str:
    if r.get("model") == "woken":
        return (
            f"after the idle spell: write to searchable {r['write_to_searchable_ms']:.0f} ms, first search "
            f"{r['first_search_ms']:.0f} ms, the next {r['next_search_ms']:.1f} ms"
        )
    if "system" in r:  # the peer
        return f"{r['system']}: {r['cpu_s_per_hour']:.1f} CPU-s/h, RSS {r['rss_mb']:.1f} MB"
    threads = ", ".join(f"{name} {cpu:g} s" for name, cpu in r["thread_cpu_s"].items()) or "none"
    passes = "a sync pass ran" if r["passes_ran"] else "no sync pass"
    processes = r.get("processes", 1)
    tree = f" in {processes} processes" if processes > 1 else ""
    return (
        f"{r['cpu_s_per_hour']:.1f} CPU-s/h, RSS {r['rss_mb']:.1f} MB{tree}, {passes} "
        f"(daemon's CPU by thread: {threads})"
    )


def model_loaded(site: SiteFiles) -> bool | None:
    from daemon.search_worker.files import read_status

    loaded = (read_status(site.settings()) or {}).get("modelLoaded")
    return loaded if isinstance(loaded, bool) else None


def peer_windows(windows: int, window_s: float, episodes: int) -> list[dict[str, Any]]:
    """Litestream at its defaults on an idle WAL-mode copy of the same file, measured as the daemon is."""
    setting = litestream.DEFAULTS
    records: list[dict[str, Any]] = []
    with workdir("idle-litestream") as root:
        db = copy_fixture(episodes, root / "agent" / "agentdb.db")
        conn = sqlite3.connect(db)
        conn.execute("PRAGMA journal_mode = wal")  # as a WAL writer leaves it (Litestream needs WAL)
        conn.close()
        replica = root / "replica"
        config = litestream.write_config(root / "litestream.yml", db, replica, setting)
        with litestream.LitestreamProcess(config, root / "litestream.log") as process:
            litestream.wait_snapshot(replica, process)
            time.sleep(SETTLE_S)
            for i in range(windows):
                progress(f"idle, Litestream {setting.label}: window {i + 1}/{windows} ({window_s:g} s)")
                cpu, started = cpu_seconds(Path(f"/proc/{process.pid}/stat")), time.monotonic()
                time.sleep(window_s)
                process.check_alive()
                cpu, elapsed = cpu_seconds(Path(f"/proc/{process.pid}/stat")) - cpu, time.monotonic() - started
                memory = memory_mb(process.pid)
                record = {
                    "window": i + 1,
                    "system": f"litestream {setting.label}",
                    "seconds": elapsed,
                    "cpu_s": cpu,
                    "cpu_s_per_hour": cpu / elapsed * 3600,
                    "rss_mb": memory["VmRSS"],
                    "peak_rss_mb": memory["VmHWM"],
                }
                progress(f"  {describe_run(record)}")
                records.append(record)
    return records


def peer_figures(peer: list[dict[str, Any]]) -> list[Figure]:
    label = f"Litestream {litestream.DEFAULTS.label}, same run"
    return [
        Figure(f"idle CPU, peer ({label})", median([r["cpu_s_per_hour"] for r in peer]), "CPU-s/hour"),
        Figure(f"idle RSS, peer ({label})", median([r["rss_mb"] for r in peer]), "MB"),
    ]


def peer_params() -> dict[str, Any]:
    setting = litestream.DEFAULTS
    return {
        "version": litestream.version(),
        "replica": "file",
        "monitor-interval": setting.monitor_interval,
        "sync-interval": setting.sync_interval,
    }


def run(
    windows: int = 3, window_s: float = 60.0, episodes: int = 1000, unload_after: float = UNLOAD_AFTER_S
) -> dict[str, Any]:
    """After the catch-up, one window while the warm layer still holds its model, then, once the
    daemon has let the idle model go (``warm.unload_after`` = ``unload_after`` here, so that the run
    reaches it; the product default is 600 s), ``windows`` windows: the steady state. Then what an
    idle spell costs the next episode and search (``after_idle``), and the peer, Litestream, over as
    many windows."""
    records: list[dict[str, Any]] = []
    with workdir("idle") as root:
        site = make_site(root, warm_keys=f"unload_after = {unload_after}\n")
        copy_fixture(episodes, site.agentdb)
        with DaemonProcess(site) as daemon:
            wait_caught_up(site, daemon, episodes, timeout=120)
            wait_indexed(site, daemon, timeout=900)
            time.sleep(SETTLE_S)
            loaded_s = min(LOADED_WINDOW_S, unload_after / 3)
            progress(f"idle: the model still loaded ({loaded_s:g} s)")
            loaded = window(daemon, site, loaded_s)
            progress(f"  {describe_run(loaded)}")
            if model_loaded(site) is not True:
                raise RuntimeError("the model was let go before the loaded window ended: raise UNLOAD_AFTER_S")
            records.append({"window": 0, "model": "loaded", **loaded})
            wait_for(
                lambda: daemon.check_alive() and model_loaded(site) is False,
                timeout=unload_after + 60,
                interval=0.5,
                what="the daemon to let the idle model go",
            )
            time.sleep(SETTLE_S)
            for i in range(windows):
                progress(f"idle: window {i + 1}/{windows} ({window_s:g} s)")
                record = window(daemon, site, window_s)
                progress(f"  {describe_run(record)}")
                records.append({"window": i + 1, "model": "let go", **record})
            woken = after_idle(daemon, site, unload_after)
            progress(f"  {describe_run(woken)}")
            records.append(woken)
    peer = peer_windows(windows, window_s, episodes)
    records += peer
    steady = [r for r in records if r.get("model") == "let go"]
    figures = [
        at_most("idle CPU", median([r["cpu_s_per_hour"] for r in steady]), "CPU-s/hour", TARGET_CPU_S_PER_HOUR),
        at_most("idle RSS", median([r["rss_mb"] for r in steady]), "MB", TARGET_RSS_MB),
        Figure("idle RSS while the model is loaded (the first unload_after s)", loaded["rss_mb"], "MB"),
        Figure("peak RSS (VmHWM, includes the catch-up)", median([r["peak_rss_mb"] for r in steady]), "MB"),
        at_most(
            "after an idle spell: write to searchable", woken["write_to_searchable_ms"], "ms", TARGET_SEARCHABLE_MS
        ),
        Figure("after an idle spell: first search", woken["first_search_ms"], "ms"),
        Figure("after an idle spell: the search after it", woken["next_search_ms"], "ms"),
        *peer_figures(peer),
    ]
    params = {
        "windows": windows,
        "window_s": window_s,
        "episodes": episodes,
        "unload_after_s": unload_after,
        "peer": peer_params(),
    }
    return result("idle", params, records, figures)


def after_idle(daemon: DaemonProcess, site: SiteFiles, unload_after: float) -> dict[str, Any]:
    """With the warm layer's worker gone (the idle daemon's state): an agent's new episode, timed
    from its save until a search through the daemon finds it (the worker starts, loads the model,
    indexes); then, once the worker has gone again, one search (it starts the worker) and the next."""
    from bench.warm import first_found
    from daemon.control.client import ControlClient
    from sync.search.request import SearchRequest

    socket = site.settings().socket_path

    def worker_gone() -> bool:
        return daemon.check_alive() and len(process_tree(daemon.pid)) == 1

    wait_for(worker_gone, timeout=60, what="the warm layer's worker to have exited")
    agent = AgentProcess(site.agentdb)
    try:
        token = f"afteridle{int(time.time())}"
        task = f"rotate the signing key after the idle spell [{token}]"
        _, saved_ms = agent.store_saved_at(
            {"sessionId": "idle", "task": task, "output": "rotated", "reward": 1, "success": True}
        )
        found_ms, _ = first_found(socket, task, token, "hybrid", timeout=120)
    finally:
        agent.kill()
    progress("idle: waiting for the worker to exit again before a search")
    wait_for(worker_gone, timeout=unload_after + 120, interval=0.5, what="the worker to exit after the episode")
    request = SearchRequest(query="deploy the billing api to staging", limit=10)
    timings = []
    for _ in range(2):
        started = time.perf_counter()
        ControlClient(socket).search(request, timeout=120)
        timings.append((time.perf_counter() - started) * 1000)
    return {
        "window": "after idle",
        "model": "woken",
        "write_to_searchable_ms": found_ms - saved_ms,
        "first_search_ms": timings[0],
        "next_search_ms": timings[1],
    }


def run_sync_only(windows: int = 3, window_s: float = 60.0, episodes: int = 1000) -> dict[str, Any]:
    """The same daemon with ``[warm] enabled = false``: syncing alone (kept as ``idle_sync_only``);
    then the peer, as in ``run``."""
    records: list[dict[str, Any]] = []
    with workdir("idle-sync-only") as root:
        site = make_site(root, warm=False)
        copy_fixture(episodes, site.agentdb)
        with DaemonProcess(site) as daemon:
            wait_caught_up(site, daemon, episodes, timeout=120)
            time.sleep(SETTLE_S)
            for i in range(windows):
                progress(f"idle, sync only: window {i + 1}/{windows} ({window_s:g} s)")
                record = window(daemon, site, window_s)
                progress(f"  {describe_run(record)}")
                records.append({"window": i + 1, **record})
    ours = list(records)
    peer = peer_windows(windows, window_s, episodes)
    records += peer
    figures = [
        at_most("idle CPU", median([r["cpu_s_per_hour"] for r in ours]), "CPU-s/hour", TARGET_CPU_S_PER_HOUR),
        at_most("idle RSS", median([r["rss_mb"] for r in ours]), "MB", TARGET_RSS_MB),
        *peer_figures(peer),
    ]
    params = {"windows": windows, "window_s": window_s, "episodes": episodes, "warm": False, "peer": peer_params()}
    return result("idle_sync_only", params, records, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--windows", type=int, default=3)
    parser.add_argument("--window-s", type=float, default=60.0)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--sync-only", action="store_true", help="with warm.enabled = false (no search index)")
    parser.add_argument("--unload-after", type=float, default=UNLOAD_AFTER_S, help="warm.unload_after for the run")
    args = parser.parse_args()
    if args.sync_only:
        emit(run_sync_only(args.windows, args.window_s, args.episodes))
    else:
        emit(run(args.windows, args.window_s, args.episodes, args.unload_after))


if __name__ == "__main__":
    main()
