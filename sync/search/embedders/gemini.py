"""``GeminiEmbedder``: google-genai's gemini-embedding-001, with document and query task types.

Calls retry 429 and 5xx through the project's ``RetryPolicy`` (honouring Retry-After and the
server's retry hints) with the code the cloud clients share (``sync.search.embedders.cloud``). An
exhausted quota is not retried here: it raises ``QuotaExhausted`` with a long ``retry_after``, so
that the caller can pause and show it in ``status``. The API key never appears in a message, a
repr or an exception's cause.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from sync.errors import ConfigError, PermanentError, TransientError
from sync.retry import RetryPolicy
from sync.search.embedders.base import batches, estimated_tokens, normalised
from sync.search.embedders.cloud import CloudClient, import_extra, retry_after_header

if TYPE_CHECKING:
    from google.genai import errors as genai_errors


def _gemini_hints(details: Any) -> tuple[float | None, list[str]]:
    """From a Google error body: the RetryInfo delay in seconds and the QuotaFailure quota ids."""
    error = details.get("error", details) if isinstance(details, dict) else {}
    delay: float | None = None
    quota_ids: list[str] = []
    for item in error.get("details") or [] if isinstance(error, dict) else []:
        if not isinstance(item, dict):
            continue
        kind = str(item.get("@type", ""))
        if kind.endswith("google.rpc.RetryInfo"):
            match = re.fullmatch(r"\s*([0-9.]+)s\s*", str(item.get("retryDelay", "")))
            if match:
                delay = float(match.group(1))
        elif kind.endswith("google.rpc.QuotaFailure"):
            quota_ids += [str(v.get("quotaId", "")) for v in item.get("violations") or [] if isinstance(v, dict)]
    return delay, quota_ids


class GeminiEmbedder(CloudClient):
    """gemini-embedding-001 through google-genai: RETRIEVAL_DOCUMENT vs RETRIEVAL_QUERY, <= 100 texts a call."""

    provider = "Gemini"
    operation = "embedding"
    max_batch = 100
    # gemini-embedding-001 reads 2,048 input tokens and silently truncates the rest.
    passage_tokens = 2048

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "gemini-embedding-001",
        dims: int = 768,
        batch_size: int = 100,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(api_key, retry=retry, stop=stop, clock=clock)
        if not 1 <= batch_size <= self.max_batch:
            raise ConfigError(f"Gemini batch_size must be 1..{self.max_batch}, got {batch_size}")
        genai = import_extra("google.genai", package="google-genai", purpose="Gemini embeddings")
        types = import_extra("google.genai.types", package="google-genai", purpose="Gemini embeddings")

        self.name = f"gemini/{model}"
        self.dims = dims
        self.model = model
        self.batch_size = batch_size
        self._client = genai.Client(
            api_key=api_key,
            http_options=types.HttpOptions(base_url=base_url, timeout=int(timeout * 1000)),
        )

    def __repr__(self) -> str:
        return f"GeminiEmbedder(name={self.name!r}, dims={self.dims})"

    def close(self) -> None:
        """Close the HTTP connections the client holds."""
        self._client.close()

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in batches(texts, self.batch_size):
            out += self._call(partial(self._embed, batch, "RETRIEVAL_DOCUMENT"))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._call(partial(self._embed, [text], "RETRIEVAL_QUERY"))[0]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return estimated_tokens(texts)

    def _embed(self, texts: Sequence[str], task_type: str) -> list[list[float]]:
        import httpx2
        from google.genai import errors, types

        config = types.EmbedContentConfig(task_type=task_type, output_dimensionality=self.dims)
        contents: list[types.PartUnion] = [*texts]
        # The mapped error is raised outside the handler, so it carries no reference to the provider's.
        try:
            response = self._client.models.embed_content(model=self.model, contents=contents, config=config)
        except errors.APIError as exc:
            mapped = self._map(exc)
        except httpx2.HTTPError as exc:
            mapped = TransientError(self._scrub(f"Gemini unreachable: {type(exc).__name__}: {exc}"))
        else:
            return self._vectors(texts, response.embeddings or [])
        raise mapped

    def _vectors(self, texts: Sequence[str], embeddings: Sequence[Any]) -> list[list[float]]:
        if len(embeddings) != len(texts):
            raise PermanentError(f"Gemini returned {len(embeddings)} embeddings for {len(texts)} texts")
        return normalised([e.values or [] for e in embeddings], self.dims, "Gemini")

    def _map(self, exc: genai_errors.APIError) -> Exception:
        status = int(exc.code) if exc.code else None
        message = str(exc.message or "")
        delay, quota_ids = _gemini_hints(exc.details)
        header = retry_after_header(getattr(exc.response, "headers", None), self._clock())
        retry_after = header if header is not None else delay
        quota = (
            status == 429
            and exc.status == "RESOURCE_EXHAUSTED"
            and "quota" in message.lower()
            # A per-minute quota is a rate limit that clears in seconds, not an exhausted quota.
            and not (quota_ids and all("PerMinute" in q for q in quota_ids))
        )
        detail = f"{exc.status}: {message}"
        if status == 400 and ("API_KEY_INVALID" in str(exc.details) or "API key not valid" in message):
            return ConfigError(f"Gemini rejected the API key: {self._scrub(message)}")
        return self._classify(status, detail, retry_after, quota)
