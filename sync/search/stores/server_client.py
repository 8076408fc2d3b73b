"""The connection a Qdrant server store holds: qdrant-client's client (made from a URL, a local
path or memory, or shared), and the one mapping of its failures to ``sync.errors``.

``ServerStore`` (``server``) is this connection with the store contract, the shared alias's
operations (``server_aliases``) and adoption (``server_adoption``) on top; each of those is a class
over this one, so every call goes through ``_client_errors``.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from sync import http
from sync.errors import ConfigError, MemsyncError, StoreLocked, StoreRejected, StoreUnavailable
from sync.search.stores.base import StoreBase

if TYPE_CHECKING:
    from qdrant_client import QdrantClient


class ServerConnection(StoreBase):
    """qdrant-client's client to one server (``url`` + ``api_key``), to a local-mode folder
    (``path``) or memory (``location=":memory:"``), or a client given (``client``: shared, so
    ``close`` leaves it open), and the errors of every call made through ``_client_errors``."""

    def __init__(
        self,
        url: str | None = None,
        api_key: str | None = None,
        *,
        location: str | None = None,
        path: str | None = None,
        timeout: int = 10,
        client: QdrantClient | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from qdrant_client import QdrantClient

        self._clock = clock  # what an HTTP-date Retry-After is counted from
        self._where = url or location or path or ("shared client" if client is not None else "")
        self._configured: str | None = None  # warm.collection, for the refusal's advice (``configured``)
        # A given client is shared (with other stores or the caller), so close() leaves it open.
        self._owns_client = client is None
        if client is not None:
            if any(x is not None for x in (url, location, path)):
                raise ConfigError("give a Qdrant server store either a client or a url/location/path, not both")
            self._client = client
            return
        if sum(x is not None for x in (url, location, path)) != 1:
            raise ConfigError("a Qdrant server store needs exactly one of url, location or path")
        with self._client_errors("connect"):
            # check_compatibility=False: the version probe runs in a background thread whose failure
            # (server down) escapes as an unhandled thread exception; the first real call reports it.
            self._client = QdrantClient(
                url=url, api_key=api_key, location=location, path=path, timeout=timeout, check_compatibility=False
            )

    @contextlib.contextmanager
    def _client_errors(self, doing: str) -> Iterator[None]:
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        where = getattr(self, "_where", "")
        try:
            yield
        except MemsyncError:
            raise  # ours already say what happened
        except UnexpectedResponse as exc:
            status = exc.status_code
            verdict = http.classify(status)
            if verdict is http.Verdict.TRANSIENT:
                header = exc.headers.get("retry-after") if exc.headers else None
                raise StoreUnavailable(
                    f"Qdrant at {where} answered {status} to {doing}", http.retry_after(header, self._clock())
                ) from exc
            if verdict is http.Verdict.AUTH:
                raise ConfigError(
                    f"Qdrant at {where} refused its API key (HTTP {status}) to {doing}: "
                    "check MEMSYNC_WARM__QDRANT_API_KEY"
                ) from exc
            raise StoreRejected(f"Qdrant at {where} refused to {doing}: {status} {exc.content!r}") from exc
        except (ResponseHandlingException, ConnectionError, TimeoutError) as exc:
            raise StoreUnavailable(f"cannot reach Qdrant at {where} to {doing}: {exc}") from exc
        except RuntimeError as exc:  # local mode with path=: another process holds the folder
            if "already accessed" in str(exc):
                raise StoreLocked(
                    f"the vector store at {where} is in use by another process: {exc}", Path(where)
                ) from exc
            raise StoreRejected(f"Qdrant at {where} failed to {doing}: {exc}") from exc
        except (ValueError, TypeError) as exc:  # local mode reports bad input this way
            raise StoreRejected(f"Qdrant at {where} refused to {doing}: {exc}") from exc

    @property
    def where(self) -> str:
        """The server, as sentences name it."""
        return self._where

    def configured(self, name: str) -> Self:
        """The site's ``warm.collection``: a refusal of a foreign collection advises by it."""
        self._configured = name
        return self

    def _metadata(self, collection: str) -> dict[str, Any]:
        with self._client_errors("read the collection's record"):
            return dict(self._client.get_collection(collection).config.metadata or {})

    def close(self) -> None:
        self._collection, self._spec = None, None
        if self._owns_client:
            with self._client_errors("close the client"):
                self._client.close()
