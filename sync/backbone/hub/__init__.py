"""The embedded hub: a SQLite file in WAL mode that several sites on one machine share.

It is the default backbone (no cloud account needed) and what ``memsync demo`` runs on. It keeps
the contract in ``sync.backbone.base`` with the same per-row outcomes as the Convex functions.
Each site opens its own ``HubBackbone`` on the shared file; one object acts for one site.

The parts, one concept each, over one connection (``connection``): the tables and their
migrations (``schema``), the ``EpisodeSink`` (``episodes``, with the archiving sweep), the
``ChangeFeed`` (``feed``) and ``Coordination`` (``coordination``: approvals and forgetting, over the
registry in ``registry``, job leases and runs in ``jobs``, sync health in ``health`` and the daily
digest in ``digest``), the dream cycle's records (``dreams``), ``Links`` (``links``:
explicit links stored, derived ones computed when asked) and ``Uses`` (``uses``: the fleet's use
of its memories, and pins), with the periodic sweeps (``Sweeps``) that Convex runs as crons. The
roles live in two rooms: ``memory`` (episodes, feed, archive, links, uses, dreams) and ``fleet``
(coordination, registry, jobs, health, digest, tasks).
"""

from __future__ import annotations

from sync.backbone.hub.fleet.coordination import HubCoordination
from sync.backbone.hub.memory.archive import HubArchive
from sync.backbone.hub.memory.dreams import HubDreams
from sync.backbone.hub.memory.episodes import HubEpisodes
from sync.backbone.hub.memory.feed import HubFeed
from sync.backbone.hub.memory.links import HubLinks
from sync.backbone.hub.memory.uses import HubUses


class HubBackbone(HubEpisodes, HubFeed, HubCoordination, HubArchive, HubDreams, HubUses, HubLinks):
    """``HubBackbone(path, site, *, busy_timeout_ms=5000, create=True, clock=current_ms)``: the hub file at ``path``,
    acting for ``site``. ``create=False`` opens an existing hub without writing to it (status,
    export). It is a ``Backbone``, ``Sweeps``, ``ColdArchive`` and ``Dreams``."""

    kind = "local"


__all__ = ["HubBackbone"]
