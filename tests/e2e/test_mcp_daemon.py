"""Tier: e2e. `memsync mcp` with a daemon and over HTTP in child processes: approvals through
the tools, and the bearer token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SiteFiles, memsync, wait_for
from mcp.client.client import Client
from test_mcp import run


@pytest.fixture
def site(site_files: Callable[..., SiteFiles], short_dir: Path, tmp_path: Path) -> SiteFiles:
    # The index is on, its socket where no daemon listens.
    return site_files("laptop", warm=f'path = "{tmp_path / "warm"}"\nsocket = "{short_dir / "laptop.sock"}"\n')


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
