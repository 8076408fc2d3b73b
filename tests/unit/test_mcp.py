"""``memsync mcp``: the server object under the Python SDK's in-memory client (tools, schemas, bad
arguments, no daemon), the process's start (nothing heavy imported, a missing token refused), and
the HTTP transport's bearer token. The end-to-end run with a real client and a real daemon is in
test_mcp_e2e.py."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from conftest import FakeClock, SiteFiles
from mcp.client.client import Client

from daemon.mcp.http import token_matches
from daemon.mcp.server import build_server
from sync.source.journal.store import Journal

T = TypeVar("T")
TOOLS = {
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
READ_ONLY = {"search_memory", "get_episode", "related", "recent_activity", "memory_health", "wait_for_approval"}


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
    memory = tools["search_memory"].output_schema["properties"]["results"]["items"]["properties"]
    # The same fields as `search --json`'s results.
    assert {"pointId", "sourceSite", "sourceId", "agentName", "sessionId", "when", "text", "score"} <= set(memory)
    assert set(tools["wait_for_approval"].input_schema["required"]) == {"approval_id"}


def test_annotations_say_which_tools_only_read(site: SiteFiles) -> None:
    async def work(client: Client) -> Any:
        return (await client.list_tools()).tools

    for tool in run(work, site):
        assert tool.annotations is not None, f"{tool.name} has no annotations"
        assert tool.annotations.read_only_hint is (tool.name in READ_ONLY), tool.name


def test_without_a_daemon_the_memory_tools_answer_from_this_process(site: SiteFiles) -> None:
    """As ``memsync search`` does (daemon.search_worker.recall): the index opened here."""

    async def work(client: Client) -> list[Any]:
        return [
            await client.call_tool("recent_activity", {}),
            await client.call_tool("get_episode", {"id": "laptop:1"}),
            await client.call_tool("memory_health", {}),
        ]

    recent, fetched, health = run(work, site)
    assert not recent.is_error, recent.content[0].text
    assert recent.structured_content["results"] == []
    assert fetched.is_error
    text = fetched.content[0].text
    assert "no episode 'laptop:1'" in text
    assert "SITE:ID" in text, "the hint names the id forms get_episode takes"
    assert "laptop:m17" in text
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
        ("search_memory", {"query": "x", "outcome": "maybe"}, "outcome"),
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
        return await client.call_tool(
            "search_memory", {"query": "E11000 ZQX_7781_A", "all": False, "outcome": "failure"}
        )

    try:
        result = run(work, site)
    finally:
        thread.join(5)
        server.close()
    assert not result.is_error
    assert asked[0]["request"]["floor"] is None  # the default floor; `all` would ask for 0
    assert asked[0]["request"]["filter"]["outcome"] == "failure"  # the filter memsync search --outcome builds
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
    # What was handed to the agent is noted as a use, under the client's name, for the daemon to send on.
    from sync.usage.fold import read
    from sync.usage.spool import spool_path

    (use,) = list(read(spool_path(site.settings().state_path)))
    assert use is not None
    assert (use.kind, use.keys) == ("mcp_search", (("laptop", "7"),))
    assert use.agent


def test_answers_are_compact_text_beside_the_structured_content(site: SiteFiles) -> None:
    async def work(client: Client) -> Any:
        return await client.call_tool("memory_health", {})

    health = run(work, site)
    text = health.content[0].text
    assert "\n" not in text, "no indented JSON: the same facts in fewer tokens"
    assert json.loads(text) == health.structured_content


def test_save_memory_saves_into_the_journal_attributed_to_the_client(
    site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    site = site_files("laptop", warm="enabled = false\n")

    async def work(client: Client) -> list[Any]:
        return [
            await client.call_tool(
                "save_memory",
                {"content": "pool_size is 20 on prod", "memory_type": "decision", "project": "shop", "tags": ["db"]},
            ),
            await client.call_tool("save_memory", {"content": "Pool_size is 20  on prod"}),
            await client.call_tool("save_memory", {"content": "x", "memory_type": "gossip"}),
            await client.call_tool("save_memory", {"content": "y", "about": "no-colon"}),
        ]

    saved, again, bad_type, bad_about = run(work, site)
    assert not saved.is_error, saved.content[0].text
    assert saved.structured_content["status"] == "saved"
    assert saved.structured_content["id"] == "laptop:m1"
    assert again.structured_content["status"] == "duplicate"
    assert again.structured_content["existing"] == "laptop:m1"
    assert bad_type.is_error
    assert "memory_type" in bad_type.content[0].text
    assert bad_about.is_error
    assert "SITE:ID" in bad_about.content[0].text
    with Journal(site.settings().journal_path) as journal:
        row = journal.get(1)
        assert journal.count() == 1
    assert row is not None
    assert row["agent_name"] == "mcp"  # the SDK's in-memory client's name
    assert json.loads(row["tags"]) == ["db", "project:shop"]
    assert json.loads(row["metadata"])["memory_type"] == "decision"


def test_save_memorys_types_are_the_taxonomys() -> None:
    from typing import get_args

    from daemon.mcp.server import MemoryType
    from sync.source.types import MEMORY_TYPES

    assert get_args(MemoryType) == MEMORY_TYPES, "the tool's schema lists sync.source.types' names, in order"


def test_an_agent_says_a_dream_step_is_wrong_and_it_is_undone(site: SiteFiles) -> None:
    from harness.dream_store import push_items

    from sync.backbone.dreams import CONSOLIDATES, NewStep
    from sync.backbone.hub import HubBackbone

    hub = HubBackbone(site.hub, "laptop")
    try:
        memories = [
            {
                "site": "laptop",
                "id": str(i),
                "text": f"fix {i}",
                "ts_s": 1_735_689_600,
                "agent": "a",
                "success": True,
                "reward": 0.5,
            }
            for i in (1, 2)
        ]
        hub.push(list(push_items(memories)), cursor=2)
        (step,) = hub.record_dream([NewStep(CONSOLIDATES, ("laptop", "1"), (("laptop", "2"),), "2 alike")], run="r")
    finally:
        hub.close()

    async def work(client: Client) -> list[Any]:
        return [
            await client.call_tool("undo_dream_step", {"step_id": step.step_id, "agent": "coder"}),
            await client.call_tool("undo_dream_step", {"step_id": step.step_id}),
        ]

    undone, again = run(work, site)
    assert not undone.is_error
    assert undone.structured_content == {"stepId": step.step_id, "kind": "consolidates", "shown": ["laptop:2"]}
    assert again.is_error
    assert "undone already" in again.content[0].text
    hub = HubBackbone(site.hub, "laptop")
    try:
        (stored,) = hub.dream_steps()
        assert stored.undone_by == "coder (MCP) on laptop"
    finally:
        hub.close()


def test_pin_memory_pins_what_the_backbone_holds_and_says_why_not_otherwise(site: SiteFiles) -> None:
    from sync.backbone.base import PushItem
    from sync.backbone.hub import HubBackbone

    hub = HubBackbone(site.settings().hub_path, "laptop")
    hub.push([PushItem("7", 7, "id7", "c7", {"task": "t"}, b"{}")], cursor=7)
    hub.close()

    async def work(client: Client) -> list[Any]:
        return [
            await client.call_tool("pin_memory", {"id": "laptop:7"}),
            await client.call_tool("pin_memory", {"id": "laptop:404"}),
            await client.call_tool("pin_memory", {"id": "nonsense"}),
            await client.call_tool("pin_memory", {"id": "laptop#7", "pinned": False}),
        ]

    pinned, unknown, nonsense, unpinned = run(work, site)
    assert not pinned.is_error
    assert pinned.structured_content == {"memory": "laptop:7", "pinned": True, "salience": 1.0, "accessCount": 0}
    assert unknown.is_error
    assert "no memory laptop:404" in unknown.content[0].text
    assert nonsense.is_error
    assert "SITE:ID or SITE#ID" in nonsense.content[0].text
    assert unpinned.structured_content["pinned"] is False
    hub = HubBackbone(site.settings().hub_path, "laptop")
    try:
        assert hub.use_totals() == {}
    finally:
        hub.close()
