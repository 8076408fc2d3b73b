"""``save_memory`` as an agent's MCP client sees it, and what the MCP answers cost its context.

- **Save round trip**: in one MCP session (the Python SDK's client spawning ``memsync mcp`` over
  stdio, as an agent does), ``save_memory`` of a new memory through a running daemon whose index
  holds ``--episodes`` episodes: the gate's search through the daemon's socket, then the journal's
  committed write. ``--saves`` times.
- **Saved to searchable**: from the call to the memory found by a search of the word only it holds
  (the daemon's socket, polled every 10 ms): the journal's pass, the push, the index.
- **Compact text**: for the memory tools' answers (recent activity, an episode, health), the
  characters and the tokens (a tokenizer-free estimate: a space joins the word after it, a line
  break with its indentation is one token) of the text memsync sends beside the structured
  content, against the SDK's default text (the same content as indented JSON).

    python -m bench.remember [--repetitions 3] [--saves 50] [--episodes 1000]
"""

from __future__ import annotations

import argparse
import re
import time
from typing import Any

import anyio
import pydantic_core

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

TARGET_FOUND_P50_MS = 2000.0
# A tokenizer-free estimate shaped like a BPE tokenizer's: a space joins the word or mark after it,
# a line break with its indentation is a token of its own.
_TOKEN = re.compile(r"\n[ \t]*| ?\w+| ?[^\w\s]|[ \t]+")


def _client(site: SiteFiles) -> Any:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    return Client(StdioServerParameters(command=str(MEMSYNC), args=["mcp", "--config", str(site.config)]))


def tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


async def session(site: SiteFiles, saves: int) -> dict[str, Any]:
    from daemon.control.client import ControlClient
    from sync.search.request import SearchRequest

    control = ControlClient(site.settings().socket_path)
    saved_ms, found_ms = [], []
    compact_chars = pretty_chars = compact_tokens = pretty_tokens = 0
    async with _client(site) as client:
        for i in range(saves + 1):
            word = f"BENCHKEY_{i}_{time.monotonic_ns() % 1_000_000}"
            content = f"Saved fact {i}: the cache warmer must skip {word} on deploys (measured {i} ms)."
            started = time.perf_counter()
            answer = await client.call_tool("save_memory", {"content": content, "memory_type": "learning"})
            took = (time.perf_counter() - started) * 1000
            if answer.is_error or answer.structured_content["status"] not in ("saved", "updated"):
                raise RuntimeError(f"save_memory did not save: {answer.content}")
            key = answer.structured_content["id"].split(":")[1]
            request = SearchRequest(query=word, limit=3, collapse=False, floor=0.0)
            while not any(r.source_id == key for r in control.search(request)):
                if time.perf_counter() - started > 60:
                    raise RuntimeError(f"{key} not searchable within 60 s")
                await anyio.sleep(0.01)
            found = (time.perf_counter() - started) * 1000
            if i:  # the first loads what an idle worker let go
                saved_ms.append(took)
                found_ms.append(found)
        for name, args in (
            ("recent_activity", {"limit": 10}),
            ("get_episode", {"id": f"{site.name}:1", "neighbours": 3}),
            ("memory_health", {}),
        ):
            answer = await client.call_tool(name, args)
            if answer.is_error:
                raise RuntimeError(f"{name} failed: {answer.content}")
            ours = "".join(c.text for c in answer.content if c.type == "text")
            default = pydantic_core.to_json(answer.structured_content, fallback=str, indent=2).decode()
            compact_chars += len(ours)
            pretty_chars += len(default)
            compact_tokens += tokens(ours)
            pretty_tokens += tokens(default)
    return {
        "save_p50_ms": percentile(saved_ms, 50),
        "save_p99_ms": percentile(saved_ms, 99),
        "found_p50_ms": percentile(found_ms, 50),
        "found_p99_ms": percentile(found_ms, 99),
        "compact_chars": compact_chars,
        "pretty_chars": pretty_chars,
        "compact_tokens": compact_tokens,
        "pretty_tokens": pretty_tokens,
    }


def repetition(index: int, saves: int, episodes: int) -> dict[str, Any]:
    with workdir(f"remember-{index}") as root:
        site = make_site(root)
        copy_fixture(episodes, site.agentdb)
        with DaemonProcess(site) as daemon:
            wait_caught_up(site, daemon, episodes, timeout=300)
            wait_indexed(site, daemon, timeout=600)
            return anyio.run(session, site, saves)


def describe_run(r: dict[str, Any]) -> str:
    return (
        f"save p50 {r['save_p50_ms']:.0f} / p99 {r['save_p99_ms']:.0f} ms; "
        f"searchable p50 {r['found_p50_ms']:.0f} / p99 {r['found_p99_ms']:.0f} ms; "
        f"text {r['compact_chars']} vs {r['pretty_chars']} chars ({r['compact_tokens']} vs {r['pretty_tokens']} tokens)"
    )


def run(repetitions: int = 3, saves: int = 50, episodes: int = 1000) -> dict[str, Any]:
    as_installed()
    records = []
    for i in range(repetitions):
        progress(f"remember: repetition {i + 1}/{repetitions}")
        record = repetition(i, saves, episodes)
        progress(f"  {describe_run(record)}")
        records.append(record)

    def med(key: str) -> float:
        return median([r[key] for r in records])

    figures = [
        Figure("save_memory round trip p50 (daemon running)", med("save_p50_ms"), "ms"),
        Figure("save_memory round trip p99", med("save_p99_ms"), "ms"),
        at_most("saved to searchable p50 (from the call)", med("found_p50_ms"), "ms", TARGET_FOUND_P50_MS),
        Figure("saved to searchable p99", med("found_p99_ms"), "ms"),
        Figure(
            "MCP answers' text, compact vs the SDK's indented JSON (characters)",
            100 * med("compact_chars") / med("pretty_chars"),
            "%",
        ),
        Figure(
            "MCP answers' text, compact vs indented (tokens, estimated)",
            100 * med("compact_tokens") / med("pretty_tokens"),
            "%",
        ),
    ]
    params = {"repetitions": repetitions, "saves": saves, "episodes": episodes}
    return result("remember", params, records, figures)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--saves", type=int, default=50)
    parser.add_argument("--episodes", type=int, default=1000)
    args = parser.parse_args()
    emit(run(args.repetitions, args.saves, args.episodes))


if __name__ == "__main__":
    main()
