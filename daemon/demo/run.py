"""``memsync demo``: the main job in half a minute, with nothing configured.

Two sites on this machine ("laptop" and "vm"), each with its own AgentDB file, a live agent writing
into it and its own memsync daemon (a real ``memsync run`` process), all syncing into one embedded
hub. A live table shows the counts; the summary shows what arrived, that it arrived once, and how
long it took from the agent's save to the hub.
"""

from __future__ import annotations

import io
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table

from daemon.config import load_settings
from daemon.control.lock import holder_pid
from daemon.demo.agents import Agent
from daemon.search_worker.files import read_status
from daemon.search_worker.recall import run_search
from sync.backbone.hub import HubBackbone
from sync.search.query.results_text import render_results
from sync.search.request import SearchFilter, SearchRequest

SITES = ("laptop", "vm")
DRAIN_SECONDS = 10.0
INDEX_WAIT_SECONDS = 90.0


def _config(root: Path, site: str) -> Path:
    folder = root / site
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "memsync.toml"
    path.write_text(
        f'data_dir = "."\n\n[site]\nname = "{site}"\n\n[site.defaults]\nagent_platform = "memsync-demo"\n\n'
        f'[agentdb]\npath = "agentdb.db"\npoll_interval = 0.5\n\n'
        f'[backbone]\nkind = "local"\npath = "../hub.db"\n\n[state]\npath = "state.db"\n\n'
        f'[log]\nformat = "json"\n',
        encoding="utf-8",
    )
    return path


def command_name(cwd: Path | None = None) -> str:
    """``memsync`` as the user can type it here: the bare name when PATH finds this installation,
    else the path of its script (relative inside the current folder, such as ``.venv/bin/memsync``
    in a checkout), else this Python with ``-m daemon``."""
    argv0 = Path(sys.argv[0])
    script = argv0 if argv0.name == "memsync" else Path(sys.executable).parent / "memsync"
    if not script.is_file():
        return f"{shlex.quote(sys.executable)} -m daemon"
    script = script.absolute()
    found = shutil.which("memsync")
    if found is not None and Path(found).resolve() == script.resolve():
        return "memsync"
    try:
        return shlex.quote(str(script.relative_to((cwd or Path.cwd()).absolute())))
    except ValueError:
        return shlex.quote(str(script))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _hub_view(hub: HubBackbone) -> dict[str, dict[str, float]]:
    """For each site: AgentDB id -> syncedAt (ms), read straight from the hub."""
    seen: dict[str, dict[str, float]] = {site: {} for site in SITES}
    for episode in hub.episodes():
        seen.setdefault(episode["sourceSite"], {})[episode["sourceId"]] = float(episode["syncedAt"])
    return seen


def _table(agents: dict[str, Agent], seen: dict[str, dict[str, float]], elapsed: float) -> Table:
    table = Table(title=f"memsync demo: {elapsed:5.1f}s", title_justify="left")
    for column in ("site", "agent wrote", "in the hub", "waiting", "latency p50 (ms)"):
        table.add_column(column, justify="right" if column != "site" else "left")
    for site, agent in agents.items():
        latencies = _latencies(agent, seen.get(site, {}))
        p50 = f"{percentile(latencies, 50):.0f}" if latencies else "-"
        written = len(agent.saved)
        synced = len(seen.get(site, {}))
        table.add_row(site, str(written), str(synced), str(max(0, written - synced)), p50)
    return table


def _latencies(agent: Agent, synced: dict[str, float]) -> list[float]:
    return [synced[str(i)] - saved for i, saved in agent.saved.items() if str(i) in synced]


