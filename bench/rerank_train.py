"""The recipe of search's learned ranking (``sync/search/query/ranking/rerank_model.json``): numpy only.

Each training question contributes its whole candidate pool (``sync.search.query.ranking.rerank_model.features``
over what hybrid search prefetched for it), labelled 1 for the question's evidence and 0 for the
rest. The model is a logistic regression over the standardised features, fitted by Newton's method
with an L2 penalty (no penalty on the bias). The evidence weighs as much as the rest of the pool
together (a pool of 150 holds one or two answers: unweighted, the fit spends itself on telling
the pool's tail apart; weighted, on the first places, +1.5 points of held-out R@5); the bias is
then refitted with every candidate weighing the same, so that the output is again a probability of
relevance, comparable across queries (the order does not change). The penalty is chosen by leaving one
training conversation out at a time (``choose_l2``): nothing is chosen on the data it is measured on.

    python -m bench.rerank_train /work/shared/data/locomo-dev --calendar \
        [--out sync/search/query/ranking/rerank_model.json]

trains on every conversation of the folder and writes the model the product ships. It trains on
the calendar-keeping placement (``bench.recall_pool.load``: sessions moved by whole years, so
"in June 2023" in a question names the month its memories are dated in, as a user's own question
does): trained on the other placement, where a question's dates name no memory's, the model learns
to distrust a window the query names and loses 2.3 points of R@5 where the dates are right, while
the calendar-trained model loses 0.1 where they are wrong (bench/results/recall-folds.md).
``bench/recall_folds.py`` trains the same way on some conversations and measures on the others.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from sync.search.query.ranking.rerank_model import FEATURES, LinearModel

L2_GRID: Final = (1.0, 30.0)
# The model ranks queries like most of its training questions: below this percentile of their
# lexical coverage, the fusion does (``LinearModel.min_coverage``).
COVERAGE_PERCENTILE: Final = 10
Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Example:
    """One question's pool: its features (rows in ``FEATURES`` order), labels, and its group (the
    conversation it belongs to)."""

    group: str
    ids: tuple[int, ...]
    x: Matrix
    y: npt.NDArray[np.float64]
    coverage: float = 1.0  # the share of the question's BM25 terms that BM25's first hit holds


def matrix(rows: Sequence[dict[str, float]], names: Sequence[str] = FEATURES) -> Matrix:
    return np.array([[row[n] for n in names] for row in rows], dtype=np.float64).reshape(len(rows), len(names))


def fit(
    examples: Sequence[Example], names: Sequence[str] = FEATURES, l2: float = 1.0, notes: dict[str, Any] | None = None
) -> LinearModel:
    """A logistic regression over the examples' candidates (Newton's method, L2 on the weights)."""
    columns = [FEATURES.index(n) for n in names]
    x = np.vstack([e.x[:, columns] for e in examples])
    y = np.concatenate([e.y for e in examples])
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0  # a feature constant over the training data: weight stays 0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    penalty = np.r_[np.full(len(names), l2), 0.0]
    positives = max(float(y.sum()), 1.0)
    weight = np.where(y > 0, (len(y) - positives) / positives, 1.0)
    w = _newton(z, y, weight, penalty, np.zeros(z.shape[1]))
    # The bias alone, refitted unweighted: probabilities again, the order unchanged.
    shift = _newton(np.ones((len(z), 1)), y, np.ones(len(y)), np.zeros(1), np.zeros(1), offset=z[:, :-1] @ w[:-1])
    w[-1] = shift[0]
    return LinearModel(
        tuple(names),
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in w[:-1]),
        float(w[-1]),
        min_coverage=float(np.percentile([e.coverage for e in examples], COVERAGE_PERCENTILE)),
        notes=notes,
    )


def _newton(
    z: Matrix,
    y: npt.NDArray[np.float64],
    weight: npt.NDArray[np.float64],
    penalty: npt.NDArray[np.float64],
    w: npt.NDArray[np.float64],
    offset: npt.NDArray[np.float64] | None = None,
) -> npt.NDArray[np.float64]:
    """Weighted, penalised logistic regression by Newton's method with step halving."""
    base = np.zeros(len(z)) if offset is None else offset

    def loss(v: npt.NDArray[np.float64]) -> float:
        margin = base + z @ v
        return float(np.sum(weight * (np.logaddexp(0.0, margin) - y * margin)) + 0.5 * np.sum(penalty * v * v))

    current = loss(w)
    for _ in range(100):
        p = 0.5 * (1.0 + np.tanh(0.5 * (base + z @ w)))  # the logistic, without overflow
        gradient = z.T @ (weight * (p - y)) + penalty * w
        hessian = (z * (weight * p * (1 - p))[:, None]).T @ z + np.diag(penalty) + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hessian, gradient)
        # Newton's step, halved until the loss falls (it always does for a small enough step).
        size = 1.0
        while size > 1e-6 and loss(w - size * step) > current:
            size /= 2
        w -= size * step
        previous, current = current, loss(w)
        if previous - current < 1e-9 * max(1.0, abs(current)):
            break
    return w


