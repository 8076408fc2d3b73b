"""What the warm layer's cloud clients (the embedders, the reranker) share, defined once.

- ``CloudClient``: the API key check, scrubbing the key out of every message, one mapping from an
  HTTP outcome to memsync's error kinds, and calls through the project's ``RetryPolicy`` (429 and
  5xx retried, honouring Retry-After; an exhausted quota raised as ``QuotaExhausted``, which
  ``RetryPolicy`` does not retry: the caller pauses until its ``retry_after``).
- ``VoyageClient``: the voyageai client (its own retries off) and the mapping of its errors.

API keys never appear in a message, a repr or an exception's cause: a provider's exception is
mapped inside its handler but raised outside it, so the mapped error has no ``__context__``.
"""

from __future__ import annotations

import importlib
import re
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from sync import http
from sync.errors import ConfigError, MemsyncError, MissingPackage, PermanentError, QuotaExhausted, TransientError
from sync.retry import RetryPolicy

if TYPE_CHECKING:
    from voyageai import error as voyage_errors

T = TypeVar("T")

DEFAULT_RETRY = RetryPolicy(initial=1.0, maximum=60.0, give_up_after=600.0)
_MAX_MESSAGE = 300


def retry_after_header(headers: Any, now: float) -> float | None:
    """Seconds from a response's Retry-After header (``sync.http.retry_after``), if it has one."""
    value = headers.get("retry-after") if headers is not None else None
    return http.retry_after(value, now) if value else None


def import_extra(module: str, *, package: str, purpose: str, extra: str = "cloud") -> Any:
    """``module``, imported; or one sentence naming the extra that brings it (exit 78).

    The cloud providers' packages are an extra (``memsync[cloud]``) so that the default install
    stays small; configuring a provider without them must say how to add them, not show a
    ModuleNotFoundError from deep inside the warm layer.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingPackage(
            f"{purpose} needs the {package} package, which memsync's `{extra}` extra installs: run "
            f"`pip install 'memsync[{extra}]' -c requirements/constraints.txt` in memsync's environment "
            f"(a checkout: `make bootstrap` installs it), or choose another provider in the config"
        ) from exc


def until_next_hour(now: float) -> float:
    return 3600.0 - (now % 3600.0)


class CloudClient:
    """Base of a client of one cloud provider; ``operation`` names its calls in messages."""

    provider = "cloud"
    operation = "API"

    def __init__(
        self,
        api_key: str,
        *,
        retry: RetryPolicy | None,
        stop: threading.Event | None,
        clock: Callable[[], float],
    ) -> None:
        if not api_key or not api_key.strip():
            raise ConfigError(f"no {self.provider} API key: set it in the config or the environment")
        self._api_key = api_key
        self._retry = retry or DEFAULT_RETRY
        self._stop = stop
        self._clock = clock

    def _scrub(self, text: object) -> str:
        """Provider text made safe for a message: no API key, bounded length."""
        clean = str(text).replace(self._api_key, "[redacted]")
        return clean if len(clean) <= _MAX_MESSAGE else clean[:_MAX_MESSAGE] + "..."

    def _classify(self, status: int | None, detail: str, retry_after: float | None, quota: bool) -> MemsyncError:
        """One mapping from an HTTP outcome to memsync's error kinds. An exhausted quota waits for the
        server's hint or the next full hour, whichever is later."""
        message = self._scrub(f"{self.provider} {self.operation} request failed (HTTP {status}): {detail}")
        if quota:
            wait = max(retry_after or 0.0, until_next_hour(self._clock()))
            return QuotaExhausted(f"{self.provider} quota exhausted: {self._scrub(detail)}", wait, self.provider)
        verdict = http.classify(status)
        if verdict is http.Verdict.TRANSIENT:
            return TransientError(message, retry_after=retry_after)
        if verdict is http.Verdict.AUTH:
            return ConfigError(f"{self.provider} rejected the API key (HTTP {status}): {self._scrub(detail)}")
        return PermanentError(message)

    def _call(self, request: Callable[[], T]) -> T:
        """``request`` through the retry policy (which leaves QuotaExhausted to the caller)."""
        return self._retry.call(request, stop=self._stop)


_VOYAGE_QUOTA = re.compile(
    r"\bquota\b|insufficient (funds|credit|balance)|out of credits?|credits? (exhausted|depleted)"
)


class VoyageClient(CloudClient):
    """A voyageai client with its own retries off: retrying is ``RetryPolicy``'s job."""

    provider = "Voyage"

    def __init__(
        self,
        api_key: str,
        *,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(api_key, retry=retry, stop=stop, clock=clock)
        client = import_extra("voyageai.client", package="voyageai", purpose=f"Voyage {self.operation}")

        self._client = client.Client(api_key=api_key, max_retries=0, timeout=timeout, base_url=base_url)

    def _request(self, send: Callable[[], T]) -> T:
        """One attempt of ``send`` (a call on ``self._client``), its errors mapped to memsync's."""
        from voyageai import error

        try:
            return send()
        except error.VoyageError as exc:
            mapped = self._map(exc)
        raise mapped

    def _map(self, exc: voyage_errors.VoyageError) -> Exception:
        from voyageai import error

        status = exc.http_status if isinstance(exc.http_status, int) else None
        body = exc.json_body
        detail = str(body["detail"] if isinstance(body, dict) and "detail" in body else exc.user_message)
        if isinstance(exc, error.Timeout | error.APIConnectionError | error.TryAgain):
            return TransientError(self._scrub(f"Voyage unreachable: {detail}"))
        if isinstance(exc, error.AuthenticationError):
            status = 401
        elif status is None:
            return PermanentError(self._scrub(f"Voyage returned an unusable response: {detail}"))
        retry_after = retry_after_header(exc.headers, self._clock())
        quota = status == 402 or (status == 429 and bool(_VOYAGE_QUOTA.search(detail.lower())))
        return self._classify(status, detail, retry_after, quota)
