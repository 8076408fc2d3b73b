"""What more than one benchmark needs: cached fixtures, waits on the daemon, statistics, the CPU
and memory of a process tree, output; and, passed on from the harness the tests share
(tests/harness/), the AgentDB generator and agents, a site's files, the daemon in a child process
and reading the hub.

Everything here drives the real parts: AgentDB files come from the real agentdb package
(tests/agentdb_gen), the daemon is ``python -m daemon run`` in a child process, the hub is the
product's own ``HubBackbone``. Nothing asserts on timings: benchmarks measure and report.
"""

from __future__ import annotations

import cProfile
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal
from pathlib import Path
from typing import Any

# One harness with the tests (tests/harness/, on sys.path by bench/__init__.py): the AgentDB
# generator and agents, a site's files, the daemon in a child process, reading the hub, the wait.
from harness import (
    FIXED_TS,
    GEN,
    ROOT,
    AgentProcess,
    ChildProcess,
    DaemonProcess,
    SiteFiles,
    episode,
    generate_agentdb,
    hub_episodes,
    hub_total,
    live_agent_argv,
    make_site,
    run_live_agent,
    short_dir,
    sidecar_value,
    start_viewer,
    stop_viewer,
    wait_for,
    wal_writer_argv,
)
from harness.site import BENCH_SITE

from bench.figures import decimals

# What this module takes from the harness and the benchmarks import from here; the names this
# module defines are importable without being listed.
__all__ = [
    "FIXED_TS",
    "GEN",
    "ROOT",
    "AgentProcess",
    "ChildProcess",
    "DaemonProcess",
    "SiteFiles",
    "as_installed",
    "episode",
    "hub_episodes",
    "hub_total",
    "live_agent_argv",
    "make_site",
    "run_live_agent",
    "short_dir",
    "sidecar_value",
    "start_viewer",
    "stop_viewer",
    "wait_for",
    "wal_writer_argv",
]

CACHE = ROOT / "bench" / ".cache"
MEMSYNC = Path(sys.executable).parent / "memsync"  # the console script, as an agent's hooks run it
RESULTS = ROOT / "bench" / "results"
SITE = BENCH_SITE  # the site make_site lays out


def as_installed() -> None:
    """Compile memsync's modules to bytecode, as ``pip install`` does for an installed package,
    before a benchmark times the command. This checkout is an editable install: with
    PYTHONDONTWRITEBYTECODE set (as on the machines here) every ``memsync`` start would otherwise
    compile each module it imports from source, a cost no installed copy pays."""
    import compileall

    for package in ("daemon", "sync"):
        compileall.compile_dir(ROOT / package, quiet=2)


# -- statistics ----------------------------------------------------------------------------------
def percentile(values: Sequence[float], pct: float) -> float:
    """The ``pct``-th percentile (0..100), linear between closest ranks (numpy's default)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


@contextmanager
def stopwatch() -> Iterator[Callable[[], float]]:
    """``with stopwatch() as elapsed:`` ... ``elapsed()`` is the seconds since the block began."""
    started = time.perf_counter()
    yield lambda: time.perf_counter() - started


# -- figures and output --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Figure:
    """One headline number, the median over repetitions, with its target when there is one."""

    metric: str
    value: float
    unit: str
    target: str | None = None
    met: bool | None = None


def at_most(metric: str, value: float, unit: str, limit: float) -> Figure:
    bound = shown_bound(limit, ROUND_CEILING)
    return Figure(metric, value, unit, f"<= {bound:g} {unit}", value <= bound)


def at_least(metric: str, value: float, unit: str, floor: float) -> Figure:
    bound = shown_bound(floor, ROUND_FLOOR)
    return Figure(metric, value, unit, f">= {bound:g} {unit}", value >= bound)


def shown_bound(x: float, rounding: str) -> float:
    """``x`` to the six significant digits a target shows, rounded the way that keeps a value equal to
    ``x`` within the target (a figure equal to its baseline, 64.98945..., is ">= 64.9894", not
    ">= 64.9895", which it would miss): the target's text and its verdict agree."""
    if x == 0 or not math.isfinite(x):
        return x
    step = Decimal(1).scaleb(math.floor(math.log10(abs(x))) - 5)
    return float(Decimal(repr(x)).quantize(step, rounding=rounding))


def result(name: str, params: dict[str, Any], runs: list[dict[str, Any]], figures: list[Figure]) -> dict[str, Any]:
    return {
        "benchmark": name,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load": os.getloadavg(),  # 1, 5 and 15 minutes, as the benchmark ended: how busy the machine was
        "params": params,
        "runs": runs,
        "figures": [asdict(f) for f in figures],
    }


def summary(res: dict[str, Any]) -> str:
    lines = [f"{res['benchmark']}: medians ({len(res['runs'])} repetitions in all)"]
    for fig in res["figures"]:
        verdict = "" if fig["met"] is None else ("  [target met]" if fig["met"] else "  [target MISSED]")
        target = f" (target {fig['target']})" if fig["target"] else ""
        lines.append(f"  {fig['metric']}: {fig['value']:,.{decimals(fig['value'])}f} {fig['unit']}{target}{verdict}")
    return "\n".join(lines)