def run_demo(*, duration: float, directory: Path | None, rate: float, console: Console) -> int:
    root = directory or Path(tempfile.mkdtemp(prefix="memsync-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    count = max(1, round(duration * rate))
    configs = {site: _config(root, site) for site in SITES}
    daemons: dict[str, subprocess.Popen[bytes]] = {}
    logs = {site: (root / site / "daemon.log").open("ab") for site in SITES}
    hub = HubBackbone(root / "hub.db", SITES[0])  # opened as the laptop: it only reads, every site's
    agents = {
        site: Agent(root / site / "agentdb.db", site, count, 1.0 / rate, seed=n + 1) for n, site in enumerate(SITES)
    }
    console.print(f"[bold]memsync demo[/]: 2 sites, {count} episodes each at {rate:g}/s, files in {root}")
    console.print(f"agents: {next(iter(agents.values())).kind}; backbone: embedded hub {root / 'hub.db'}")
    started = time.monotonic()
    try:
        for site in SITES:
            daemons[site] = subprocess.Popen(
                [sys.executable, "-m", "daemon", "run", "--config", str(configs[site])],
                stdout=logs[site],
                stderr=logs[site],
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        _wait_until_running(configs, daemons)
        for agent in agents.values():
            agent.start()
        _watch(console, root, hub, agents, daemons, started)
        searched = _closing_search(console, configs["laptop"], hub)
    finally:
        _shut_down(agents, daemons)
        for handle in logs.values():
            handle.close()
    seen = _hub_view(hub)
    hub.close()
    code = _summary(console, root, configs, agents, seen)
    return code if searched else 1


def _watch(
    console: Console,
    root: Path,
    hub: HubBackbone,
    agents: dict[str, Agent],
    daemons: dict[str, subprocess.Popen[bytes]],
    started: float,
) -> None:
    """Show the live table until every episode written has arrived (or the drain time runs out)."""
    with Live(console=console, refresh_per_second=4, transient=False) as live:
        drain_deadline: float | None = None
        while True:
            seen = _hub_view(hub)
            live.update(_table(agents, seen, time.monotonic() - started))
            all_written = all(a.done() for a in agents.values())
            if all_written and all(len(seen[s]) >= len(a.saved) for s, a in agents.items()):
                return
            if all_written:
                drain_deadline = drain_deadline or time.monotonic() + DRAIN_SECONDS
                if time.monotonic() > drain_deadline:
                    return
            dead = [s for s, p in daemons.items() if p.poll() is not None]
            if dead:
                console.print(f"[red]daemon for {', '.join(dead)} exited; see {root}/<site>/daemon.log[/]")
                return
            time.sleep(0.25)


def _wait_until_running(configs: dict[str, Path], daemons: dict[str, subprocess.Popen[bytes]]) -> None:
    """Agents start once every daemon holds its site's lock, so the figures show steady state."""
    deadline = time.monotonic() + 15
    locks = {site: (path.parent / "state.db.lock") for site, path in configs.items()}
    while time.monotonic() < deadline:
        if all(holder_pid(lock) for lock in locks.values()) or any(p.poll() is not None for p in daemons.values()):
            return
        time.sleep(0.05)


SEARCH_QUERY = "TLS certificate rotation"


def _closing_search(console: Console, config: Path, hub: HubBackbone) -> bool:
    """One memory: the laptop's daemon searches every site's episodes, once it has indexed them."""
    settings = load_settings(config)
    end = hub.feed_end()
    deadline = time.monotonic() + INDEX_WAIT_SECONDS
    while time.monotonic() < deadline:
        status = read_status(settings) or {}
        if int(status.get("cursor") or 0) >= end:
            break
        time.sleep(0.2)
    else:
        console.print(f"[red]the laptop's search index did not catch up within {INDEX_WAIT_SECONDS:.0f}s[/]")
        return False
    request = SearchRequest(SEARCH_QUERY, limit=3)
    started = time.perf_counter()
    found = run_search(settings, request)
    took = (time.perf_counter() - started) * 1000
    results = found.results
    where = "through the laptop's daemon" if found.via == "daemon" else "in this process (no daemon answered)"
    console.print()
    console.print(f'[bold]memsync search "{SEARCH_QUERY}"[/] ({where}, {took:.0f} ms)')
    text = io.StringIO()
    render_results(results, text)
    console.print(text.getvalue().rstrip("\n"), markup=False)
    # One site's episodes may fill the top results; the point is that every site's are searched.
    for site in sorted(set(SITES) - {r.site for r in results}):
        best = run_search(settings, SearchRequest(SEARCH_QUERY, limit=1, filter=SearchFilter(site=site))).results
        if best:
            text = io.StringIO()
            render_results(best, text)
            console.print(f"[bold]best match from {site}[/] (--site {site}):")
            console.print(text.getvalue().rstrip("\n"), markup=False)
            results = [*results, *best]
    sites = ", ".join(sorted({r.site for r in results}))
    console.print(f"[dim]near-duplicates are collapsed into their best match; --all shows them. sites: {sites}[/]")
    return bool(results)


def _shut_down(agents: dict[str, Agent], daemons: dict[str, subprocess.Popen[bytes]]) -> None:
    for agent in agents.values():
        agent.stop()
    for process in daemons.values():
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
    for process in daemons.values():
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def _summary(
    console: Console, root: Path, configs: dict[str, Path], agents: dict[str, Agent], seen: dict[str, dict[str, float]]
) -> int:
    table = Table(title="summary", title_justify="left")
    for column in ("site", "written", "synced", "exactly once", "p50 ms", "p99 ms", "max ms"):
        table.add_column(column, justify="left" if column == "site" else "right")
    ok = True
    for site, agent in agents.items():
        latencies = _latencies(agent, seen.get(site, {}))
        written, synced = len(agent.saved), len(seen.get(site, {}))
        once = synced == written and all(str(i) in seen.get(site, {}) for i in agent.saved)
        ok = ok and once and agent.error is None
        table.add_row(
            site,
            str(written),
            str(synced),
            "[green]yes[/]" if once else "[red]no[/]",
            *(
                f"{v:.0f}"
                for v in (percentile(latencies, 50), percentile(latencies, 99), max(latencies, default=float("nan")))
            ),
        )
        if agent.error:
            console.print(f"[red]{site} agent failed: {agent.error}[/]")
    console.print()
    console.print(table)
    if latencies_all := [v for s, a in agents.items() for v in _latencies(a, seen.get(s, {}))]:
        console.print(
            f"all sites: median {statistics.median(latencies_all):.0f} ms from the agent's save "
            f"to the hub, over {len(latencies_all)} episodes"
        )
    laptop = configs["laptop"]
    memsync = command_name()
    # soft_wrap: a command cut in two at the terminal's edge cannot be pasted.
    console.print(
        f"try: {memsync} status --config {laptop}   |   {memsync} export --config {laptop} | head -3", soft_wrap=True
    )
    console.print(f'     {memsync} search "duplicate key" --config {laptop}', soft_wrap=True)
    return 0 if ok else 1
