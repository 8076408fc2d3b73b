"""The Convex backbone: the same contract as the embedded hub, over Convex's HTTP API.

Not the ``convex`` PyPI client: it holds the GIL while it waits, has no timeout and retries network
errors forever (see docs/design/convex.md). This is a plain httpx client with timeouts; retries are
the engine's one policy (``sync.resilience.retry``), driven by how each failure is classified here.

The site authenticates every call with its own secret (never the deployment's deploy key); the
functions in ``cloud_functions/`` check it against a stored hash. The secret is sent in the request
body, never in a URL, and never appears in a log line, an error message or ``status``.

The parts mirror the hub's (``sync.backbone.hub``), one concept each, over one connection
(``connection``): the ``EpisodeSink`` (``episodes``), the ``ChangeFeed`` (``feed``),
``Coordination`` (``coordination``: approvals, over ``registry``, ``jobs``, ``health`` and
``digest``), the ``ColdArchive`` with forgetting (``archive``), ``Links`` (``links``), ``Uses``
(``uses``: the fleet's use of its memories, and pins) and the dream's records (``dreams``), in the
same two rooms as the hub's (``memory``, ``fleet``); ``operator`` is the deploy key's hand, apart.
"""

from __future__ import annotations

from sync.backbone.convex.calls import classify
from sync.backbone.convex.connection import MAX_PAGE
from sync.backbone.convex.fleet.coordination import ConvexCoordination
from sync.backbone.convex.fleet.registry import MAX_AGENT_BEATS
from sync.backbone.convex.memory.archive import ConvexArchive
from sync.backbone.convex.memory.dreams import ConvexDreams
from sync.backbone.convex.memory.episodes import ConvexEpisodes
from sync.backbone.convex.memory.feed import ConvexFeed
from sync.backbone.convex.memory.links import ConvexLinks
from sync.backbone.convex.memory.uses import ConvexUses
from sync.backbone.convex.operator import ConvexOperator


class ConvexBackbone(
    ConvexEpisodes, ConvexFeed, ConvexCoordination, ConvexArchive, ConvexDreams, ConvexUses, ConvexLinks
):
    """``ConvexBackbone(url, site, secret, *, timeout=15.0, transport=None, clock=time.time)``: the
    deployment at ``url``, acting for ``site`` with its secret (``clock``: now, for a Retry-After
    given as a date). It is a ``Backbone``."""

    kind = "convex"


__all__ = ["MAX_AGENT_BEATS", "MAX_PAGE", "ConvexBackbone", "ConvexOperator", "classify"]