def emit(res: dict[str, Any]) -> None:
    """Print the JSON result line and the human summary; keep the JSON under bench/results/."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{res['benchmark']}.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(res, separators=(",", ":")), flush=True)
    print(summary(res), flush=True)


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


# -- AgentDB fixtures ----------------------------------------------------------------------------
def agentdb_fixture(n: int, *, seed: int = 42) -> Path:
    """An AgentDB file of ``n`` episodes written by the real package, generated once and cached."""
    path = CACHE / f"agentdb-n{n}-s{seed}-ts{FIXED_TS}.db"
    if path.exists():
        return path
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".partial-{os.getpid()}")
    partial.unlink(missing_ok=True)
    progress(f"generating {n} episodes with the agentdb package into {path.name} (cached for next time)")
    try:
        generate_agentdb(partial, n, seed=seed, fixed_ts=FIXED_TS, timeout=1800)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    partial.replace(path)
    return path


def copy_fixture(n: int, dest: Path) -> Path:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(agentdb_fixture(n), dest)
    return dest


def wait_indexed(site: SiteFiles, daemon: DaemonProcess, timeout: float) -> None:
    """Until the daemon's warm layer has indexed everything the hub's change feed holds now (its
    status file's cursor reached the feed's end)."""
    from daemon.search_worker.files import read_status
    from sync.backbone.hub import HubBackbone

    hub = HubBackbone(site.hub, site.name, create=False)
    try:
        end = hub.feed_end()
    finally:
        hub.close()

    def cursor() -> int:
        status = read_status(site.settings()) or {}
        return int(status.get("cursor") or 0) if status.get("state") == "ok" else -1

    wait_for(
        lambda: daemon.check_alive() and cursor() >= end,
        timeout=timeout,
        interval=0.2,
        what="the warm layer to index what the hub holds",
    )


def timed_pass(site: Any, profiler: cProfile.Profile | None = None) -> tuple[float, Any]:
    """Seconds and report for one ``engine.run_pass()`` of a ``daemon.site.Site``, which must sync
    every row it reads (profiled when asked)."""
    if profiler is not None:
        profiler.enable()
    with stopwatch() as elapsed:
        report = site.engine.run_pass()
        seconds = elapsed()
    if profiler is not None:
        profiler.disable()
    if report.backlog or report.quarantined:
        raise RuntimeError(f"the pass did not sync everything: {report}")
    return seconds, report


@contextmanager
def workdir(name: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix=f"memsync-bench-{name}-") as folder:
        yield Path(folder)


# -- a process and its descendants ---------------------------------------------------------------
CLOCK_TICK = os.sysconf("SC_CLK_TCK")


def _children_by_parent() -> dict[int, list[int]]:
    """Every process's children, from the parent pid in each /proc/PID/stat."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended while we looked
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    return children


def process_tree(pid: int) -> list[int]:
    """``pid`` and its living descendants. /proc/PID/task/TID/children is what the kernel offers for
    this, but only when built with CONFIG_PROC_CHILDREN; without it, every process's parent pid."""
    children_files = list(Path(f"/proc/{pid}/task").glob("*/children"))
    by_parent: dict[int, list[int]] | None = None if children_files else _children_by_parent()
    tree, todo = [], [pid]
    while todo:
        current = todo.pop()
        tree.append(current)
        if by_parent is not None:
            todo += by_parent.get(current, [])
            continue
        for task in Path(f"/proc/{current}/task").glob("*/children"):
            try:
                todo += [int(child) for child in task.read_text().split()]
            except (FileNotFoundError, ProcessLookupError):
                continue
    return tree


def tree_cpu_seconds(pid: int) -> float:
    """CPU seconds (user + system, every thread) of ``pid`` and its descendants: each living one's
    utime + stime, plus cutime + cstime, which hold the descendants that ended and were waited for
    (so a helper process that comes and goes within a window is still counted)."""
    total = 0
    for member in process_tree(pid):
        try:
            text = Path(f"/proc/{member}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue  # it ended since we listed it: its parent's cutime will hold it once reaped
        fields = text[text.rindex(")") + 2 :].split()  # fields from the 3rd (state) on
        total += sum(int(fields[k]) for k in (11, 12, 13, 14))  # utime, stime, cutime, cstime
    return total / CLOCK_TICK


def tree_rss_mb(pid: int) -> float:
    """Resident memory (VmRSS) of ``pid`` and its descendants, in MB (shared pages counted in each)."""
    total = 0
    for member in process_tree(pid):
        try:
            lines = Path(f"/proc/{member}/status").read_text().splitlines()
        except (FileNotFoundError, ProcessLookupError):
            continue
        total += sum(int(line.split()[1]) for line in lines if line.startswith("VmRSS:"))
    return total / 1024


def wait_caught_up(site: SiteFiles, daemon: DaemonProcess, episodes: int, timeout: float) -> None:
    """Until the hub holds ``episodes`` episodes from the site (the daemon must stay alive)."""
    wait_for(
        lambda: daemon.check_alive() and hub_total(site.hub, site.name) >= episodes,
        timeout=timeout,
        interval=0.1,
        what=f"{episodes} episodes in the hub",
    )
