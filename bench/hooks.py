"""memsync as an agent's hooks call it: ``memsync search`` on every prompt, and ``memsync sync
--wait`` after every episode.

- **Search CLI wall time**: the installed ``memsync`` command (the console script beside this
  Python), ``memsync search QUERY -c F`` through a running daemon whose warm worker is loaded, from
  spawn to exit, ``--calls`` times; beside it, in the same run and alternating call by call,
  ``python -c pass`` with the same interpreter: the floor any Python command pays.
- **Context hook wall time**: ``memsync context --for claude-code -c F`` fed a UserPromptSubmit
  JSON on stdin (a new session each call, so nothing is left out as already given), through the
  same daemon, from spawn to exit, alternating with ``python -c pass`` likewise.
- **Hook wait**: a live agent (the real agentdb package, driven over stdin by ``agent.mjs``) saves
  an episode; the moment its save returns, the hook runs ``memsync sync --wait`` (then, in a second
  series, ``--wait --searchable``); the figure is from the save to the hook's return. The daemon
  runs with the product's defaults; the episode is checked to be in the hub (and found by search)
  when the hook returns.

    python -m bench.hooks [--repetitions 3] [--calls 30] [--episodes 1000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import (
    MEMSYNC,
    AgentProcess,
    DaemonProcess,
    Figure,
    SiteFiles,
    as_installed,
    at_most,
    copy_fixture,
    emit,
    episode,
    hub_episodes,
    make_site,
    median,
    percentile,
    progress,
    result,
    wait_caught_up,
    wait_indexed,
    workdir,
)

TARGET_SEARCH_P50_MS = 130.0  # issue 29: CLI search p50 <= 130 ms, reranking included
TARGET_CONTEXT_P50_MS = 150.0
QUERY = "duplicate key on users.email"
# A prompt the generated episodes answer (their tasks are names such as migrate_schema): the context
# hook gives a block only for memories over its relevance floor, and the block is what is timed.
CONTEXT_PROMPT = "the migrate_schema task failed again on a failing test log, what was the result last time?"


def wall_ms(argv: list[str], stdin: bytes | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, input=stdin, capture_output=True, check=False)
    took = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode(errors='replace')}")
    return took


def hook_episode(i: int, task: str) -> dict[str, Any]:
    """The ``i``-th episode an agent with hooks stores."""
    return episode(
        i,
        sessionId="hooks",
        task=task,
        input=f"hook input {i}",
        output=f"hook output {i}",
        reward=0.5,
        success=True,
        latencyMs=100,
        tokensUsed=1000,
        tags=["hook"],
        metadata={"agent_name": "hook-agent"},
    )


def search_calls(site: SiteFiles, calls: int) -> dict[str, Any]:
    search = [str(MEMSYNC), "search", QUERY, "--config", str(site.config)]
    floor = [sys.executable, "-c", "pass"]
    wall_ms(search)  # the worker is up and the model loaded: the steady state a hook sees
    ours, baseline = [], []
    for _ in range(calls):
        ours.append(wall_ms(search))
        baseline.append(wall_ms(floor))
    return {
        "search_p50_ms": percentile(ours, 50),
        "search_p99_ms": percentile(ours, 99),
        "python_p50_ms": percentile(baseline, 50),
        "python_p99_ms": percentile(baseline, 99),
    }


def prompt_json(session: str, cwd: Path) -> bytes:
    """What Claude Code sends its UserPromptSubmit hook (tests/data/hooks has the documented shape)."""
    return json.dumps(
        {
            "session_id": session,
            "transcript_path": str(cwd / "transcript.jsonl"),
            "cwd": str(cwd),
            "permission_mode": "default",
            "hook_event_name": "UserPromptSubmit",
            "prompt": CONTEXT_PROMPT,
        }
    ).encode()


def context_calls(site: SiteFiles, calls: int) -> dict[str, Any]:
    context = [str(MEMSYNC), "context", "--for", "claude-code", "--config", str(site.config)]
    floor = [sys.executable, "-c", "pass"]
    cwd = site.config.parent
    warmup = subprocess.run(context, input=prompt_json("warmup", cwd), capture_output=True, check=False)
    if warmup.returncode != 0 or not warmup.stdout.strip():
        raise RuntimeError(f"memsync context gave no block: {warmup.stderr.decode(errors='replace')}")
    ours, baseline = [], []
    for i in range(calls):
        ours.append(wall_ms(context, prompt_json(f"bench-{i}", cwd)))
        baseline.append(wall_ms(floor))
    return {
        "context_p50_ms": percentile(ours, 50),
        "context_p99_ms": percentile(ours, 99),
        "context_python_p50_ms": percentile(baseline, 50),
    }


def hook_waits(site: SiteFiles, agent: AgentProcess, calls: int, *, searchable: bool) -> dict[str, Any]:
    flags = ["--wait", "--searchable"] if searchable else ["--wait"]
    waits = []
    for i in range(calls):
        word = f"hookword{int(time.time() * 1000)}x{i}"
        local_id = agent.store(hook_episode(i, f"{word} deploy step {i}"))
        saved = time.perf_counter()
        done = subprocess.run(
            [str(MEMSYNC), "sync", *flags, "--config", str(site.config)], capture_output=True, check=False
        )
        waits.append((time.perf_counter() - saved) * 1000)
        if done.returncode != 0:
            raise RuntimeError(f"sync {' '.join(flags)} exited {done.returncode}: {done.stderr.decode()}")
        if str(local_id) not in {e["sourceId"] for e in hub_episodes(site.hub, site.name)}:
            raise RuntimeError(f"the hook returned before episode {local_id} was in the hub")
        if searchable:
            # BM25 alone, --all: the word is in this episode only, while by meaning the hook
            # episodes are near-twins of each other (collapsed by default, and all equally close).
            reply = subprocess.run(
                [str(MEMSYNC), "search", word, "--mode", "bm25", "--all", "--json", "--config", str(site.config)],
                capture_output=True,
                check=True,
            )
            found = [r["sourceId"] for r in json.loads(reply.stdout)["results"]]
            if found[:1] != [str(local_id)]:
                raise RuntimeError(f"--searchable returned before episode {local_id} was searchable: {found}")
    key = "searchable" if searchable else "wait"
    return {f"{key}_p50_ms": percentile(waits, 50), f"{key}_p99_ms": percentile(waits, 99)}


def repetition(index: int, calls: int, episodes: int) -> dict[str, Any]:
    with workdir(f"hooks-{index}") as root:
        site = make_site(root)
        copy_fixture(episodes, site.agentdb)
        with DaemonProcess(site) as daemon:
            wait_caught_up(site, daemon, episodes, timeout=300)
            wait_indexed(site, daemon, timeout=600)
            record = search_calls(site, calls)
            record |= context_calls(site, calls)
            agent = AgentProcess(site.agentdb)  # the real package, one store (and save) per request
            try:
                record |= hook_waits(site, agent, calls, searchable=False)
                record |= hook_waits(site, agent, calls, searchable=True)
            finally:
                agent.kill()
    return record


def describe_run(r: dict[str, Any]) -> str:
    return (
        f"search p50 {r['search_p50_ms']:.0f} / p99 {r['search_p99_ms']:.0f} ms "
        f"(python -c pass {r['python_p50_ms']:.0f} / {r['python_p99_ms']:.0f}); "
        f"context hook p50 {r['context_p50_ms']:.0f} / p99 {r['context_p99_ms']:.0f} ms "
        f"(python -c pass {r['context_python_p50_ms']:.0f}); "
        f"sync --wait p50 {r['wait_p50_ms']:.0f} / p99 {r['wait_p99_ms']:.0f} ms; "
        f"--searchable p50 {r['searchable_p50_ms']:.0f} / p99 {r['searchable_p99_ms']:.0f} ms"
    )


def run(repetitions: int = 3, calls: int = 30, episodes: int = 1000) -> dict[str, Any]:
    as_installed()
    records = []
    for i in range(repetitions):
        progress(f"hooks: repetition {i + 1}/{repetitions}")
        record = repetition(i, calls, episodes)
        progress(f"  {describe_run(record)}")
        records.append(record)

    def med(key: str) -> float:
        return median([r[key] for r in records])

    figures = [
        at_most("search CLI wall time p50 (daemon running)", med("search_p50_ms"), "ms", TARGET_SEARCH_P50_MS),
        Figure("search CLI wall time p99", med("search_p99_ms"), "ms"),
        Figure("python -c pass p50 (same run)", med("python_p50_ms"), "ms"),
        Figure("search p50 / python -c pass p50", med("search_p50_ms") / med("python_p50_ms"), "x"),
        at_most("context hook wall time p50 (daemon running)", med("context_p50_ms"), "ms", TARGET_CONTEXT_P50_MS),
        Figure("context hook wall time p99", med("context_p99_ms"), "ms"),
        Figure("python -c pass p50 (beside context)", med("context_python_p50_ms"), "ms"),
        Figure("hook sync --wait, save to return, p50", med("wait_p50_ms"), "ms"),
        Figure("hook sync --wait p99", med("wait_p99_ms"), "ms"),
        Figure("hook sync --wait --searchable p50", med("searchable_p50_ms"), "ms"),
        Figure("hook sync --wait --searchable p99", med("searchable_p99_ms"), "ms"),
    ]
    return result("hooks", {"repetitions": repetitions, "calls": calls, "episodes": episodes}, records, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--episodes", type=int, default=1000)
    args = parser.parse_args()
    emit(run(args.repetitions, args.calls, args.episodes))


if __name__ == "__main__":
    main()
