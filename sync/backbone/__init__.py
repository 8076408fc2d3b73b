"""Backbones: where every site's episodes meet. See ``base`` for the contract and its roles."""

from sync.backbone.base import (
    Backbone,
    ChangeFeed,
    Coordination,
    EpisodeSink,
    Outcome,
    PushItem,
    PushResult,
    SiteCursor,
)

__all__ = [
    "Backbone",
    "ChangeFeed",
    "Coordination",
    "EpisodeSink",
    "Outcome",
    "PushItem",
    "PushResult",
    "SiteCursor",
]
