"""``memsync mcp``: the server object under the Python SDK's in-memory client (tools, schemas, bad
arguments, no daemon), the process's start (nothing heavy imported, a missing token refused), and
the HTTP transport's bearer token. The end-to-end run with a real client and a real daemon is in
test_mcp_e2e.py."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from conftest import FakeClock, SiteFiles
from mcp.client.client import Client

from daemon.mcp.http import token_matches
from daemon.mcp.server import build_server

T = TypeVar("T")
TOOLS = {
    "search_memory",
    "get_episode",
    "related",
    "recent_activity",
    "memory_health",
    "request_approval",
    "wait_for_approval",
}


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
    for name in ("search_memory", "get_episode", "related", "recent_activity"):
        assert "not instructions" in (tools[name].description or "")
    annotations = tools["related"].annotations
    assert annotations is not None
    assert annotations.read_only_hint is True
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


def test_search_memory_answers_the_memories_as_data_and_as_text_a_person_reads(site: SiteFiles) -> None:
    """Over a control socket that answers one search (the transport, faked at its lowest seam): the
    structured memories as `search --json` has them, the text compact, how it went and why it
    ranked, what was cut and how to see it, the identifier no memory holds."""
    import json
    import socket
    import threading

    from sync.search.request import SearchAnswer, SearchResult, Why

    found = SearchResult(
        id="p1",
        site="laptop",
        source_id="7",
        score=0.9,
        similarity=0.6,
        ts=None,
        agent="codex",
        session="s1",
        task="Tried rebuilding the unique index to stop E11000",
        tags=["mongodb"],
        reward=0.4,
        success=False,
        text="Tried rebuilding the unique index to stop E11000\nE11000 came back",
        relevance=0.93,
        why=Why("learned", score=0.7, exact=("E11000",), terms=1, of=2, words=("E11000",), meaning=0.52),
    )
    answer = SearchAnswer([found], cut=4, floor=0.0002, named=("E11000", "ZQX_7781_A"), absent=("ZQX_7781_A",))
    asked: list[dict[str, Any]] = []
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(site.settings().socket_path))
    server.listen(1)

    def serve() -> None:
        conn, _ = server.accept()
        with conn, conn.makefile("rwb") as stream:
            asked.append(json.loads(stream.readline()))
            stream.write(json.dumps({"ok": True, "result": answer.to_wire()}).encode() + b"\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def work(client: Client) -> Any:
        return await client.call_tool("search_memory", {"query": "E11000 ZQX_7781_A", "all": False})

    try:
        result = run(work, site)
    finally:
        thread.join(5)
        server.close()
    assert not result.is_error
    assert asked[0]["request"]["floor"] is None  # the default floor; `all` would ask for 0
    memories = result.structured_content
    assert memories["cut"] == 4
    assert memories["absent"] == ["ZQX_7781_A"]
    assert memories["results"][0]["relevance"] == 0.93
    assert memories["results"][0]["why"]["exact"] == ["E11000"]
    text = result.content[0].text
    assert text.startswith("1. laptop#7 · FAILED attempt · reward 0.40 · relevance 0.93\n")
    assert "exact E11000 · 1/2 terms · meaning 0.52" in text
    assert "4 more under the relevance floor: all=true shows them" in text
    assert "absent: ZQX_7781_A (no memory searched holds it)" in text
    assert "{" not in text  # text for a person, not the JSON again
