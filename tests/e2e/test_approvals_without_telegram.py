"""Tier: e2e.

An approval asked for with Telegram off waits where no reviewer will see it: `memsync approval
request` (a hook) and the MCP server's `request_approval` (the official SDK's client, in memory)
say so, and what a person must run, instead of leaving the agent to wait out the expiry silently."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from conftest import FakeClock, SiteFiles, memsync
from mcp.client.client import Client

from daemon.mcp.server import build_server

NOTE = re.compile(
    r"no reviewer will hear of approval (\S+): Telegram is off on this site \(set telegram\.chat_id and "
    r"MEMSYNC_TELEGRAM__BOT_TOKEN to have it sent\); a person must run `memsync approvals approve \1` \(or "
    r"`memsync approvals reject \1`\) before it expires at \d{4}-\d\d-\d\d \d\d:\d\d UTC"
)


def test_a_request_with_no_reviewer_channel_says_what_to_run(
    site_files: Callable[..., SiteFiles], make_agentdb: Callable[..., Path]
) -> None:
    site = site_files(agentdb=make_agentdb(2))
    assert memsync("sync", "--config", str(site.config)).returncode == 0

    asked = memsync("approval", "request", "--category", "deploy", "--summary", "ship it", "-c", str(site.config))
    assert asked.returncode == 0, asked.stderr
    approval_id = asked.stdout.strip()
    found = NOTE.search(" ".join(asked.stderr.split()))
    assert found is not None, asked.stderr
    assert found.group(1) == approval_id

    async def go() -> Any:
        async with Client(build_server(site.settings(), clock=FakeClock())) as client:
            return await client.call_tool("request_approval", {"category": "deploy", "summary": "ship it again"})

    answer = anyio.run(go)
    assert not answer.is_error, answer.content
    said = answer.structured_content
    assert said["status"] == "pending"
    assert NOTE.fullmatch(said["note"]), said
    assert said["approvalId"] in said["note"]

    # A category the policy approves at once needs no one: nothing to say.
    policy = memsync("approval", "request", "--category", "internal", "--summary", "tidy", "-c", str(site.config))
    assert policy.returncode == 0, policy.stderr
    assert "approved by policy" in policy.stderr, policy.stderr
    assert "no reviewer" not in policy.stderr
