"""The agents a site's episodes name, kept for the registry's heartbeats; which of them a beat
forwards, whether each is online, and what a day of beats costs the backbone."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from conftest import SiteFiles
from convex_fixtures import LocalConvex

from daemon.cli.heartbeat import spool
from daemon.health.fleet import fleet_report
from daemon.hubserver.scheduled import JobContext, mark_stale_agents
from daemon.schedule.beats import Beats
from sync.backbone.base import AgentBeat, AgentState, Backbone, Registry, SiteBeat
from sync.backbone.convex import MAX_AGENT_BEATS, ConvexBackbone
from sync.backbone.hub import HubBackbone
from sync.push.agents import AgentsSeen, agents_due, liveness
from sync.push.sidecar import Sidecar


def test_agents_are_noted_with_their_latest_episode_and_survive_a_restart() -> None:
    seen = AgentsSeen.load(None)
    seen.saw({"agentName": "coder", "agentPlatform": "claude-code", "agentInterface": "cli", "ts": 2000})
    seen.saw({"agentName": "coder", "agentPlatform": "claude-code", "ts": 1000})  # an older edit
    seen.saw({"agentName": None, "ts": 3000})  # names no agent
    assert seen.take_changed()
    assert not seen.take_changed()
    again = AgentsSeen.load(seen.dump())
    assert again.as_dict() == {"coder": {"platform": "claude-code", "interface": "cli", "lastEpisodeAt": 2000}}
    again.saw({"agentName": "coder", "agentPlatform": "claude-code", "agentInterface": "cli", "ts": 2000})
    assert not again.take_changed(), "nothing new: the sidecar is not written"


def test_a_damaged_record_forgets_rather_than_fails() -> None:
    assert AgentsSeen.load("{not json").as_dict() == {}
    assert AgentsSeen.load("[1, 2]").as_dict() == {}


# -- the registry's rules ------------------------------------------------------------------------


def test_an_agent_is_online_while_its_last_sign_of_life_is_at_most_stale_after_old() -> None:
    assert liveness(1_000, 181_000, 180_000) == "online"
    assert liveness(1_000, 181_001, 180_000) == "offline"
    assert liveness(None, 1_000, 180_000) == "offline"


def test_a_beat_forwards_the_agents_with_a_new_episode_or_a_hooks_beat_only() -> None:
    now, day = 10 * 86_400_000, 86_400_000
    seen: dict[str, dict[str, Any]] = {
        "coder": {"platform": "claude-code", "interface": "cli", "lastEpisodeAt": now - 5_000},
        "planner": {"platform": "agentic-flow", "interface": None, "lastEpisodeAt": now - 60_000},
        "cc-sub-old": {"platform": "claude-code", "interface": None, "lastEpisodeAt": now - 31 * day},
        "untimed": {"platform": "x", "interface": None, "lastEpisodeAt": None},
    }
    first = agents_due(seen, None, [], now, 30 * day)  # a daemon's first beat: every agent within the retention
    assert first == [
        AgentBeat("coder", "claude-code", now - 5_000, "cli", now - 5_000),
        AgentBeat("planner", "agentic-flow", now - 60_000, None, now - 60_000),
    ]
    forwarded = {name: agent["lastEpisodeAt"] for name, agent in seen.items()}
    assert agents_due(seen, forwarded, [], now, 30 * day) == [], "nobody showed a sign of life since"
    newer = {**seen, "coder": {**seen["coder"], "lastEpisodeAt": now + 9_000}}  # a clock ahead
    hooks: list[dict[str, Any]] = [
        {"agent": "planner", "platform": "unknown", "interface": "ide", "at": (now - 1_000) / 1000},
        {"agent": "coder", "platform": "claude-code", "at": (now - 2_000) / 1000},
        {"agent": "stray", "platform": "unknown"},  # an old hook's file without a time
    ]
    assert agents_due(newer, forwarded, hooks, now, 30 * day) == [
        AgentBeat("coder", "claude-code", now, "cli", now + 9_000),
        AgentBeat("planner", "agentic-flow", now - 1_000, "ide", None),
        AgentBeat("stray", "unknown", now, None, None),
    ]


# -- one backbone call a beat, whatever the number of agents -------------------------------------


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


def test_the_mark_stale_job_prunes_agents_silent_past_the_configured_retention(
    site_files: Callable[..., SiteFiles], tmp_path: Path
) -> None:
    files = site_files("laptop", extra="[jobs]\nagent_retention_days = 2\n")
    settings = files.settings()
    now_ms, day = int(time.time() * 1000), 86_400_000
    with closing(HubBackbone(tmp_path / "hub.db", "laptop")) as hub:
        beat = SiteBeat("0.1.0", "laptop.lan", 1, None, None, None, 0, 0)
        hub.heartbeat_site(beat, [AgentBeat("gone", "p", now_ms - 2 * day - 1), AgentBeat("kept", "p", now_ms - day)])
        context = JobContext(settings, hub, datetime.fromtimestamp(now_ms / 1000, UTC), now_ms, None)
        summary = mark_stale_agents(context)
        assert summary == "2 agents or sites went offline; 1 agent silent past the retention pruned"
        assert [(a.agent_name, a.status) for a in hub.agents()] == [("kept", "offline")]


def test_more_agents_than_one_convex_call_carries_go_in_as_few_calls_as_fit(local_convex: LocalConvex) -> None:
    site = f"wide-{uuid.uuid4().hex[:8]}"
    transport = CountingTransport()
    now_ms = int(time.time() * 1000)
    with closing(ConvexBackbone(local_convex.url, site, local_convex.register_site(site), transport=transport)) as c:
        beat = SiteBeat("0.1.0", "laptop.lan", 1, None, None, None, 0, 0)
        c.heartbeat_site(beat, [AgentBeat(f"cc-sub-{i:03d}", "p", now_ms) for i in range(MAX_AGENT_BEATS + 50)])
        assert (transport.calls["agents:heartbeatSite"], transport.calls["agents carried"]) == (2, MAX_AGENT_BEATS + 50)
        assert len(c.agents()) == MAX_AGENT_BEATS + 50


def test_the_fleet_lists_offline_agents_with_when_they_were_last_seen() -> None:
    now_ms = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    agents = [
        AgentState("coder", "claude-code", "online", now_ms - 60_000, "laptop"),
        AgentState("cc-sub-1", "claude-code", "online", now_ms - 181_000, "laptop"),  # the sweep has not run yet
    ]
    report = fleet_report([], agents, [], 0, 60.0, now_ms, 180_000)
    assert [(a["agent_name"], a["status"], a["lastSeen"]) for a in report["agents"]] == [
        ("coder", "online", "2025-12-31T23:59:00Z"),
        ("cc-sub-1", "offline", "2025-12-31T23:56:59Z"),
    ]
    assert report["exitCode"] == 0, "agents come and go: an offline one judges nothing"
