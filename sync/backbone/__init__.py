"""Backbones: where every site's episodes meet. See ``base`` for the contract and its roles."""

from sync.backbone.base import (
    AgentState,
    Backbone,
    ChangeFeed,
    Coordination,
    EpisodeSink,
    HealthTransition,
    JobRun,
    Outcome,
    PushItem,
    PushResult,
    SiteBeat,
    SiteCursor,
    SiteState,
    Sweeps,
)

__all__ = [
    "AgentState",
    "Backbone",
    "ChangeFeed",
    "Coordination",
    "EpisodeSink",
    "HealthTransition",
    "JobRun",
    "Outcome",
    "PushItem",
    "PushResult",
    "SiteBeat",
    "SiteCursor",
    "SiteState",
    "Sweeps",
]
