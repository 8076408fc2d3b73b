"""Tier: e2e. The agents a site has seen, on both backbones (the hub and the local Convex): how many
backbone calls a busy day costs."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from conftest import SiteFiles
from convex_fixtures import LocalConvex

from daemon.cli.heartbeat import spool
from daemon.schedule.beats import Beats
from sync.agents import AgentsSeen, liveness
from sync.backbone.base import AgentBeat, Backbone, Registry, SiteBeat
from sync.backbone.convex import MAX_AGENT_BEATS, ConvexBackbone
from sync.backbone.hub import HubBackbone
from sync.sidecar import Sidecar


def beat_calls(calls: Counter[str]) -> int:
    """The registry's writes: an agent's or a site's heartbeat (reads are the test's own)."""
    return sum(n for call, n in calls.items() if "heartbeat" in call)


class CountingTransport(httpx.BaseTransport):
    """Convex's HTTP API, each request counted: the lowest seam under the Convex client."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.calls: Counter[str] = Counter()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.calls[body["path"]] += 1
        self.calls["agents carried"] += len(body["args"].get("agents", []))
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


class CountingRegistry:
    """The hub's registry writes, counted at the Backbone interface."""

    def __init__(self, hub: HubBackbone) -> None:
        self.hub = hub
        self.calls: Counter[str] = Counter()

    def heartbeat(self, *args: Any) -> None:
        self.calls["heartbeat"] += 1
        self.hub.heartbeat(*args)

    def heartbeat_site(self, beat: SiteBeat, agents: Sequence[AgentBeat] = ()) -> None:
        self.calls["heartbeat_site"] += 1
        self.calls["agents carried"] += len(agents)
        self.hub.heartbeat_site(beat, agents)


@pytest.mark.parametrize("kind", ["local", "convex"])
def test_a_hundred_agents_seen_in_a_day_cost_one_backbone_call_a_minute(
    kind: str, site_files: Callable[..., SiteFiles], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    files = site_files(f"laptop-{uuid.uuid4().hex[:8]}")
    settings = files.settings()
    stale_after_ms = int(settings.jobs.stale_after * 1000)
    backbone: Backbone
    if kind == "local":
        backbone = HubBackbone(tmp_path / "hub.db", files.name)
        counting = CountingRegistry(backbone)
        calls, coordination = counting.calls, cast(Registry, counting)
    else:
        convex: LocalConvex = request.getfixturevalue("local_convex")
        transport = CountingTransport()
        backbone = ConvexBackbone(convex.url, files.name, convex.register_site(files.name), transport=transport)
        calls, coordination = transport.calls, backbone
    day_start = int(time.time()) // 60 * 60 - 86_400  # a day that ended a minute ago: seen never after now
    names = [f"cc-sub-{i:03d}" for i in range(100)]
    episode_at = {14 * i + 3: name for i, name in enumerate(names)}  # each agent writes one episode
    hook_at = {14 * i + 5: name for i, name in enumerate(names)} | {1438: names[-1]}  # and its hook beats
    seen = AgentsSeen.load(None)
    sidecar = Sidecar(settings.state_path)
    now = [float(day_start)]
    beats = Beats(settings, coordination, clock=lambda: now[0])
    try:
        for minute in range(1440):
            now[0] = day_start + minute * 60 + 30
            if minute in episode_at:
                ts = (day_start + minute * 60) * 1000 + 10_000
                seen.saw({"agentName": episode_at[minute], "agentPlatform": "claude-code", "ts": ts})
                sidecar.set_many({"agents_seen": seen.dump()})
            if minute in hook_at:
                spool(settings.state_path, hook_at[minute], "claude-code", "cli", day_start + minute * 60 + 20)
            beats.beat()
        assert beat_calls(calls) == 1440, f"one call a beat, not {dict(calls)}"
        assert calls["agents carried"] == 100 + 101, "each agent only when it showed a sign of life"

        registry = {a.agent_name: a for a in backbone.agents()}
        assert sorted(registry) == names
        for i, name in enumerate(names[:-1]):
            assert registry[name].last_heartbeat == (day_start + (14 * i + 5) * 60 + 20) * 1000, name
            assert registry[name].last_episode_at == (day_start + (14 * i + 3) * 60) * 1000 + 10_000, name
        now_ms = int(now[0] * 1000)
        status = {n: liveness(a.last_heartbeat, now_ms, stale_after_ms) for n, a in registry.items()}
        assert [n for n, s in status.items() if s == "online"] == [names[-1]], "silent past stale_after: offline"
        (site,) = [s for s in backbone.sites() if s.site == files.name]
        assert site.online, "while its daemon runs"

        # A restarted daemon's first beat tells the registry every agent again, still in one call,
        # and an older sign of life moves nobody's last seen.
        Beats(settings, coordination, clock=lambda: now[0]).beat()
        assert beat_calls(calls) == 1441
        assert {a.agent_name: a.last_heartbeat for a in backbone.agents()} == {
            n: a.last_heartbeat for n, a in registry.items()
        }
    finally:
        sidecar.close()
        backbone.close()


def test_more_agents_than_one_convex_call_carries_go_in_as_few_calls_as_fit(local_convex: LocalConvex) -> None:
    site = f"wide-{uuid.uuid4().hex[:8]}"
    transport = CountingTransport()
    now_ms = int(time.time() * 1000)
    with closing(ConvexBackbone(local_convex.url, site, local_convex.register_site(site), transport=transport)) as c:
        beat = SiteBeat("0.1.0", "laptop.lan", 1, None, None, None, 0, 0)
        c.heartbeat_site(beat, [AgentBeat(f"cc-sub-{i:03d}", "p", now_ms) for i in range(MAX_AGENT_BEATS + 50)])
        assert (transport.calls["agents:heartbeatSite"], transport.calls["agents carried"]) == (2, MAX_AGENT_BEATS + 50)
        assert len(c.agents()) == MAX_AGENT_BEATS + 50
