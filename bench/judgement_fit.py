"""The recipe of search's relevance (``sync/search/query/relevance_model.json``), its folds and its floor.

Reads what ``bench.judgement_lab`` captured (every set's queries searched in process, each hit's
``why`` and whether it is relevant) and fits ``sync.search.query.judgement``'s calibration: a
logistic regression over ``judgement.features`` (standardised; L2 on the weights, not the bias),
every set weighing the same in the fit (LoCoMo's 38,000 hits would otherwise drown the coding-agent
sets' 2,000), each query's hits sharing its set's weight alike. Nothing is measured on what it was
fitted on:

- **LoCoMo**, leave one conversation out: fitted on the other four, the labelled search set and
  the context set's tune half; measured on the conversation left out (the ranking of its questions
  by a model that never saw it either: ``bench.judgement_lab``);
- **the labelled search set**, by halves: fitted on LoCoMo, the other half and the context tune half;
- **the context set's check half**: fitted on everything else; never used to choose anything.

The feature set and the penalty are chosen by the mean held-out log loss over the LoCoMo folds and
the search set's halves. The search's **floor** (``Calibration.cutoff``) is the highest of
``FLOORS`` that, held out, keeps 99.5% of the relevant results among every set's first ten and
costs LoCoMo at most half a point of recall at every k (5, 10, 25, 50): an agent loses no answer
to it; the figures at every floor are printed.

    python -m bench.judgement_fit CAPTURE.json [--out sync/search/query/relevance_model.json] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from bench.common import progress
from bench.rerank_train import _newton
from sync.search.query.judgement import FEATURES, Calibration, features, shares
from sync.search.request import Why

KS: Final = (5, 10, 25, 50)
L2_GRID: Final = (0.1, 1.0, 10.0)
FEATURE_SETS: Final[dict[str, tuple[str, ...]]] = {
    "all": FEATURES,
    "no learned": tuple(f for f in FEATURES if f != "learned"),
    "no fused": tuple(f for f in FEATURES if f != "fused"),
    "no lead": tuple(f for f in FEATURES if f != "lead"),
    "no meaning": tuple(f for f in FEATURES if f != "meaning"),
    "meaning and terms": ("meaning", "coverage", "exact", "lookalike"),
    "learned alone": ("learned", "fused"),
}
FLOORS: Final = (1e-6, 0.0002, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5)
KEEP_RELEVANT: Final = 0.995  # the floor keeps this share of the relevant results among every set's first ten
LOCOMO_COST: Final = 0.5  # ...and costs LoCoMo at most this many points of recall at every k, held out
MINILM: Final = "all-MiniLM-L6-v2-onnx-int8@8199be6f699a"
Matrix = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Hit:
    query: int  # index of its query in the capture
    rank: int  # its place in the results, from 0
    why: Why
    relevant: bool


@dataclass(frozen=True, slots=True)
class Query:
    set: str
    id: str
    fold: str
    kind: str
    relevant: frozenset[str]
    hits: tuple[Hit, ...]
    ids: tuple[str, ...]  # the results' source ids, in order


def load(path: Path) -> list[Query]:
    out = []
    for n, q in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        relevant = frozenset(q["relevant"])
        results = q["answer"]["results"]
        hits = tuple(Hit(n, rank, Why.from_wire(r["why"]), r["sourceId"] in relevant) for rank, r in enumerate(results))
        out.append(
            Query(q["set"], q["id"], q["fold"], q["kind"], relevant, hits, tuple(r["sourceId"] for r in results))
        )
    return out


# -- the embedder's floor ------------------------------------------------------------------------------
def minilm_floor(locomo: Path) -> float:
    """The cosine that a LoCoMo question reaches with turns of the other conversations 1 time in 20."""
    from bench.judgement_lab import CachedEmbedder, locomo_set
    from sync.search.indexing.text import episode_text

    episodes, queries = locomo_set(locomo)
    embedder = CachedEmbedder()
    docs = np.asarray(embedder.embed_documents([episode_text(e.fields) for e in episodes]))
    asked = np.asarray(embedder.embed_queries([q.text for q in queries]))
    conv_of_doc = np.array([e.source_id.split(":", 1)[0] for e in episodes])
    cosines = []
    for qi, q in enumerate(queries):
        other = docs[conv_of_doc != q.fold]
        cosines.append(other @ asked[qi])
    return float(np.percentile(np.concatenate(cosines), 95))


# -- fitting -------------------------------------------------------------------------------------------
def rows_of(queries: Sequence[Query], floor: float) -> tuple[Matrix, npt.NDArray[np.float64], list[Hit]]:
    """The hits that share something with their query (the others' relevance is 0, by rule)."""
    hits = [h for q in queries for h in q.hits if shares(h.why, floor)]
    x = np.array([[features(h.why, floor)[f] for f in FEATURES] for h in hits], dtype=np.float64)
    y = np.array([1.0 if h.relevant else 0.0 for h in hits])
    return x.reshape(len(hits), len(FEATURES)), y, hits


def set_weights(queries: Sequence[Query], hits: Sequence[Hit]) -> npt.NDArray[np.float64]:
    """Every set weighs the same; within a set, every query the same, shared by its hits."""
    sets = sorted({q.set for q in queries})
    count = {s: sum(1 for q in queries if q.set == s) for s in sets}
    total = len(hits)
    per_set = total / len(sets)
    out = np.empty(len(hits))
    for i, h in enumerate(hits):
        q = queries_by_index[h.query]
        out[i] = per_set / count[q.set] / max(1, len(q.hits))
    return out


queries_by_index: dict[int, Query] = {}


def fit(queries: Sequence[Query], names: Sequence[str], l2: float, floor: float, cutoff: float = 0.0) -> Calibration:
    x, y, hits = rows_of(queries, floor)
    columns = [FEATURES.index(n) for n in names]
    x = x[:, columns]
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    z = np.hstack([(x - mean) / scale, np.ones((len(x), 1))])
    penalty = np.r_[np.full(len(names), l2), 0.0]
    w = _newton(z, y, set_weights(queries, hits), penalty, np.zeros(z.shape[1]))
    return Calibration(
        tuple(names),
        tuple(float(v) for v in mean),
        tuple(float(v) for v in scale),
        tuple(float(v) for v in w[:-1]),
        float(w[-1]),
        {MINILM: floor},
        cutoff,
    )


def predict(cal: Calibration, queries: Sequence[Query], floor: float) -> dict[tuple[int, int], float]:
    out = {}
    for q in queries:
        for h in q.hits:
            out[h.query, h.rank] = cal.relevance(features(h.why, floor)) if shares(h.why, floor) else 0.0
    return out


# -- measuring -----------------------------------------------------------------------------------------
def log_loss(pred: Mapping[tuple[int, int], float], queries: Sequence[Query]) -> float:
    """Mean per query of its hits' mean log loss (each query weighs the same)."""
    losses = []
    for q in queries:
        if not q.hits:
            continue
        values = [-math.log(max(1e-12, p if h.relevant else 1 - p)) for h in q.hits for p in [pred[h.query, h.rank]]]
        losses.append(sum(values) / len(values))
    return sum(losses) / max(1, len(losses))


def recall(queries: Sequence[Query], kept: Callable[[Query], Sequence[str]], k: int) -> float:
    """LoCoMo's R@k (percent): the mean share of a question's evidence among the first k kept."""
    values = [len(q.relevant & set(kept(q)[:k])) / len(q.relevant) for q in queries if q.relevant]
    return 100 * sum(values) / max(1, len(values))


def kept_ids(pred: Mapping[tuple[int, int], float], floor: float) -> Callable[[Query], list[str]]:
    def keep(q: Query) -> list[str]:
        return [i for h, i in zip(q.hits, q.ids, strict=True) if pred[h.query, h.rank] >= floor]

    return keep


def relevant_kept(
    pred: Mapping[tuple[int, int], float], queries: Sequence[Query], floor: float, top: int = 10
) -> float:
    """The share of relevant results among each query's first ``top`` that the floor keeps."""
    total = kept = 0
    for q in queries:
        for h in q.hits[:top]:
            if h.relevant:
                total += 1
                kept += pred[h.query, h.rank] >= floor
    return kept / total if total else 1.0


def nothing_share(pred: Mapping[tuple[int, int], float], queries: Sequence[Query], floor: float) -> float:
    """The share of queries that should get nothing whose every result is under the floor."""
    wanted = [q for q in queries if not q.relevant]
    return sum(1 for q in wanted if all(pred[h.query, h.rank] < floor for h in q.hits)) / max(1, len(wanted))


def shown_per_query(pred: Mapping[tuple[int, int], float], queries: Sequence[Query], floor: float, top: int) -> float:
    return sum(sum(1 for h in q.hits[:top] if pred[h.query, h.rank] >= floor) for q in queries) / max(1, len(queries))


@dataclass
class Folds:
    """Held-out relevance for every hit: each fold's model predicts its own held-out queries."""

    pred: dict[tuple[int, int], float]
    loss: dict[str, float]


def held_out(queries: Sequence[Query], names: Sequence[str], l2: float, floor: float) -> Folds:
    pred: dict[tuple[int, int], float] = {}
    loss: dict[str, float] = {}
    tests: list[tuple[str, Callable[[Query], bool]]] = []
    for conv in sorted({q.fold for q in queries if q.set == "locomo"}):
        tests.append((f"locomo {conv}", lambda q, c=conv: q.set == "locomo" and q.fold == c))  # type: ignore[misc]
    for half in ("a", "b"):
        tests.append((f"warm {half}", lambda q, h=half: q.set == "warm" and q.fold == h))  # type: ignore[misc]
    tests.append(("context tune", lambda q: q.set == "context" and q.fold == "tune"))
    tests.append(("context check", lambda q: q.set == "context" and q.fold == "check"))
    for name, is_test in tests:
        test = [q for q in queries if is_test(q)]
        # The check half is never fitted on; the tune half is held out from itself (LoCoMo and
        # the search set alone predict it).
        train = [q for q in queries if not is_test(q) and not (q.set == "context" and q.fold == "check")]
        if name == "context tune":
            train = [q for q in train if q.set != "context"]
        if not test:
            continue
        cal = fit(train, names, l2, floor)
        fold_pred = predict(cal, test, floor)
        pred |= fold_pred
        loss[name] = log_loss(fold_pred, test)
    return Folds(pred, loss)


def choice_loss(folds: Folds) -> float:
    """What the feature set and penalty are chosen by: LoCoMo's folds and the search set's halves."""
    chosen = [v for k, v in folds.loss.items() if not k.startswith("context")]
    return sum(chosen) / len(chosen)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.judgement_fit", description=__doc__.split("\n")[0])
    parser.add_argument("capture", type=Path, help="bench.judgement_lab's capture")
    parser.add_argument("--locomo", type=Path, help="LoCoMo's development half, to measure the embedder's floor")
    parser.add_argument("--embedder-floor", type=float, help="MiniLM's floor, when measured already (skips --locomo)")
    parser.add_argument("--out", type=Path, help="write the calibration here (sync/search/query/relevance_model.json)")
    parser.add_argument("--markdown", type=Path, help="write the figures here as markdown tables")
    args = parser.parse_args(argv)
    queries = load(args.capture)
    queries_by_index.update(enumerate(queries))
    if args.embedder_floor is None and args.locomo is None:
        parser.error("give --locomo (to measure the embedder's floor) or --embedder-floor")
    floor = args.embedder_floor if args.embedder_floor is not None else minilm_floor(args.locomo)
    progress(f"MiniLM's floor (95th percentile of unrelated cosines): {floor:.3f}")
    results: dict[tuple[str, float], Folds] = {}
    for name, names in FEATURE_SETS.items():
        for l2 in L2_GRID:
            results[name, l2] = held_out(queries, names, l2, floor)
            f = results[name, l2]
            losses = " ".join(f"{k.split()[-1]}:{v:.4f}" for k, v in f.loss.items())
            print(f"{name:18s} l2 {l2:5g}: choice {choice_loss(f):.4f}  {losses}")
    best_name, best_l2 = min(results, key=lambda k: (choice_loss(results[k]), -k[1]))
    folds = results[best_name, best_l2]
    print(f"\nchosen: {best_name}, l2 {best_l2}")
    cutoff = choose_floor(queries, folds)
    markdown = report(queries, folds, results, (best_name, best_l2))
    markdown += f"\nThe search's floor, chosen as the module says: {cutoff:g}. MiniLM's cosine floor: {floor:.3f}.\n"
    print(markdown)
    if args.markdown is not None:
        args.markdown.write_text(markdown, encoding="utf-8")
    if args.out is not None:
        trained = [q for q in queries if not (q.set == "context" and q.fold == "check")]
        cal = fit(trained, FEATURE_SETS[best_name], best_l2, floor, cutoff)
        medians = [
            h.why.meaning - h.why.lead
            for q in queries
            for h in q.hits[:1]
            if h.why.lead is not None and h.why.meaning is not None
        ]
        loss = {k: round(v, 4) for k, v in folds.loss.items()}
        cal = replace(
            cal,
            median_above_floor=float(np.mean(medians)) - floor,
            notes={
                "recipe": "python -m bench.judgement_lab LOCOMO_DEV --out CAPTURE; "
                "python -m bench.judgement_fit CAPTURE --locomo LOCOMO_DEV",
                "data": f"{sum(1 for q in trained if q.set == 'locomo')} LoCoMo questions (development half), "
                f"{sum(1 for q in trained if q.set == 'warm')} of tests/data/warm_relevance.json, "
                f"{sum(1 for q in trained if q.set == 'context')} of tests/data/context_set.json (tune half)",
                "features": best_name,
                "l2": best_l2,
                "held_out_log_loss": loss,
                "floor": "MiniLM's: the 95th percentile of LoCoMo questions' cosines to other conversations' turns",
            },
        )
        args.out.write_text(json.dumps(cal.to_json(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


def choose_floor(queries: Sequence[Query], folds: Folds) -> float:
    """The highest of ``FLOORS`` that keeps ``KEEP_RELEVANT`` of every set's relevant results among
    its first ten and costs LoCoMo at most ``LOCOMO_COST`` at every k, held out."""
    locomo = [q for q in queries if q.set == "locomo"]
    base = [recall(locomo, lambda q: list(q.ids), k) for k in KS]
    chosen = 0.0
    for f in FLOORS:
        keep = kept_ids(folds.pred, f)
        costs = [b - recall(locomo, keep, k) for b, k in zip(base, KS, strict=True)]
        kept = [relevant_kept(folds.pred, [q for q in queries if q.set == s], f) for s in ("locomo", "warm", "context")]
        if max(costs) <= LOCOMO_COST and min(kept) >= KEEP_RELEVANT:
            chosen = f
    return chosen


SETS: Final = ("locomo", "warm", "context")
BINS: Final = (0.0, 0.001, 0.01, 0.05, 0.2, 0.5, 0.8, 1.0)


def noise_cut(pred: Mapping[tuple[int, int], float], queries: Sequence[Query], floor: float, top: int = 10) -> float:
    """The share of the results that are not relevant, among each query's first ``top``, that the floor cuts."""
    values = [pred[h.query, h.rank] < floor for q in queries for h in q.hits[:top] if not h.relevant]
    return sum(values) / len(values) if values else 0.0


def report(
    queries: Sequence[Query], folds: Folds, results: Mapping[tuple[str, float], Folds], chosen: tuple[str, float]
) -> str:
    """The figures, as markdown: every fold's held-out loss, the calibration's reliability, and
    what each floor keeps and cuts."""
    by_set = {s: [q for q in queries if q.set == s] for s in SETS}
    locomo = by_set["locomo"]
    context_check = [q for q in by_set["context"] if q.fold == "check"]
    lines = ["### Held-out log loss per fold (lower is better; each query weighs the same)", ""]
    folds_named = list(folds.loss)
    lines.append("| features | l2 | " + " | ".join(folds_named) + " |")
    lines.append("|---|---|" + "---|" * len(folds_named))
    for (name, l2), measured in sorted(results.items(), key=lambda kv: choice_loss(kv[1])):
        mark = " (chosen)" if (name, l2) == chosen else ""
        losses = " | ".join(f"{measured.loss[k]:.4f}" for k in folds_named)
        lines.append(f"| {name}{mark} | {l2:g} | {losses} |")
    lines += ["", "### Reliability, held out: predicted against observed share relevant (first ten of each query)", ""]
    lines.append("| relevance | " + " | ".join(f"{s}: hits, predicted, observed" for s in SETS) + " |")
    lines.append("|---|" + "---|" * len(SETS))
    for low, high in [(0.0, 0.0), *itertools.pairwise(BINS)]:
        cells = []
        for s in SETS:
            hits = [
                h
                for q in by_set[s]
                for h in q.hits[:10]
                if (folds.pred[h.query, h.rank] == 0.0 if high == 0.0 else low < folds.pred[h.query, h.rank] <= high)
            ]
            if not hits:
                cells.append("0")
                continue
            predicted = sum(folds.pred[h.query, h.rank] for h in hits) / len(hits)
            observed = sum(h.relevant for h in hits) / len(hits)
            cells.append(f"{len(hits)}, {predicted:.3f}, {observed:.3f}")
        label = "0 (shares nothing)" if high == 0.0 else f"{low:g}-{min(high, 1.0):g}"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    base = [recall(locomo, lambda q: list(q.ids), k) for k in KS]
    lines += ["", "### What each floor keeps and cuts, held out", ""]
    lines.append(
        "| floor | LoCoMo R@5 / 10 / 25 / 50 | relevant kept in the first 10: LoCoMo / search set / context set "
        "| not relevant cut: LoCoMo / search set / context set | shown of 10: LoCoMo / labelled sets "
        "| context check, should get nothing: all cut |"
    )
    lines.append("|---|---|---|---|---|---|")
    labelled = by_set["warm"] + by_set["context"]
    lines.append("| none | " + " / ".join(f"{v:.1f}" for v in base) + " | 100 / 100 / 100 | 0 / 0 / 0 | | |")
    for f in FLOORS:
        keep = kept_ids(folds.pred, f)
        rk = [recall(locomo, keep, k) for k in KS]
        kept = [100 * relevant_kept(folds.pred, by_set[s], f) for s in SETS]
        cut = [100 * noise_cut(folds.pred, by_set[s], f) for s in SETS]
        shown = f"{shown_per_query(folds.pred, locomo, f, 10):.1f} / {shown_per_query(folds.pred, labelled, f, 10):.1f}"
        lines.append(
            f"| {f:g} | "
            + " / ".join(f"{v:.1f}" for v in rk)
            + " | "
            + " / ".join(f"{v:.1f}" for v in kept)
            + " | "
            + " / ".join(f"{v:.0f}" for v in cut)
            + f" | {shown} | {100 * nothing_share(folds.pred, context_check, f):.0f}% |"
        )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
