"""The agents a site's episodes name, kept for the registry's heartbeats; which of them a beat
forwards, whether each is online, and what a day of beats costs the backbone."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conftest import SiteFiles

from daemon.fleet import fleet_report
from daemon.hubserver.scheduled import JobContext, mark_stale_agents
from sync.agents import AgentsSeen, agents_due, liveness
from sync.backbone.base import AgentBeat, AgentState, SiteBeat
from sync.backbone.hub import HubBackbone


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