def scores(model: LinearModel, x: Matrix) -> npt.NDArray[np.float64]:
    """The model's scores of a pool's rows (``FEATURES`` order), as ``LinearModel.score`` gives them."""
    columns = [FEATURES.index(n) for n in model.features]
    z = model.bias + ((x[:, columns] - np.array(model.mean)) / np.array(model.scale)) @ np.array(model.weights)
    return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)


def recall_at(examples: Sequence[Example], model: LinearModel, evidence: Sequence[frozenset[int]], k: int) -> float:
    """Mean share of evidence among each pool's best ``k`` by the model (ties by position)."""
    total = 0.0
    for e, wanted in zip(examples, evidence, strict=True):
        order = np.argsort(-scores(model, e.x), kind="stable")[:k]
        total += len(wanted & {e.ids[i] for i in order}) / len(wanted)
    return total / max(1, len(examples))


def choose_l2(
    examples: Sequence[Example], evidence: Sequence[frozenset[int]], names: Sequence[str] = FEATURES, k: int = 10
) -> float:
    """The penalty of ``L2_GRID`` with the best recall@k when each training conversation in turn is
    left out of the fit and measured on (ties: the larger penalty)."""
    groups = sorted({e.group for e in examples})
    if len(groups) < 2:
        return 1.0
    best: tuple[float, float] | None = None
    for l2 in L2_GRID:
        found = 0.0
        for g in groups:
            train = [e for e in examples if e.group != g]
            held = [(e, ev) for e, ev in zip(examples, evidence, strict=True) if e.group == g]
            model = fit(train, names, l2)
            found += recall_at([e for e, _ in held], model, [ev for _, ev in held], k) * len(held)
        if best is None or found >= best[0]:
            best = (found, l2)
    assert best is not None
    return best[1]


def main(argv: Sequence[str] | None = None) -> int:
    from bench import recall_folds
    from bench.common import ROOT

    parser = argparse.ArgumentParser(prog="python -m bench.rerank_train", description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="a folder of LoCoMo conversations (the development half)")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "sync" / "search" / "query" / "ranking" / "rerank_model.json"
    )
    parser.add_argument("--calendar", action="store_true", help="train on the calendar-keeping placement")
    args = parser.parse_args(argv)
    lab = recall_folds.Lab.load(args.data, calendar=args.calendar)
    examples, evidence = lab.examples(lab.questions_of(None))
    l2 = choose_l2(examples, evidence)
    model = fit(
        examples,
        FEATURES,
        l2,
        notes={
            "recipe": f"python -m bench.rerank_train LOCOMO_DEV{' --calendar' if args.calendar else ''}",
            "data": f"LoCoMo, conversations {', '.join(sorted({e.group for e in examples}))}; "
            f"{len(examples)} questions, {sum(len(e.ids) for e in examples)} candidates",
            "l2": l2,
            "placement": lab.placement,
        },
    )
    args.out.write_text(json.dumps(model.to_json(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out} (l2 {l2}):")
    for name, weight in zip(model.features, model.weights, strict=True):
        print(f"  {name:14s} {weight:+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
