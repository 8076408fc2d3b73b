"""Tier: unit. ``memsync related`` and the MCP ``related`` tool over a real embedded hub in a tmp
dir, in this process: the use case (``daemon.usecases.memory.related``: ids, limits, a key not held, a
hub never created), the command's text and JSON, and the tool's answer under the SDK's in-memory
client."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from contextlib import closing
from typing import Any

import anyio
import pytest
from conftest import FakeClock, SiteFiles
from harness.hub import push_episode
from mcp.client.client import Client

from daemon.cli.app import parser
from daemon.cli.common import Exit
from daemon.cli.episodes.related import render
from daemon.mcp.server import build_server
from daemon.site import NeverSynced
from daemon.usecases.memory.related import BadKey, parse_key, related
from sync.backbone.hub import HubBackbone
from sync.errors import BackboneNotFound
from sync.policy.links import EpisodeRef, StoredLink

TS = 1_790_000_000_000


@pytest.fixture
def site(site_files: Callable[..., SiteFiles]) -> SiteFiles:
    """laptop: 1, 2, 3 in session s1 (2 and 3 the same task), and 3 a near-duplicate of 1."""
    site = site_files()
    with closing(HubBackbone(site.hub, "laptop")) as hub:
        push_episode(hub, "1", task="read the logs", ts=TS)
        push_episode(hub, "2", task="fix the login bug", ts=TS + 1000)
        push_episode(hub, "3", task="Fix the login bug.", ts=TS + 2000)
        hub.add_links([StoredLink(EpisodeRef("laptop", "3"), EpisodeRef("laptop", "1"), "similar_to")])
    return site


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("laptop:12", EpisodeRef("laptop", "12")),
        ("12~1", EpisodeRef("here", "12~1")),
        (" vm:m3 ", EpisodeRef("vm", "m3")),
    ],
)
def test_an_id_is_site_colon_id_or_this_site_s(text: str, key: EpisodeRef) -> None:
    assert parse_key(text, "here") == key


@pytest.mark.parametrize(("text", "says"), [("", "give an episode's id"), ("laptop:", "is not SITE:ID")])
def test_an_id_of_no_key_s_shape_is_one_sentence(text: str, says: str) -> None:
    with pytest.raises(BadKey, match=says):
        parse_key(text, "here")


def test_the_neighbours_of_an_episode_with_why(site: SiteFiles) -> None:
    found = related(site.settings(), "3")
    assert found.key == EpisodeRef("laptop", "3")
    assert [(x.kind, str(x.other), x.direction, x.reason) for x in found.links] == [
        ("similar_to", "laptop:1", "out", "a near-duplicate of it"),
        ("led_to", "laptop:2", "in", "came just before it in its session"),
        ("evolved_from", "laptop:2", "out", "an earlier try of the same task"),
    ]
    assert len(related(site.settings(), "laptop:3", limit=1).links) == 1
    with pytest.raises(BackboneNotFound, match="no episode laptop:9"):
        related(site.settings(), "9")
    with pytest.raises(BadKey, match="limit"):
        related(site.settings(), "3", limit=0)


def test_a_hub_never_created_is_said_and_not_created(site_files: Callable[..., SiteFiles]) -> None:
    fresh = site_files()
    with pytest.raises(NeverSynced):
        related(fresh.settings(), "1")
    assert not fresh.hub.exists()


def test_the_command_prints_each_link_or_json(site: SiteFiles, capsys: pytest.CaptureFixture[str]) -> None:
    text = io.StringIO()
    render(related(site.settings(), "2"), text)
    assert text.getvalue().splitlines() == [
        "laptop:2: 3 related",
        "  led_to       <- laptop:1  came just before it in its session: read the logs",
        "  led_to       -> laptop:3  came next in its session: Fix the login bug.",
        "  evolved_from <- laptop:3  a later try of the same task: Fix the login bug.",
    ]
    args = parser().parse_args(["related", "-c", str(site.config), "laptop:1", "--json", "--limit", "5"])
    assert args.run(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["id"] == "laptop:1"
    assert out["links"][0] == {
        "id": "laptop:3",
        "kind": "similar_to",
        "direction": "in",
        "reason": "a near-duplicate of it",
        "task": "Fix the login bug.",
        "ts": TS + 2000,
        "shared": [],
    }
    args = parser().parse_args(["related", "-c", str(site.config), "nowhere:"])
    with pytest.raises(Exit) as exited:
        args.run(args)
    assert exited.value.code == 2
    assert "is not SITE:ID" in capsys.readouterr().err
    args = parser().parse_args(["related", "-c", str(site.config), "9"])
    with pytest.raises(Exit) as exited:
        args.run(args)
    assert exited.value.code == 1
    assert "no episode laptop:9" in capsys.readouterr().err


def test_the_mcp_tool_answers_the_links_as_data(site: SiteFiles) -> None:
    async def work() -> tuple[Any, Any]:
        async with Client(build_server(site.settings(), clock=FakeClock())) as client:
            return (
                await client.call_tool("related", {"id": "laptop:3", "limit": 2}),
                await client.call_tool("related", {"id": "laptop:404"}),
            )

    found, missing = anyio.run(work)
    assert not found.is_error
    assert found.structured_content["id"] == "laptop:3"
    assert [(x["kind"], x["id"]) for x in found.structured_content["links"]] == [
        ("similar_to", "laptop:1"),
        ("led_to", "laptop:2"),
    ]
    assert missing.is_error
    assert "no episode laptop:404" in missing.content[0].text
