"""Wiring: from settings to the parts of one site (reader, sidecar, backbone, engine).

Every command builds its parts here, so the daemon, ``sync --once``, ``status`` and ``export`` can
never disagree about where a site's files are.
"""

from __future__ import annotations

from contextlib import ExitStack
from types import TracebackType

import httpx

from daemon import logs
from daemon.config import Settings
from sync.agentdb import AgentDBReader
from sync.backbone.base import Backbone
from sync.backbone.convex import ConvexBackbone
from sync.backbone.hub import HubBackbone
from sync.engine import SyncEngine
from sync.retry import RetryPolicy
from sync.sidecar import Sidecar


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
        opened = HubBackbone(settings.hub_path, busy_timeout_ms=config.busy_timeout_ms, create=create)
    if create:
        # A writer learns now, not at its first episode, that the backbone is down or refuses it.
        try:
            opened.ping()
        except BaseException:
            opened.close()
            raise
    return opened


def retry_policy(settings: Settings) -> RetryPolicy:
    return RetryPolicy(maximum=settings.sync.retry_max_wait)


class Site:
    """The open parts of one site; close it (or use ``with``) to release the files."""

    def __init__(self, settings: Settings, backbone: Backbone | None = None) -> None:
        self.settings = settings
        self._stack = ExitStack()
        try:
            self.backbone = backbone or open_backbone(settings)
            self._stack.callback(self.backbone.close)
            self.sidecar = Sidecar(settings.state_path)
            self._stack.callback(self.sidecar.close)
            self.backbone_changed = self.sidecar.bind(settings.site.name, self.backbone.description)
        except BaseException:
            self._stack.close()
            raise
        self.reader = AgentDBReader(settings.agentdb.path)
        self.engine = SyncEngine(
            site=settings.site.name,
            reader=self.reader,
            sidecar=self.sidecar,
            backbone=self.backbone,
            defaults=settings.site.defaults.attribution(),
            batch_rows=settings.sync.batch_size,
            window=settings.sync.window,
            full_interval=settings.sync.full_check_interval,
            retry=retry_policy(settings),
        )

    def close(self) -> None:
        self._stack.close()

    def __enter__(self) -> Site:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
