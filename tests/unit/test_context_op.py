"""Tier: unit. The control socket's ``context`` op: its wire (daemon.context.wire), the daemon's
composition (daemon.context.answer.compose_reply) and the hook's client (daemon.usecases.memory
.context.context_block) against a real ControlServer on a Unix socket: a daemon with the op and one
older than it give the hook the same block, the same stdout and the same memories to note as used."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from test_context_compose import episode, result

from daemon.context.answer import Memories, compose_reply, context_requests
from daemon.context.hook import CAPS, render
from daemon.context.wire import BlockAsk, BlockReply
from daemon.control.client import Progress
from daemon.control.server import ControlServer, listen
from daemon.usecases.memory.context import context_block
from sync.errors import ControlError
from sync.search.request import RecentRequest, SearchRequest

ASK = BlockAsk(
    "the web build dies with exit code 137 during npm ci",
    limit=12,
    budget=4_000,
    project="web",
    tool="claude-code",
    event="UserPromptSubmit",
)


def found() -> Memories:
    answer = episode(
        1,
        "npm ci dies with exit code 137 in the web build",
        "after the React 19 upgrade",
        "Exit 137 = OOM in the container",
        "raised Docker Desktop memory to 6 GB and added --max-old-space-size=2048",
        site="laptop",
        source_id="41",
    )
    noise = [result(10 + i, f"rotated the key of service {i}", relevance=0.02) for i in range(4)]
    latest = [result(30, "web: upgraded React to 19", site="vm", source_id="7", session="s-latest", relevance=None)]
    return Memories([answer, *noise], latest)


def test_the_wire_round_trips_both_ways() -> None:
    ask = BlockAsk("q", limit=3, budget=100, project="p", types=("decision",), start=True, exclude=("a", "b"))
    assert BlockAsk.from_wire(json.loads(json.dumps(ask.to_wire()))) == ask
    reply = BlockReply("block", "{}\n", ("p1",), (("laptop", "41"),), "no recent op")
    assert BlockReply.from_wire(json.loads(json.dumps(reply.to_wire()))) == reply


@pytest.mark.parametrize(
    ("wire", "problem"),
    [
        ({"limit": 3, "budget": 10}, "needs a query"),
        ({"query": "  ", "limit": 3, "budget": 10}, "needs a query"),
        ({"query": "q", "limit": 0, "budget": 10}, "limit must be a positive whole number"),
        ({"query": "q", "limit": 3, "budget": "10"}, "budget must be a positive whole number"),
        ({"query": "q", "limit": True, "budget": 10}, "limit must be a positive whole number"),
    ],
)
def test_a_malformed_request_names_its_field(wire: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        BlockAsk.from_wire(wire)


def test_an_answer_that_is_not_a_block_is_refused() -> None:
    wires: list[Any] = [None, [], {"out": ""}, {"text": 3}]
    for wire in wires:
        with pytest.raises(ValueError, match="not a block"):
            BlockReply.from_wire(wire)


def test_the_reply_is_the_tools_stdout_for_the_block_and_names_what_it_hands() -> None:
    memories = found()
    reply = compose_reply(memories, ASK)
    assert "--max-old-space-size=2048" in reply.text  # the answer whole, its fix included
    assert "rotated the key" not in reply.text  # under the floor: left out
    assert reply.out == render("claude-code", "UserPromptSubmit", reply.text)
    assert len(reply.out) <= CAPS["claude-code"]
    assert ("laptop", "41") in reply.handed
    assert len(reply.handed) == len(reply.ids)
    by_hand = compose_reply(memories, BlockAsk(ASK.query, limit=12, budget=4_000, project="web"))
    assert (by_hand.text, by_hand.out) == (reply.text, "")


def test_a_block_too_small_for_any_memory_gives_the_tools_empty_answer() -> None:
    for tool, empty in (("claude-code", ""), ("gemini", "{}\n")):
        ask = BlockAsk(ASK.query, limit=12, budget=20, tool=tool, event="x")
        reply = compose_reply(found(), ask)
        assert (reply.text, reply.out, reply.ids, reply.handed) == ("", empty, (), ())


def test_what_the_session_was_given_is_left_out() -> None:
    first = compose_reply(found(), ASK)
    again = compose_reply(found(), BlockAsk(**{**_fields(ASK), "exclude": first.ids}))
    assert not set(first.ids) & set(again.ids)


def _fields(ask: BlockAsk) -> dict[str, Any]:
    return {name: getattr(ask, name) for name in ask.__slots__}


def _serving(path: Path, handlers: Mapping[str, Any]) -> ControlServer:
    return ControlServer(listen(path), handlers).start()


def test_a_daemon_with_the_op_and_one_older_give_the_same_block(short_dir: Path) -> None:
    memories = found()
    search, recent = context_requests(ASK.query, limit=ASK.limit, project=ASK.project)
    assert recent is not None
    asked: list[str] = []

    def do_search(request: Mapping[str, Any], _progress: Progress) -> Any:
        asked.append("search")
        assert SearchRequest.from_wire(request["request"]).query == search.query
        return {"results": [r.to_wire() for r in memories.found]}

    def do_recent(request: Mapping[str, Any], _progress: Progress) -> Any:
        asked.append("recent")
        assert RecentRequest.from_wire(request["request"]).filter.tags == ("project:web",)
        return [r.to_wire() for r in memories.recent]

    def do_context(request: Mapping[str, Any], _progress: Progress) -> Any:
        asked.append("context")
        return compose_reply(memories, BlockAsk.from_wire(request["request"])).to_wire()

    newer, older = short_dir / "new.sock", short_dir / "old.sock"
    servers = [_serving(newer, {"context": do_context}), _serving(older, {"search": do_search, "recent": do_recent})]
    try:
        one_trip = context_block(newer, ASK, deadline=time.monotonic() + 30)
        assert asked == ["context"]
        two_trips = context_block(older, ASK, deadline=time.monotonic() + 30)
        # A prompt's block has no latest sessions: the older daemon is not asked for them.
        assert asked == ["context", "search"]
        starting = BlockAsk(**{**_fields(ASK), "start": True})
        first = context_block(newer, starting, deadline=time.monotonic() + 30)
        asked.clear()
        first_two_trips = context_block(older, starting, deadline=time.monotonic() + 30)
        assert asked == ["search", "recent"]
    finally:
        for server in servers:
            server.close()
    assert one_trip == two_trips
    assert first == first_two_trips
    assert "upgraded React to 19" in first.text  # the project's latest session, at a start only
    assert "upgraded React to 19" not in one_trip.text
    assert one_trip.text
    assert ("laptop", "41") in one_trip.handed


def test_a_refusal_of_the_op_is_the_daemons_error_not_a_fallback(short_dir: Path) -> None:
    def refuse(_request: Mapping[str, Any], _progress: Progress) -> Any:
        raise ValueError("unknown memory type 'x'")

    path = short_dir / "refuses.sock"
    server = _serving(path, {"context": refuse})
    try:
        with pytest.raises(ControlError, match="unknown memory type"):
            context_block(path, ASK, deadline=time.monotonic() + 30)
    finally:
        server.close()
