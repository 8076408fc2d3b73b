"""The server's duties that a site's CLI and run loop ask for, whatever the backbone: announce an
approval on Telegram, send a digest now, run the global jobs' sweeps, forget another site's episode.

On the embedded hub the sites themselves are the server, so these run here (``daemon.hubserver``);
on Convex the deployment does them (``cloud_functions/``), and a site only asks or leaves them to
its crons. ``daemon.site.duties_of`` picks the one for a backbone: nothing else asks which it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from daemon import logs
from daemon.counts import counted
from sync.backbone.base import Approvals
from sync.errors import BackboneAuthError, ConfigError

if TYPE_CHECKING:
    from daemon.alerts.store import AlertStore
    from daemon.telegram.callbacks import Presses
    from sync.backbone.base import Forgotten, Sweeps
    from sync.backbone.convex import ConvexBackbone
    from sync.backbone.convex.adoption import SeedAdoption


# The operator's credential for forgetting another site's episode on Convex: read from the shell
# that runs ``forget``, never from a daemon's environment (it is full access to the deployment).
OPERATOR_KEY_ENV = "CONVEX_DEPLOY_KEY"


class OperatorRefused(ConfigError):
    """The server refused the operator's credential; the message is the whole sentence to show."""


class ApprovalsClient(Approvals, Protocol):
    """The backbone client a presser opens for itself: the approvals role, and closing it."""

    def close(self) -> None: ...


class ServerDuties(Protocol):
    @property
    def where(self) -> str:
        """What holds the episodes, as a sentence names it: "removed from {where}"."""
        ...

    @property
    def sweeps(self) -> Sweeps | None:
        """The global jobs' bodies where a site's scheduler runs them; None where the server's own
        crons run them."""
        ...

    def presses(self, store: AlertStore, open_client: Callable[[], ApprovalsClient | None]) -> Presses | None:
        """Where the sites' daemons receive Telegram's button presses (whichever holds the poller
        lease long-polls getUpdates), what to do with them, over a client from ``open_client`` (None:
        the daemon is stopping); None where the server's webhook receives them."""
        ...

    @property
    def look_interval(self) -> float:
        """Seconds between two looks of a waiter at an approval: what a look costs the server."""
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

    def forget_elsewhere(self, site: str, source_id: str) -> Forgotten | None:
        """Forget another site's episode, hot or archived, as that site's own forget would; None
        where this site may not (Convex without the operator's credential). Raises
        ``OperatorRefused`` when the server refuses that credential."""
        ...

    def empty_forgotten(self) -> str | None:
        """After a forget, empty the server's own files of what still holds the forgotten text,
        here; the file that still holds it when that could not be done now (None: none)."""
        ...

    def adopter(self) -> SeedAdoption | None:
        """The operator's hand on a seed design's documents (``memsync adopt``), with the deploy key
        from the shell; None where there is nothing of the seed's to adopt (the embedded hub).
        Raises ``ConfigError`` when the deploy key is not set."""
        ...

    def sync_collaborators(self, collaborators: list[dict[str, Any]]) -> str:
        """Make the server's collaborators the config's ``[[collaborators]]`` (each as Convex's
        table holds them); a sentence saying what was done. Raises ``OperatorRefused`` (or a
        ConfigError) when the server needs a credential it was not given or refuses it."""
        ...


class ConvexDuties:
    """Convex's duties: the deployment announces approvals and runs the sweeps in its crons; a site
    only asks it to send a digest."""

    def __init__(self, backbone: ConvexBackbone) -> None:
        self.backbone = backbone

    @property
    def where(self) -> str:
        return "the Convex deployment"

    @property
    def sweeps(self) -> Sweeps | None:
        return None  # cloud_functions/crons.ts

    def presses(self, store: AlertStore, open_client: Callable[[], ApprovalsClient | None]) -> Presses | None:
        return None  # cloud_functions/http.ts: the /telegram webhook

    @property
    def look_interval(self) -> float:
        return 2.0  # each look is a function call

    def announce_approval(self, approval_id: str, *, new: bool) -> str | None:
        return None  # cloud_functions/approvals.ts announces and edits its own messages

    def send_digest(self, day: str, digest: dict[str, Any]) -> str:
        sent_day = self.backbone.send_digest()
        return f"digest for {sent_day} queued by the deployment for Telegram"

    def digest_builder(self) -> str:
        return "Convex's crons build each day's at 06:00 UTC the day after"

    def _deploy_key(self, needed_for: str | None) -> str | None:
        """The operator's deploy key from this shell, kept out of every log; None when it is not set
        and ``needed_for`` is None, else a ConfigError saying what needs it."""
        deploy_key = os.environ.get(OPERATOR_KEY_ENV, "").strip()
        if not deploy_key:
            if needed_for is None:
                return None
            raise ConfigError(
                f"{needed_for} needs the deployment's deploy key: set {OPERATOR_KEY_ENV} (Convex dashboard, "
                "Settings, Deploy keys) in this shell only, never in a daemon's environment, and run it again"
            )
        logs.register_secrets([deploy_key])
        return deploy_key

    def _refused(self) -> OperatorRefused:
        return OperatorRefused(
            f"the deployment {self.backbone.url} refused the deploy key in {OPERATOR_KEY_ENV}: copy a current "
            "one from the Convex dashboard (Settings, Deploy keys) for this deployment"
        )

    def forget_elsewhere(self, site: str, source_id: str) -> Forgotten | None:
        # A site's secret reaches only its own episodes: another's needs the operator's deploy key.
        deploy_key = self._deploy_key(None)
        if deploy_key is None:
            return None
        operator = self.backbone.operator(deploy_key)
        try:
            return operator.forget(site, source_id)
        except BackboneAuthError:
            raise self._refused() from None
        finally:
            operator.close()

    def empty_forgotten(self) -> str | None:
        return None  # the deployment's storage is Convex's: no file of ours holds the text

    def adopter(self) -> SeedAdoption | None:
        from sync.backbone.convex.adoption import SeedAdoption

        deploy_key = self._deploy_key("`memsync adopt`")
        assert deploy_key is not None  # refused above when unset
        return SeedAdoption(self.backbone.operator(deploy_key))

    def sync_collaborators(self, collaborators: list[dict[str, Any]]) -> str:
        # The table is admin-written (collaborators.ts's replace): the operator's deploy key, as forget's.
        deploy_key = self._deploy_key("pushing collaborators to the Convex deployment")
        assert deploy_key is not None  # refused above when unset
        operator = self.backbone.operator(deploy_key)
        try:
            done = operator.call("mutation", "collaborators:replace", {"collaborators": collaborators})
        except BackboneAuthError:
            raise self._refused() from None
        finally:
            operator.close()
        removed = list(done.get("removed") or [])
        gone = f"; removed {', '.join(removed)}" if removed else ""
        stored = counted(int(done.get("stored") or 0), "collaborator")
        return f"{stored} stored in the Convex deployment {self.backbone.url}{gone}"
