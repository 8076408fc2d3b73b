"""The server's duties that a site's CLI and run loop ask for, whatever the backbone: announce an
approval on Telegram, send a digest now, run the global jobs' sweeps.

On the embedded hub the sites themselves are the server, so these run here (``daemon.hubserver``);
on Convex the deployment does them (``cloud_functions/``), and a site only asks or leaves them to
its crons. ``daemon.site.duties_of`` picks the one for a backbone: nothing else asks which it is.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sync.backbone.base import Sweeps
    from sync.backbone.convex import ConvexBackbone


class ServerDuties(Protocol):
    @property
    def sweeps(self) -> Sweeps | None:
        """The global jobs' bodies where a site's scheduler runs them; None where the server's own
        crons run them."""
        ...

    @property
    def polls_presses(self) -> bool:
        """Whether the sites' daemons receive Telegram's button presses (whichever holds the poller
        lease long-polls getUpdates); False where the server's webhook receives them."""
        ...

    def announce_approval(self, approval_id: str, *, new: bool) -> str | None:
        """Have the approval's Telegram message sent (``new``), or the edit a decision needs; a note
        to show when it could not go now (it goes later)."""
        ...

    def send_digest(self, day: str, digest: dict[str, Any]) -> str:
        """Send the digest of ``day`` to Telegram now; a sentence saying what was done."""
        ...

    def digest_builder(self) -> str:
        """Who builds each day's digest, and how to build it now: the tail of "no digest for D: ..."."""
        ...


class ConvexDuties:
    """Convex's duties: the deployment announces approvals and runs the sweeps in its crons; a site
    only asks it to send a digest."""

    def __init__(self, backbone: ConvexBackbone) -> None:
        self.backbone = backbone

    @property
    def sweeps(self) -> Sweeps | None:
        return None  # cloud_functions/crons.ts

    @property
    def polls_presses(self) -> bool:
        return False  # cloud_functions/http.ts: the /telegram webhook

    def announce_approval(self, approval_id: str, *, new: bool) -> str | None:
        return None  # cloud_functions/approvals.ts announces and edits its own messages

    def send_digest(self, day: str, digest: dict[str, Any]) -> str:
        sent_day = self.backbone.send_digest()
        return f"digest for {sent_day} queued by the deployment for Telegram"

    def digest_builder(self) -> str:
        return "Convex's crons build each day's at 06:00 UTC the day after"
