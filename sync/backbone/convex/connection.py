"""The connection to a Convex deployment as one site: Convex's HTTP API over a plain httpx client
with timeouts, every call authenticated with the site's own secret (in the body, never a URL), and
every failure classified once (``classify``, ``post``). Retries are the engine's one policy
(``sync.retry``), driven by that classification.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import httpx

from sync import http as http_policy
from sync.errors import (
    BackboneAuthError,
    BackboneConflict,
    BackboneNotFound,
    BackboneRejected,
    BackboneUnavailable,
    ConfigError,
    MemsyncError,
)

if TYPE_CHECKING:
    from sync.backbone.convex.operator import ConvexOperator

# episodes:changes pages, episodes:recordPoints batches, jobs:runs and archive pages: at most this
# many a call.
MAX_PAGE = 500

Kind = Literal["query", "mutation", "action"]


NOT_ADOPTED = (
    "the Convex deployment still holds the seed design's episodes in their old shape: run `memsync adopt` "
    "(with the deploy key) once, then start the daemons (`memsync docs seed`)"
)


def classify(code: str | None, message: str) -> MemsyncError:
    """The exception for a function's error, by its ``errorData.code``, never by message text
    (production deployments redact messages)."""
    if code == "UNAUTHORIZED":
        return BackboneAuthError(f"convex refused this site's credentials: {message}")
    if code in {"INVALID", "TOO_LARGE"}:
        return BackboneRejected(f"convex rejected the request ({code}): {message}")
    if code == "NOT_ADOPTED":
        # A person's step: the deployment holds the seed design's episodes (cloud_functions/adopt.ts).
        return ConfigError(NOT_ADOPTED)
    if code in {"CONFLICT", "NOT_FOUND"}:
        return (BackboneConflict if code == "CONFLICT" else BackboneNotFound)(message)
    if code is None:
        # An uncaught error in a function, e.g. an argument that fails a validator. Permanent for
        # this request: the engine splits the batch to find the row that causes it.
        return BackboneRejected(f"convex function failed: {message}")
    return BackboneUnavailable(f"convex error {code}: {message}")


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


def post(
    client: httpx.Client,
    url: str,
    kind: Kind,
    path: str,
    args: dict[str, Any],
    *,
    clock: Callable[[], float] = time.time,
) -> Any:
    """One call of Convex's HTTP API: its value, or a classified exception (messages name the
    function and the URL, never a credential). ``clock`` is now, for a Retry-After given as a date."""
    body = {"path": path, "args": args, "format": "json"}
    try:
        response = client.post(f"/api/{kind}", json=body)
    except httpx.TimeoutException:
        raise BackboneUnavailable(f"convex {path}: no answer within the timeout") from None
    except httpx.HTTPError as exc:
        raise BackboneUnavailable(f"convex {path}: {type(exc).__name__}: {exc}") from None
    # Convex answers 200 for both outcomes; its own client also takes 560 as "function failed".
    if response.status_code in (200, 560):
        try:
            payload = response.json()
        except ValueError:
            raise BackboneUnavailable(f"convex {path}: the answer is not JSON") from None
        if payload.get("status") == "success":
            return payload.get("value")
        data = payload.get("errorData")
        code = data.get("code") if isinstance(data, dict) else None
        message = (data.get("message") if isinstance(data, dict) else None) or payload.get("errorMessage") or ""
        raise classify(code if isinstance(code, str) else None, f"{path}: {message}")
    # Every other status means what sync.http says it means, for every service memsync calls.
    verdict = http_policy.classify(response.status_code)
    if verdict is http_policy.Verdict.TRANSIENT:
        wait = http_policy.retry_after(response.headers.get("retry-after"), clock())
        raise BackboneUnavailable(f"convex {path}: HTTP {response.status_code}", wait)
    if verdict is http_policy.Verdict.AUTH:
        raise BackboneAuthError(f"convex {path}: HTTP {response.status_code}")
    # Not a row's fault (that would be a function error): the URL or the deployment is wrong.
    raise ConfigError(
        f"convex {path}: HTTP {response.status_code} from {url}: is this the deployment "
        "URL, with cloud_functions deployed?"
    )
