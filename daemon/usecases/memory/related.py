"""A memory's neighbours (the context mesh), with the reason for each link: what ``memsync
related``, the MCP ``related`` tool and ``get_episode`` show. The backbone answers
(``sync.backbone.base.Links``): explicit links it stores, derived ones it computes when asked
(``sync.policy.links``). No daemon is needed: it reads the backbone, as ``export`` does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from daemon.site import opened_backbone
from sync.policy.links import EpisodeRef, Link

if TYPE_CHECKING:
    from daemon.config import Settings

DEFAULT_LIMIT: Final = 20
MAX_LIMIT: Final = 200


class BadKey(ValueError):
    """An id that names no episode's key."""


@dataclass(frozen=True, slots=True)
class Related:
    """An episode's key and its neighbours, ranked (explicit links first, then the nearest)."""

    key: EpisodeRef
    links: list[Link]

    def to_wire(self) -> dict[str, Any]:
        """As ``related --json`` prints it and the MCP tool returns it."""
        return {"id": str(self.key), "links": [link_wire(link) for link in self.links]}


def link_wire(link: Link) -> dict[str, Any]:
    return {
        "id": str(link.other),
        "kind": link.kind,
        "direction": link.direction,
        "reason": link.reason,
        "task": link.task,
        "ts": link.ts,
        "shared": list(link.shared),
    }


def parse_key(text: str, site: str) -> EpisodeRef:
    """``SITE:ID``, or a bare ``ID`` of ``site`` (this site's)."""
    text = text.strip()
    if not text:
        raise BadKey("give an episode's id: SITE:ID (as search shows it), or this site's ID")
    found = EpisodeRef.parse(text)
    if found is not None:
        return found
    if ":" in text:
        raise BadKey(f"{text!r} is not SITE:ID: give the site, a colon and the episode's id, e.g. laptop:12")
    return EpisodeRef(site, text)


def related(settings: Settings, key: str, limit: int = DEFAULT_LIMIT) -> Related:
    """The neighbours of the episode ``key`` names (``parse_key``), at most ``limit`` (1..200).
    Raises ``BadKey`` for an id of no key's shape, ``BackboneNotFound`` for a key the backbone does
    not hold, ``NeverSynced`` when the embedded hub was never created."""
    if not 1 <= limit <= MAX_LIMIT:
        raise BadKey(f"limit must be from 1 to {MAX_LIMIT}, not {limit}")
    ref = parse_key(key, settings.site.name)
    with opened_backbone(settings, existing=True) as backbone:
        return Related(ref, backbone.related(ref.site, ref.source_id, limit))
