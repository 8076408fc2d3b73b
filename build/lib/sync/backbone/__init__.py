"""Backbones: where every site's episodes meet. See ``base`` for the contract."""

from sync.backbone.base import Backbone, Outcome, PushItem, PushResult, SiteCursor

__all__ = ["Backbone", "Outcome", "PushItem", "PushResult", "SiteCursor"]
