"""The backbone's episodes as they are held: oldest first, in the backbone's camelCase fields (the
names ``search --json`` uses); with ``archived``, those the cleanup job moved to the cold archive
after the hot ones. ``since_ms`` and ``limit`` cut it down (the hub applies ``since_ms`` in its
query; the reading stops once ``limit`` episodes are out)."""

from __future__ import annotations

from collections.abc import Generator, Sequence
from itertools import chain, islice
from typing import TYPE_CHECKING, Any

from daemon.site import opened_backbone
from sync.errors import BackboneNotFound
from sync.source.entities import entities, task_key
from sync.source.types import memory_type

if TYPE_CHECKING:
    from daemon.config import Settings


def export(
    settings: Settings,
    *,
    site: str | None = None,
    since_ms: int | None = None,
    archived: bool = False,
    limit: int | None = None,
    types: Sequence[str] = (),
) -> Generator[dict[str, Any], None, None]:
    """The episodes, one at a time, the backbone held open while they are read (close the iterator
    to stop early). Raises ``NeverSynced`` when the embedded hub was never created, and
    ``BackboneNotFound`` once the reading ends when ``site`` names a site with no episodes at all.
    Each episode ends with its ``memoryType``, whether it was given (``typeGiven``), its ``entities``
    and its ``taskKey`` (``sync.source.entities``); ``types``
    keeps only those of these types."""
    with opened_backbone(settings, create=False, existing=True) as backbone:
        episodes = backbone.episodes(site, since_ms)
        if archived:
            cold = backbone.archived_episodes(site)
            if since_ms is not None:
                cold = (e for e in cold if e.get("ts") is not None and int(e["ts"]) >= since_ms)
            episodes = chain(episodes, cold)
        given = 0
        typed = (_typed(e) for e in episodes)
        if types:
            typed = (e for e in typed if e["memoryType"] in types)
        for episode in typed if limit is None else islice(typed, limit):
            yield episode
            given += 1
        if given == 0 and site is not None and since_ms is None and limit != 0 and not types:
            raise BackboneNotFound(f"no episodes from site {site!r} in {backbone.description}")


# Keys an episode carries only when they apply: they stay last, after what every episode has.
_OPTIONAL = ("approvalStatus", "archived")


def _typed(episode: dict[str, Any]) -> dict[str, Any]:
    kind = memory_type(episode)
    read = {
        "memoryType": kind.name,
        "typeGiven": kind.given,
        "entities": entities(episode),
        "taskKey": task_key(episode.get("task")),
    }
    always = {k: v for k, v in episode.items() if k not in _OPTIONAL}
    return always | read | {k: episode[k] for k in _OPTIONAL if k in episode}
