"""``memsync mcp`` as an agent's MCP client sees it.

- **Time to ready**: the installed ``memsync`` command spawned as ``memsync mcp --config F``, an
  ``initialize`` request written to its stdin at once, timed from spawn to the answer's line,
  ``--starts`` times (what a client's start-up timeout measures, without any client's own cost).
- **Search round trip**: in one MCP session, ``search_memory`` through a running daemon whose warm
  worker is loaded, ``--calls`` times; beside it, alternating call by call, the daemon's own search
  through its control socket (what the MCP server asks for): the difference is what MCP costs.

    python -m bench.mcp [--repetitions 3] [--starts 10] [--calls 100] [--episodes 1000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from typing import Any

import anyio

from bench.common import (
    MEMSYNC,
    DaemonProcess,
    Figure,
    SiteFiles,
    as_installed,
    at_most,
    copy_fixture,
    emit,
    make_site,
    median,
    percentile,
    progress,
    result,
    wait_caught_up,
    wait_indexed,
    workdir,
)

TARGET_READY_MS = 1000.0
TARGET_SEARCH_P50_MS = 25.0
QUERY = "duplicate key on users.email"


def _client(site: SiteFiles) -> Any:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    return Client(StdioServerParameters(command=str(MEMSYNC), args=["mcp", "--config", str(site.config)]))


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


def ready_times(site: SiteFiles, starts: int) -> list[float]:
    took = []
    for _ in range(starts):
        started = time.perf_counter()
        proc = subprocess.Popen(
            [str(MEMSYNC), "mcp", "--config", str(site.config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        proc.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        took.append((time.perf_counter() - started) * 1000)
        proc.stdin.close()
        proc.wait(30)
        proc.stdout.close()
        if b'"serverInfo"' not in line:
            raise RuntimeError(f"memsync mcp did not answer initialize: {line[:200]!r}")
    return took


async def search_times(site: SiteFiles, calls: int) -> tuple[list[float], list[float]]:
    from daemon.control.client import ControlClient
    from sync.search.request import SearchRequest

    control = ControlClient(site.settings().socket_path)
    request = SearchRequest(query=QUERY, limit=5)
    ours, daemon = [], []
    async with _client(site) as client:
        for i in range(calls + 1):
            started = time.perf_counter()
            answer = await client.call_tool("search_memory", {"query": QUERY, "limit": 5})
            mcp_ms = (time.perf_counter() - started) * 1000
            if answer.is_error or not answer.structured_content["results"]:
                raise RuntimeError(f"search_memory failed: {answer.content}")
            started = time.perf_counter()
            if not control.search(request):
                raise RuntimeError("the daemon's search found nothing")
            socket_ms = (time.perf_counter() - started) * 1000
            if i:  # the first pair loads the model if the worker let it go
                ours.append(mcp_ms)
                daemon.append(socket_ms)
    return ours, daemon


def repetition(index: int, starts: int, calls: int, episodes: int) -> dict[str, Any]:
    with workdir(f"mcp-{index}") as root:
        site = make_site(root)
        copy_fixture(episodes, site.agentdb)
        with DaemonProcess(site) as daemon:
            wait_caught_up(site, daemon, episodes, timeout=300)
            wait_indexed(site, daemon, timeout=600)
            ready = ready_times(site, starts)
            ours, direct = anyio.run(search_times, site, calls)
    return {
        "ready_p50_ms": percentile(ready, 50),
        "ready_max_ms": max(ready),
        "search_p50_ms": percentile(ours, 50),
        "search_p99_ms": percentile(ours, 99),
        "socket_p50_ms": percentile(direct, 50),
        "socket_p99_ms": percentile(direct, 99),
    }


def describe_run(r: dict[str, Any]) -> str:
    return (
        f"ready p50 {r['ready_p50_ms']:.0f} / max {r['ready_max_ms']:.0f} ms; "
        f"MCP search p50 {r['search_p50_ms']:.1f} / p99 {r['search_p99_ms']:.1f} ms "
        f"(daemon's socket {r['socket_p50_ms']:.1f} / {r['socket_p99_ms']:.1f})"
    )


def run(repetitions: int = 3, starts: int = 10, calls: int = 100, episodes: int = 1000) -> dict[str, Any]:
    as_installed()
    records = []
    for i in range(repetitions):
        progress(f"mcp: repetition {i + 1}/{repetitions}")
        record = repetition(i, starts, calls, episodes)
        progress(f"  {describe_run(record)}")
        records.append(record)

    def med(key: str) -> float:
        return median([r[key] for r in records])

    figures = [
        at_most("MCP server time to ready p50 (spawn to initialize)", med("ready_p50_ms"), "ms", TARGET_READY_MS),
        Figure("MCP server time to ready, slowest start", med("ready_max_ms"), "ms"),
        at_most("MCP search round trip p50 (daemon running)", med("search_p50_ms"), "ms", TARGET_SEARCH_P50_MS),
        Figure("MCP search round trip p99", med("search_p99_ms"), "ms"),
        Figure("daemon's own search through its socket p50 (same run)", med("socket_p50_ms"), "ms"),
        Figure("daemon's own search through its socket p99", med("socket_p99_ms"), "ms"),
    ]
    params = {"repetitions": repetitions, "starts": starts, "calls": calls, "episodes": episodes}
    return result("mcp", params, records, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--starts", type=int, default=10)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--episodes", type=int, default=1000)
    args = parser.parse_args()
    emit(run(args.repetitions, args.starts, args.calls, args.episodes))


if __name__ == "__main__":
    main()
