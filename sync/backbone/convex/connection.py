"""The connection to a Convex deployment as one site: Convex's HTTP API over a plain httpx client
with timeouts, every call authenticated with the site's own secret (in the body, never a URL), and
every failure classified once (``calls``). Retries are the engine's one policy
(``sync.resilience.retry``), driven by that classification.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx

from sync.backbone.convex.calls import Kind, post
from sync.errors import ConfigError

if TYPE_CHECKING:
    from sync.backbone.convex.operator import ConvexOperator

# episodes:changes pages, episodes:recordPoints batches, jobs:runs and archive pages: at most this
# many a call.
MAX_PAGE = 500


class ConvexConnection:
    def __init__(
        self,
        url: str,
        site: str,
        secret: str,
        *,
        timeout: float = 15.0,
        transport: httpx.BaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not url.startswith(("https://", "http://")):
            raise ConfigError(f"backbone.url must be the deployment's URL (https://...), not {url!r}")
        self.url = url.rstrip("/")
        self.site = site
        self._secret = secret
        self.description = f"convex {self.url}"
        self._timeout = timeout
        self._transport = transport
        self._clock = clock  # what an HTTP-date Retry-After is counted from
        self._client = httpx.Client(
            base_url=self.url,
            timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)),
            transport=transport,
            headers={"Convex-Client": "memsync-0.1.0"},
        )

    # -- the HTTP API ---------------------------------------------------------------------------
    def call(self, kind: Kind, path: str, args: Mapping[str, Any] | None = None) -> Any:
        """Run one public function as this site; its value, or a classified exception."""
        signed = {"site": self.site, "secret": self._secret, **(args or {})}
        return post(self._client, self.url, kind, path, signed, clock=self._clock)

    def ping(self) -> None:
        self.call("query", "episodes:getCursor")

    def operator(self, deploy_key: str) -> ConvexOperator:
        """The operator's hand on this same deployment (its URL, timeout and HTTP transport), with
        the deploy key: for what this site's secret cannot reach."""
        from sync.backbone.convex.operator import ConvexOperator

        return ConvexOperator(self.url, deploy_key, timeout=self._timeout, transport=self._transport, clock=self._clock)

    def close(self) -> None:
        self._client.close()
