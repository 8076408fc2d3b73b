"""What recording use costs an agent: the context hook's and the MCP ``search_memory``'s time with
use recorded against the same without, paired call by call.

One site (``--episodes`` generated episodes) and one daemon of this checkout, its worker loaded.
Against it, alternating call by call so that the machine's load falls on both alike:

- **context hook**: ``python -m daemon context --for claude-code`` fed a UserPromptSubmit JSON (a
  new session each call), from spawn to exit, run from this checkout (which notes the block's
  memories in the site's use spool) and from ``--base``, a checkout of the code without recording
  use: this commit with its two noting calls (``daemon/cli/context.py``'s ``_note_handed``, the MCP
  server's ``_noted``) returning at once, so that nothing else differs (the code before use was
  recorded would do; it drifts further from this one with every merge). The same interpreter and
  packages; the control socket's protocol is the same;
- **the hook's added work**: a fresh interpreter importing what the hook imports, against the same
  that also imports what noting a use needs and notes one (spawn to exit, paired): the cost itself,
  without the daemon's search, whose noise under load dwarfs it;
- **MCP search_memory**: one MCP session of each checkout's ``python -m daemon mcp`` (stdio, the
  official SDK's client), ``search_memory`` round trips.

Each figure is the median over ``--repetitions`` of each run's p50; the added cost is this
checkout's p50 less the base's. The uses the runs noted are checked to have reached the backbone.

    git worktree add --detach /tmp/base HEAD   # then make the two noting calls return at once
    python -m bench.use_cost --base /tmp/base [--repetitions 3] [--calls 40] [--episodes 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import (
    ROOT,
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
from bench.hooks import prompt_json
from bench.mcp import QUERY

ADDED_CONTEXT_MS = 5.0  # the bound on what recording use may add to the hook's p50


def _env() -> dict[str, str]:
    # The checkout a command runs from decides which code it is: no PYTHONPATH pointing elsewhere.
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def context_pairs(site: SiteFiles, base: Path, calls: int) -> tuple[list[float], list[float]]:
    argv = [
        sys.executable,
        "-m",
        "daemon",
        "context",
        "--for",
        "claude-code",
        "--timeout",
        "20",
        "--config",
        str(site.config),
    ]
    cwd = site.config.parent

    # Each checkout its own light-path cache: the cache is keyed on memsync's config code, so two
    # checkouts sharing one would each find the other's entry stale and take the full path.
    caches = {checkout: cwd / f"cache-{n}" for n, checkout in enumerate((ROOT, base))}

    def timed(checkout: Path, session: str) -> float:
        env = _env() | {"XDG_CACHE_HOME": str(caches[checkout])}
        started = time.perf_counter()
        done = subprocess.run(
            argv, input=prompt_json(session, cwd), capture_output=True, cwd=checkout, env=env, check=False
        )
        took = (time.perf_counter() - started) * 1000
        if done.returncode != 0 or not done.stdout.strip():
            said = done.stderr.decode(errors="replace")
            raise RuntimeError(f"the context hook from {checkout} gave no block: {said}")
        return took

    timed(ROOT, "warm-ours")
    timed(base, "warm-base")
    ours, before = [], []
    for i in range(calls):
        # Which goes first alternates: the second of a pair finds the daemon's caches warmer.
        if i % 2:
            before.append(timed(base, f"base-{i}"))
            ours.append(timed(ROOT, f"ours-{i}"))
        else:
            ours.append(timed(ROOT, f"ours-{i}"))
            before.append(timed(base, f"base-{i}"))
    return ours, before


# The hook's own added work, apart from everything else it does: a fresh interpreter that imports
# what the hook imports, then (the second) also what noting a use imports, and notes one.
_HOOK_IMPORTS = "import daemon.cli.context, daemon.usecases.memory.context, daemon.context.files, daemon.context.hook"
_NOTE = (
    "; from daemon.usecases.memory.uses import noted; from pathlib import Path; "
    "noted(Path({state!r}), 'context', [('laptop', str(i)) for i in range(5)], agent='claude-code')"
)


def added_work_pairs(state: Path, calls: int) -> tuple[list[float], list[float]]:
    """(with a use noted, without), spawn to exit, paired and alternating."""
    without = [sys.executable, "-c", _HOOK_IMPORTS]
    with_use = [sys.executable, "-c", _HOOK_IMPORTS + _NOTE.format(state=str(state))]

    def timed(argv: list[str]) -> float:
        started = time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=_env(), check=True, capture_output=True)
        return (time.perf_counter() - started) * 1000

    timed(with_use)
    timed(without)
    ours, before = [], []
    for i in range(calls):
        if i % 2:
            before.append(timed(without))
            ours.append(timed(with_use))
        else:
            ours.append(timed(with_use))
            before.append(timed(without))
    return ours, before


def _client(site: SiteFiles, checkout: Path) -> Any:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "daemon", "mcp", "--config", str(site.config)],
        cwd=checkout,
        env=_env(),
    )
    return Client(params)


async def mcp_pairs(site: SiteFiles, base: Path, calls: int) -> tuple[list[float], list[float]]:
    ours, before = [], []
    async with _client(site, ROOT) as mine, _client(site, base) as theirs:
        for i in range(calls + 1):
            took: dict[str, float] = {}
            order = (("ours", mine), ("base", theirs)) if i % 2 == 0 else (("base", theirs), ("ours", mine))
            for name, client in order:  # which goes first alternates, as for the hook
                started = time.perf_counter()
                answer = await client.call_tool("search_memory", {"query": QUERY, "limit": 5})
                took[name] = (time.perf_counter() - started) * 1000
                if answer.is_error or not answer.structured_content["results"]:
                    raise RuntimeError(f"search_memory failed: {answer.content}")
            if i:  # the first pair loads the model if the worker let it go
                ours.append(took["ours"])
                before.append(took["base"])
    return ours, before


def used_in_backbone(site: SiteFiles, daemon: DaemonProcess, timeout: float = 30) -> dict[str, int]:
    """The uses by kind the backbone holds, once the daemon has folded the spool."""
    from sync.backbone.hub import HubBackbone

    deadline = time.monotonic() + timeout
    while True:
        hub = HubBackbone(site.settings().hub_path, site.settings().site.name, create=False)
        try:
            kinds: dict[str, int] = {}
            for totals in hub.use_totals().values():
                for kind, n in totals.by_kind.items():
                    kinds[kind] = kinds.get(kind, 0) + n
        finally:
            hub.close()
        if kinds.get("context") and kinds.get("mcp_search"):
            return kinds
        if time.monotonic() > deadline:
            raise RuntimeError(f"the uses did not reach the backbone: {kinds} (daemon log: {daemon.log})")
        time.sleep(0.5)


def repetition(index: int, base: Path, calls: int, episodes: int) -> dict[str, Any]:
    with workdir(f"use-cost-{index}") as root:
        site = make_site(root)
        copy_fixture(episodes, site.agentdb)
        with DaemonProcess(site) as daemon:
            wait_caught_up(site, daemon, episodes, timeout=300)
            wait_indexed(site, daemon, timeout=600)
            context_ours, context_base = context_pairs(site, base, calls)
            work_ours, work_base = added_work_pairs(root / "scratch.state.db", calls)
            mcp_ours, mcp_base = anyio.run(mcp_pairs, site, base, calls)
            kinds = used_in_backbone(site, daemon)
    return {
        "context_p50_ms": percentile(context_ours, 50),
        "context_base_p50_ms": percentile(context_base, 50),
        "context_paired_ms": percentile([a - b for a, b in zip(context_ours, context_base, strict=True)], 50),
        "work_paired_ms": percentile([a - b for a, b in zip(work_ours, work_base, strict=True)], 50),
        "work_p50_ms": percentile(work_ours, 50),
        "work_base_p50_ms": percentile(work_base, 50),
        "mcp_p50_ms": percentile(mcp_ours, 50),
        "mcp_base_p50_ms": percentile(mcp_base, 50),
        "mcp_paired_ms": percentile([a - b for a, b in zip(mcp_ours, mcp_base, strict=True)], 50),
        "uses": kinds,
        "load": os.getloadavg()[0],
    }


def describe_run(r: dict[str, Any]) -> str:
    return (
        f"context hook p50 {r['context_p50_ms']:.1f} ms (base {r['context_base_p50_ms']:.1f}, "
        f"paired {r['context_paired_ms']:+.1f}); "
        f"the hook's added work paired {r['work_paired_ms']:+.2f} ms; "
        f"MCP search p50 {r['mcp_p50_ms']:.1f} ms (base {r['mcp_base_p50_ms']:.1f}, paired {r['mcp_paired_ms']:+.1f}); "
        f"uses {r['uses']}; load {r['load']:.1f}"
    )


def figures_of(records: list[dict[str, Any]]) -> list[Figure]:
    """The headline figures from every repetition's: medians over repetitions; an added cost is the
    median of each repetition's own difference (its two p50s, taken side by side)."""

    def med(key: str) -> float:
        return median([r[key] for r in records])

    def added(ours: str, base: str) -> float:
        return median([r[ours] - r[base] for r in records])

    return [
        Figure("context hook p50, use recorded", med("context_p50_ms"), "ms"),
        Figure("context hook p50, before (same run)", med("context_base_p50_ms"), "ms"),
        at_most(
            "context hook p50 added by recording use",
            added("context_p50_ms", "context_base_p50_ms"),
            "ms",
            ADDED_CONTEXT_MS,
        ),
        Figure("context hook, median of paired differences", med("context_paired_ms"), "ms"),
        at_most(
            "the hook's added work (imports and one note), median of paired differences",
            med("work_paired_ms"),
            "ms",
            ADDED_CONTEXT_MS,
        ),
        Figure("MCP search_memory p50, use recorded", med("mcp_p50_ms"), "ms"),
        Figure("MCP search_memory p50, before (same run)", med("mcp_base_p50_ms"), "ms"),
        Figure("MCP search_memory p50 added by recording use", added("mcp_p50_ms", "mcp_base_p50_ms"), "ms"),
        Figure("MCP search_memory, median of paired differences", med("mcp_paired_ms"), "ms"),
        Figure("load average (1 min) during the runs", med("load"), ""),
    ]


def run(base: Path, repetitions: int = 3, calls: int = 40, episodes: int = 1000) -> dict[str, Any]:
    as_installed()
    records = []
    for i in range(repetitions):
        progress(f"use cost: repetition {i + 1}/{repetitions}")
        record = repetition(i, base, calls, episodes)
        progress(f"  {describe_run(record)}")
        records.append(record)

    return result(
        "use_cost", {"repetitions": repetitions, "calls": calls, "episodes": episodes}, records, figures_of(records)
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.use_cost", description=__doc__.split("\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="a checkout of the code without recording use")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--episodes", type=int, default=1000)
    args = parser.parse_args()
    emit(run(args.base.resolve(), args.repetitions, args.calls, args.episodes))
    print(json.dumps({"load": os.getloadavg()}), file=sys.stderr)


if __name__ == "__main__":
    main()
