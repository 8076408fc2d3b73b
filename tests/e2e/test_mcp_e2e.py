"""``memsync mcp`` end to end: the official MCP TypeScript SDK's client (npm
``@modelcontextprotocol/sdk``, pinned in tests/mcp_client; no one here wrote it) spawns the server
over stdio, as an agent's MCP configuration does, against a real daemon syncing a real AgentDB
file: initialize, list the tools, then search, fetch an episode, recent activity, health and the
approval pair, with the approval decided from the CLI in between."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from conftest import SiteFiles, memsync, require_node_modules, wait_for, wait_started, warm_section

CLIENT = Path(__file__).parents[1] / "mcp_client"
HEAVY = ("onnxruntime", "numpy", "tokenizers", "qdrant_edge", "qdrant_client", "sync.search.embedders.local")


def drive(site: SiteFiles, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(CLIENT / "client.mjs"), sys.executable, str(site.config), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=Path(__file__).parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answer: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return answer


# Run in its own process: the MCP server's tools through the SDK's in-memory client, then what the
# process imported. A server that loaded a model would miss agents' start-up timeouts.
IN_PROCESS = """
import json, sys, anyio
from pathlib import Path
from mcp.client.client import Client
from daemon.config import load_settings
from daemon.mcp.server import build_server

async def main():
    async with Client(build_server(load_settings(Path(sys.argv[1])))) as client:
        found = await client.call_tool("search_memory", {"query": sys.argv[2], "limit": 2})
        recent = await client.call_tool("recent_activity", {"limit": 2})
        pid = found.structured_content["results"][0]["pointId"]
        episode = await client.call_tool("get_episode", {"id": pid})
        saved = await client.call_tool("save_memory", {"content": "The in-process check saves without a model."})
        return [r.is_error for r in (found, recent, episode, saved)]

errors = anyio.run(main)
print(json.dumps({"errors": errors, "modules": sorted(sys.modules)}))
"""


def test_a_real_mcp_client_drives_every_tool_against_a_real_daemon(
    site_files: Callable[..., SiteFiles],
    make_agentdb: Callable[..., Path],
    short_dir: Path,
    tmp_path: Path,
    daemons: Callable[..., subprocess.Popen[bytes]],
) -> None:
    require_node_modules(CLIENT)
    warm = warm_section(tmp_path, short_dir)
    site = site_files("laptop", make_agentdb(20), warm=warm)
    log = tmp_path / "daemon.log"
    proc = daemons(site.config, log)
    wait_started(site, proc, log)

    everything: list[dict[str, object]] = []

    def indexed() -> bool:
        done = memsync("search", "anything", "--floor", "0", "--json", "-n", "20", "-c", str(site.config))
        if done.returncode == 0:
            everything[:] = json.loads(done.stdout)["results"]
        return len(everything) >= 20

    wait_for(indexed, timeout=120, what="the daemon to index the episodes")
    # A query made of an episode's own words: the search keeps what is relevant to it, not "anything".
    query = " ".join(str(everything[0]["text"]).split()[:8])
    cli = json.loads(memsync("search", query, "--json", "-n", "3", "-c", str(site.config)).stdout)
    assert cli["results"], "the episode's own words find it"

    out = drive(site, query)
    assert out["server"]["name"] == "memsync"
    assert {t["name"] for t in out["tools"]} == {
        "search_memory",
        "get_episode",
        "related",
        "recent_activity",
        "save_memory",
        "memory_health",
        "request_approval",
        "wait_for_approval",
        "undo_dream_step",
        "pin_memory",
    }
    assert all(t["outputSchema"] for t in out["tools"])

    # Search: the same episodes, in the same order, with the same fields as `search --json`.
    results = out["search_memory"]["results"]
    assert [r["pointId"] for r in results] == [r["pointId"] for r in cli["results"]]
    # The MCP answer leaves out what only a program needs (entities, task key, whether the type was
    # given): the same memories in fewer tokens.
    assert set(results[0]) == set(cli["results"][0]) - {"entities", "taskKey", "typeGiven"}
    assert results[0]["text"] == cli["results"][0]["text"]

    # One episode, by the id search gave, with its session's neighbours (same session, time order).
    fetched = out["get_episode"]
    assert fetched["episode"]["pointId"] == results[0]["pointId"]
    session = fetched["episode"]["sessionId"]
    around = [*fetched["before"], fetched["episode"], *fetched["after"]]
    assert all(r["sessionId"] == session for r in around)
    assert [r["ts"] for r in around] == sorted(r["ts"] for r in around)
    # ... and its links: its session's neighbours just before and after it among them (led_to).
    led_to = {link["id"] for link in fetched["links"] if link["kind"] == "led_to"}
    assert led_to == {f"{r['sourceSite']}:{r['sourceId']}" for r in [*fetched["before"][-1:], *fetched["after"][:1]]}
    assert fetched["linksProblem"] is None

    # Recent activity: newest first, as many as asked.
    recent = out["recent_activity"]["results"]
    assert len(recent) == 4
    assert [r["ts"] for r in recent] == sorted((r["ts"] for r in recent), reverse=True)

    health = out["memory_health"]
    assert health["daemonRunning"] is True
    assert health["site"] == "laptop"
    assert health["index"]["enabled"] is True

    assert out["bad_arguments"]["isError"] is True
    assert "limit" in out["bad_arguments"]["text"]

    # The approval pair: asked, still pending after a short wait, approved from a terminal, then seen.
    asked = out["request_approval"]
    assert asked["status"] == "pending"
    assert out["wait_for_approval"] == {"approvalId": asked["approvalId"], "status": "pending", "resolvedBy": None}
    done = memsync("approvals", "approve", asked["approvalId"], "--by", "alice", "-c", str(site.config))
    assert done.returncode == 0, done.stderr
    decided = drive(site, "--wait", asked["approvalId"], "5")["wait_for_approval"]
    assert decided == {"approvalId": asked["approvalId"], "status": "approved", "resolvedBy": "alice"}

    # The server's process never loads a model: the daemon searched, and judged the save's gate.
    done = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(site.config), query],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["errors"] == [False, False, False, False]
    heavy = {m for m in report["modules"] if m.split(".")[0] in HEAVY or m in HEAVY}
    assert not heavy, f"the MCP process imported {sorted(heavy)}"
