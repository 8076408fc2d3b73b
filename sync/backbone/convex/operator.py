"""The operator's hand on a Convex deployment, with its deploy key."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from sync.backbone.base import Forgotten
from sync.backbone.convex.calls import Kind, post
from sync.backbone.convex.wire import forgotten
from sync.errors import ConfigError


class ConvexOperator:
    """The operator's hand on the deployment, with its deploy key (``Authorization: Convex <key>``,
    admin: it may call internal functions): forgetting any site's episode, which a site's own secret
    cannot. The key is never in a message, a log line or this object's repr."""

    def __init__(
        self,
        url: str,
        deploy_key: str,
        *,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"the deployment's URL must be https://..., not {url!r}")
        self.url = url.rstrip("/")
        self._clock = clock  # what an HTTP-date Retry-After is counted from
        self._client = httpx.Client(
            base_url=self.url,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            transport=transport,
            headers={"Convex-Client": "memsync-0.1.0", "Authorization": f"Convex {deploy_key}"},
        )

    def __repr__(self) -> str:
        return f"ConvexOperator({self.url!r})"

    def call(self, kind: Kind, path: str, args: Mapping[str, Any]) -> Any:
        """Run any function (internal ones too) as the admin; its value, or a classified exception."""
        return post(self._client, self.url, kind, path, dict(args), clock=self._clock)

    def forget(self, site: str, source_id: str) -> Forgotten:
        """Forget ``site``'s episode ``source_id``, hot or archived, as the site's own forget does."""
        return forgotten(self.call("action", "episodes:forgetAny", {"sourceSite": site, "sourceId": source_id}))

    def close(self) -> None:
        self._client.close()
