"""The agents a site's episodes name, kept for the registry's heartbeats."""

from __future__ import annotations

from sync.agents import AgentsSeen


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
