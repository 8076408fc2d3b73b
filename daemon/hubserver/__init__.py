"""The embedded hub's server side, in one room: what Convex does in ``cloud_functions/``, the sites
of a hub do themselves, here, in modules named after Convex's files where they match
(``approvals``: announcing an approval; ``digest``: sending a digest now; ``scheduled``: the
periodic jobs' bodies; ``alerts``: the fleet's alert sweep; ``telegram``: button presses and
approval messages kept true, over ``tracked``, the approvals it follows). ``HubDuties`` is the
hub's ``ServerDuties`` (``daemon.duties``), the one interface the CLI and the run loop call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from daemon.counts import counted
from daemon.hubserver import approvals
from daemon.hubserver.digest import send

if TYPE_CHECKING:
    from daemon.alerts.store import AlertStore
    from daemon.config import Settings
    from daemon.duties import ApprovalsClient
    from daemon.telegram.callbacks import Presses
    from sync.backbone.base import Forgotten, Sweeps
    from sync.backbone.hub import HubBackbone


class HubDuties:
    """The embedded hub's duties, done by its sites: the global sweeps run by the sites'
    schedulers under a lease, approvals and digests sent through the site's own outbox."""

    def __init__(self, settings: Settings, backbone: HubBackbone) -> None:
        self.settings = settings
        self.backbone = backbone

    @property
    def where(self) -> str:
        return "the hub file"

    @property
    def sweeps(self) -> Sweeps | None:
        return self.backbone

    def presses(self, store: AlertStore, open_client: Callable[[], ApprovalsClient | None]) -> Presses | None:
        from daemon.hubserver.telegram import HubPresses

        client = open_client()
        return None if client is None else HubPresses(self.settings, client, store)

    @property
    def look_interval(self) -> float:
        return 0.5  # a read of the local file

    def announce_approval(self, approval_id: str, *, new: bool) -> str | None:
        return approvals.announce(self.settings, self.backbone, approval_id, new=new)

    def send_digest(self, day: str, digest: dict[str, Any]) -> str:
        return send(self.settings, day, digest)

    def digest_builder(self) -> str:
        return (
            "the daily-digest job builds each day's at 06:00 UTC the day after; "
            "`memsync jobs run daily-digest` builds the latest day's now"
        )

    def forget_elsewhere(self, site: str, source_id: str) -> Forgotten | None:
        # The hub is one file every site writes: this site opens the other's backbone on it.
        from sync.backbone.hub import HubBackbone

        other = HubBackbone(self.settings.hub_path, site)
        try:
            return other.forget(source_id)
        finally:
            other.close()

    def adopter(self) -> None:
        return None  # the seed design ran on Convex: an embedded hub holds nothing of it

    def sync_collaborators(self, collaborators: list[dict[str, Any]]) -> str:
        # The sites are the server: each reads [[collaborators]] from its own config as it starts.
        return (
            f"{counted(len(collaborators), 'collaborator')} in this config; on the embedded hub each site's "
            "daemon reads [[collaborators]] from its own config when it starts (give every site the same list): "
            "nothing to push"
        )

    def empty_forgotten(self) -> str | None:
        # The -wal's older frames still hold the text for as long as a daemon keeps the hub open:
        # cut it to nothing (HubConnection.empty_wal); it may not be, if others kept the hub busy.
        return None if self.backbone.empty_wal() else f"{self.backbone.path}-wal"
