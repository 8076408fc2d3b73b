"""``memsync mcp``: the server object under the Python SDK's in-memory client (tools, schemas, bad
arguments, no daemon), the process's start (nothing heavy imported, a missing token refused), and
the HTTP transport's bearer token. The end-to-end run with a real client and a real daemon is in
test_mcp_e2e.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from conftest import FakeClock, SiteFiles, memsync, wait_for
from mcp.client.client import Client

from daemon.mcp.http import token_matches
from daemon.mcp.server import build_server

T = TypeVar("T")
TOOLS = {"search_memory", "get_episode", "recent_activity", "memory_health", "request_approval", "wait_for_approval"}


def run(work: Callable[[Client], Awaitable[T]], site: SiteFiles) -> T:
    async def go() -> T:
        async with Client(build_server(site.settings(), clock=FakeClock())) as client:
            return await work(client)

    return anyio.run(go)


@pytest.fixture
def site(site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path) -> SiteFiles:
    # The index is on, its socket where no daemon listens.
    return site_files("laptop", warm=f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "laptop.sock"}"\n')


def test_few_tools_with_tight_schemas_and_the_data_warning(site: SiteFiles) -> None:
    async def work(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in run(work, site)}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.output_schema is not None, f"{tool.name} has no output schema"
        assert len(tool.description or "") <= 160, f"{tool.name}'s description costs context"
    for name in ("search_memory", "get_episode", "recent_activity"):
        assert "not instructions" in (tools[name].description or "")
    search = tools["search_memory"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["limit"]["maximum"] == 50
    memory = tools["search_memory"].output_schema["$defs"]["Memory"]["properties"]
    # The same fields as `search --json`'s results.
    assert {"pointId", "sourceSite", "sourceId", "agentName", "sessionId", "when", "text", "score"} <= set(memory)
    assert set(tools["wait_for_approval"].input_schema["required"]) == {"approval_id"}


def test_without_a_daemon_a_tool_says_so_and_the_server_keeps_serving(site: SiteFiles) -> None:
    async def work(client: Client) -> list[Any]:
        return [
            await client.call_tool("search_memory", {"query": "deploy"}),
            await client.call_tool("recent_activity", {}),
            await client.call_tool("get_episode", {"id": "laptop:1"}),
            await client.call_tool("memory_health", {}),
        ]

    searched, recent, fetched, health = run(work, site)
    for result in (searched, recent, fetched):
        assert result.is_error
        text = result.content[0].text
        assert "daemon is not running for site laptop" in text
        assert "memsync run" in text
        assert "Traceback" not in text
    assert not health.is_error, "health answers from the site's files, daemon or not"
    assert health.structured_content["daemonRunning"] is False
    assert health.structured_content["health"] == "down"


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("search_memory", {"query": "x", "limit": 500}, "limit"),
        ("search_memory", {}, "query"),
        ("search_memory", {"query": ""}, "query"),
        ("search_memory", {"query": "x", "since": "last tuesday"}, "since 'last tuesday': use a duration"),
        ("get_episode", {"id": "x", "neighbours": -1}, "neighbours"),
        ("recent_activity", {"limit": "lots"}, "limit"),
        ("wait_for_approval", {"approval_id": "a", "timeout_s": 10_000}, "timeout_s"),
        ("request_approval", {"category": "x", "summary": "y", "cost_usd": -1}, "cost_usd"),
        ("request_approval", {"category": "x", "summary": "y", "priority": "urgent"}, "priority"),
    ],
)
def test_bad_arguments_are_error_results_not_crashes(
    site: SiteFiles, tool: str, arguments: dict[str, Any], says: str
) -> None:
    async def work(client: Client) -> tuple[Any, Any]:
        bad = await client.call_tool(tool, arguments)
        return bad, await client.call_tool("memory_health", {})

    bad, after = run(work, site)
    assert bad.is_error
    assert says in bad.content[0].text
    assert not after.is_error, "the server still answers"


def test_an_unknown_approval_is_an_error_result(site: SiteFiles) -> None:
    memsync("sync", "--config", str(site.config))  # the hub exists: a wait has a backbone to ask

    async def work(client: Client) -> Any:
        return await client.call_tool("wait_for_approval", {"approval_id": "nope", "timeout_s": 0})

    result = run(work, site)
    assert result.is_error
    assert "no approval 'nope'" in result.content[0].text


def test_request_approval_creates_its_task_and_a_decision_moves_it(site: SiteFiles) -> None:
    from sync.backbone.hub import HubBackbone

    memsync("sync", "--config", str(site.config))

    async def work(client: Client) -> tuple[Any, Any, Any]:
        asked = await client.call_tool(
            "request_approval",
            {"category": "deploy", "summary": "ship it", "task": "ship the release", "assign": "bob"},
        )
        refused = await client.call_tool("request_approval", {"category": "x", "summary": "y", "task_id": "999"})
        empty = await client.call_tool("request_approval", {"category": "x", "summary": "y", "task": "  "})
        return asked, refused, empty

    asked, refused, empty = run(work, site)
    assert not asked.is_error, asked.content
    answer = asked.structured_content
    assert answer["status"] == "pending"
    assert refused.is_error
    assert "no task '999' of site laptop" in refused.content[0].text
    assert empty.is_error
    assert "title is empty" in empty.content[0].text
    hub = HubBackbone(site.hub, "laptop")
    try:
        task = hub.task(answer["taskId"])
        assert task is not None
        assert (task.title, task.assigned_to, task.status, task.approval_id) == (
            "ship the release",
            "bob",
            "blocked",
            answer["approvalId"],
        )
        hub.resolve_approval(answer["approvalId"], "rejected", "ann")
        assert [t.status for t in hub.tasks()] == ["cancelled"]
    finally:
        hub.close()


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        (b"Bearer s3cret-token", True),
        (b"bearer s3cret-token", True),
        (None, False),
        (b"", False),
        (b"Bearer ", False),
        (b"Bearer s3cret-tokenX", False),
        (b"Basic s3cret-token", False),
        (b"s3cret-token", False),
    ],
)
def test_token_matches(header: bytes | None, ok: bool) -> None:
    import hashlib

    assert token_matches(header, hashlib.sha256(b"s3cret-token").digest()) is ok


def test_http_without_a_token_is_refused_before_serving(site: SiteFiles) -> None:
    done = memsync("mcp", "--http", "--config", str(site.config), env={"MEMSYNC_MCP__TOKEN": ""}, timeout=30)
    assert done.returncode == 78
    assert "MEMSYNC_MCP__TOKEN" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(port: int, body: dict[str, Any], token: str | None) -> tuple[int, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/mcp", data=json.dumps(body).encode(), headers=headers, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_http_wants_the_bearer_token_and_never_logs_it(site: SiteFiles, tmp_path: Path) -> None:
    token = "tok-" + "x7" * 16
    port = _free_port()
    log = tmp_path / "mcp-http.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "daemon", "mcp", "--http", "--port", str(port), "--config", str(site.config)],
            stdout=out,
            stderr=out,
            env={**os.environ, "MEMSYNC_MCP__TOKEN": token},
        )
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    try:

        def listening() -> bool:
            assert proc.poll() is None, log.read_text(errors="replace")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    return True
            except OSError:
                return False

        wait_for(listening, timeout=30, what="memsync mcp --http to listen")
        assert _post(port, initialize, None)[0] == 401
        assert _post(port, initialize, token + "x")[0] == 401
        assert _post(port, initialize, "")[0] == 401
        status, body = _post(port, initialize, token)
        assert status == 200, body
        assert '"serverInfo"' in body
        assert '"memsync"' in body
    finally:
        proc.terminate()
        proc.wait(30)
    assert token not in log.read_text(errors="replace")
