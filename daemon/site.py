"""Wiring: from settings to the parts of one site (reader, sidecar, backbone, engine).

Every command builds its parts here, so the daemon, ``sync``, ``status`` and ``export`` can never
disagree about where a site's files are. Opening a site for writing checks its paths first
(``daemon.paths``) and claims the site for this source (``sync.push.claim``).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

import httpx

from daemon import logs
from daemon.config import Settings
from daemon.paths import check_site, exists, user
from sync.backbone.base import Backbone
from sync.backbone.convex import ConvexBackbone
from sync.backbone.hub import HubBackbone
from sync.errors import MemsyncError, PathProblem
from sync.push.claim import SourceIdentity, claim, instance_for
from sync.push.engine import SyncEngine
from sync.push.sidecar import Sidecar
from sync.resilience.retry import RetryPolicy
from sync.source.agentdb.source import agentdb_source
from sync.source.base import Source
from sync.source.journal.source import journal_source

if TYPE_CHECKING:
    from daemon.duties import ServerDuties


def open_backbone(settings: Settings, *, create: bool = True, transport: httpx.BaseTransport | None = None) -> Backbone:
    """The configured backbone. Raises BackboneUnavailable when it cannot be opened.

    ``create=False`` is for readers (status, export): they must not create or lock anything.
    ``transport`` is the HTTP seam of a Convex backbone (measurement, tests)."""
    config = settings.backbone
    opened: Backbone
    if config.kind == "convex":
        assert config.url is not None
        assert config.site_secret is not None
        secret = config.site_secret.get_secret_value()
        logs.register_secrets([secret])
        opened = ConvexBackbone(config.url, settings.site.name, secret, timeout=config.timeout, transport=transport)
    else:
        opened = HubBackbone(
            settings.hub_path, settings.site.name, busy_timeout_ms=config.busy_timeout_ms, create=create
        )
    if create:
        # A writer learns now, not at its first episode, that the backbone is down or refuses it.
        try:
            opened.ping()
        except BaseException:
            opened.close()
            raise
    return opened


@contextmanager
def opened_backbone(
    settings: Settings,
    *,
    create: bool = True,
    existing: bool = False,
    transport: httpx.BaseTransport | None = None,
) -> Iterator[Backbone]:
    """The configured backbone for a ``with`` block, closed when it ends: how every command and use
    case that opens it for its own work holds it (``open_backbone``'s arguments). ``existing``:
    raise ``NeverSynced`` instead of opening an embedded hub that was never created (a reader
    says so; a writer would create an empty one)."""
    if existing and never_synced(settings):
        raise NeverSynced(settings.hub_path)
    backbone = open_backbone(settings, create=create, transport=transport)
    try:
        yield backbone
    finally:
        backbone.close()


class NeverSynced(MemsyncError):
    """The embedded hub's file does not exist yet: nothing was ever synced to it. Each command says
    what that means for it (nothing to export, to forget, to adopt)."""

    def __init__(self, hub: Path) -> None:
        super().__init__(f"the hub {hub} does not exist yet: nothing has been synced to it")
        self.hub = hub


def never_synced(settings: Settings) -> bool:
    """Whether the configured backbone does not exist yet, so nothing was ever synced to it: an
    embedded hub whose file was never created (a reader says so instead of creating it). A Convex
    deployment is there, or unreachable, which ``open_backbone`` says."""
    return settings.backbone.kind == "local" and not exists(settings.hub_path, "backbone.path")


def duties_of(settings: Settings, backbone: Backbone) -> ServerDuties:
    """The server's duties for ``backbone`` (``daemon.duties``): on the embedded hub the sites do
    them (``daemon.hubserver``); Convex does its own (``cloud_functions/``). With ``open_backbone``
    and ``never_synced``, the one place that asks which backbone it is."""
    from daemon.duties import ConvexDuties
    from daemon.hubserver import HubDuties

    if isinstance(backbone, ConvexBackbone):
        return ConvexDuties(backbone)
    if isinstance(backbone, HubBackbone):
        return HubDuties(settings, backbone)
    raise TypeError(f"no server duties for a {type(backbone).__name__}")


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(maximum=settings.sync.retry_max_wait)


def open_sidecar(settings: Settings, path: Path | None = None) -> Sidecar:
    """The site's sidecar (``path``: another source's, e.g. ``settings.journal_state_path``)."""
    where = path or settings.state_path
    try:
        return Sidecar(where)
    except sqlite3.Error as exc:
        raise PathProblem(f"cannot open the state file {where} as user {user()}: {exc}") from None


def open_sidecar_readonly(settings: Settings) -> Sidecar | None:
    """The sidecar for reading, or None when the site was never synced."""
    if not exists(settings.state_path, "state.path"):  # a file on its way is a PathProblem, not "never"
        return None
    try:
        return Sidecar(settings.state_path, readonly=True)
    except FileNotFoundError:
        return None
    except sqlite3.Error as exc:
        raise PathProblem(f"cannot read the state file {settings.state_path} as user {user()}: {exc}") from None


def _check_bound(backbone: Backbone, site: str) -> None:
    # A backbone opened for another name would push this site's episodes under that name.
    if backbone.site != site:
        raise ValueError(f"the backbone acts for site {backbone.site!r}, not {site!r}")


class Site:
    """The open parts of one site, claimed for this source; close it (or use ``with``) to release
    the files. ``retry`` and ``clock`` are the engine's: its backoff and its time."""

    def __init__(
        self,
        settings: Settings,
        backbone: Backbone,
        *,
        retry: RetryPolicy,
        clock: Callable[[], float] = time.time,
        take_over: bool = False,
    ) -> None:
        self.settings = settings
        self._stack = ExitStack()
        check_site(settings)
        try:
            self.backbone = backbone
            self._stack.callback(self.backbone.close)
            _check_bound(backbone, settings.site.name)
            self.sidecar = open_sidecar(settings)
            self._stack.callback(self.sidecar.close)
            self.backbone_changed = self.sidecar.bind(settings.site.name, self.backbone.description)
            here = SourceIdentity.here("", settings.agentdb.path)
            self.source = replace(here, instance=instance_for(self.sidecar, here.machine))
            self.claimed = retry.call(lambda: claim(self.backbone, self.source, take_over=take_over))
            # The journal of saved memories: a source of its own, with its own sidecar (its cursor
            # and hashes), pushed under keys m<n>. The claim above stays the AgentDB file's.
            self.journal_sidecar = open_sidecar(settings, settings.journal_state_path)
            self._stack.callback(self.journal_sidecar.close)
            self.journal_sidecar.bind(settings.site.name, self.backbone.description)
        except BaseException:
            self._stack.close()
            raise
        self.engine = self._engine(agentdb_source(settings.agentdb.path), self.sidecar, retry, clock)
        self.reader = self.engine.reader
        self.journal = self._engine(journal_source(settings.journal_path), self.journal_sidecar, retry, clock)
        self.engines = (self.engine, self.journal)

    def _engine(self, source: Source, sidecar: Sidecar, retry: RetryPolicy, clock: Callable[[], float]) -> SyncEngine:
        settings = self.settings
        return SyncEngine(
            source=source,
            sidecar=sidecar,
            backbone=self.backbone,
            defaults=settings.site.defaults.attribution(),
            batch_rows=settings.sync.batch_size,
            window=settings.sync.window,
            full_interval=settings.sync.full_check_interval,
            retry=retry,
            clock=clock,
            redactor=settings.privacy.redactor(),
        )

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Site:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
