"""What a site's daemon has written, read from outside it: the embedded hub's episodes and its
count of a site's episodes, and a value of the site's state database (the sidecar); and episodes
pushed as a site's engine pushes them, for tests that fill a hub without an AgentDB file."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sync.backbone.base import Outcome
    from sync.backbone.hub import HubBackbone


def push_episode(hub: HubBackbone, source_id: str, *, task: str, output: str = "done", ts: int) -> list[Outcome]:
    """One episode of session s1 by agent coder, pushed under ``source_id`` (a number: its AgentDB
    id, and the cursor after it); the push's outcomes."""
    from sync.backbone.base import PushItem
    from sync.episode import canonical_json
    from sync.search.indexing.text import text_hash

    body = {"sessionId": "s1", "task": task, "output": output, "ts": ts, "agentName": "coder"}
    content = text_hash(canonical_json(body).decode())
    item = PushItem(source_id, int(source_id), f"identity-{source_id}", content, body, canonical_json(body))
    return [result.outcome for result in hub.push([item], int(source_id))]


def hub_episodes(hub: Path, site: str | None = None) -> list[dict[str, Any]]:
    """Every episode the hub holds (of ``site``, or of every site), hot and archived."""
    from sync.backbone.hub import HubBackbone

    backbone = HubBackbone(hub, site or "reader")  # the bound site only matters for writes
    try:
        # Hot and archived: the fixtures' episodes date from 2025, so a daemon's cleanup job may
        # have moved them to the cold archive (they carry ``archived: true`` then).
        return [*backbone.episodes(site), *backbone.archived_episodes(site)]
    finally:
        backbone.close()


def hub_total(hub: Path, site: str) -> int:
    """Episodes the hub has received from ``site`` (its own count, kept with each push); 0 until
    the daemon has created the hub."""
    from sync.backbone.hub import HubBackbone
    from sync.errors import BackboneUnavailable

    try:
        backbone = HubBackbone(hub, site, create=False)
    except BackboneUnavailable:
        return 0  # the daemon has not created it yet
    try:
        cursor = backbone.site_cursor()
    except BackboneUnavailable:
        return 0  # created, but its schema is not committed yet
    finally:
        backbone.close()
    return 0 if cursor is None else cursor.total_synced


def sidecar_value(state: Path, key: str) -> str | None:
    """One value the daemon keeps in its sidecar's meta table (``passes``, ``last_pass_at``...)."""
    from sync.push.sidecar import Sidecar

    sidecar = Sidecar(state, readonly=True)
    try:
        return sidecar.get(key)
    finally:
        sidecar.close()
