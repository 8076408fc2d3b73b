"""Salience as a ranking signal, measured on LoCoMo's development half: does weighing what the fleet
used (``sync.policy.salience``, ``sync.search.query.ranking.rank.apply_salience``) cost recall?

The ranking is the product's (the shipped learned model over the store's prefetched lists, the
recency decay and the near-duplicate collapse, as ``bench.recall_folds`` runs it), with and without
the salience factor. Use is simulated the way agents make it: each conversation's questions are
split in two by their order; the first of each pair is "asked earlier", and the memories a context
block would have handed over for it (its first ``HANDED`` results) are recorded as uses a day
before the clock; recall is measured on the other questions only, whose answers were never used
on purpose. Variants:

- **off**: the ranking as shipped, no salience;
- **no use yet**: salience on, nothing used (a new install): only the untouched decay from each
  memory's age moves results;
- **used, age decay too**: salience on, with the simulated uses, a never-used memory decayed by its
  age as the policy decays it for display;
- **used, as shipped (no age decay)**: the same, a never-used memory at the initial value (its age
  is the recency decay's): what the search weighs (``sync.usage.table``).

Recall on salience must not fall: the figures' target is the "off" figure less half a point (the
noise of one question's evidence share among 379).

    python -m bench.salience_lab /work/shared/data/locomo-dev [--out FILE.md]

Both placements of ``bench.recall_folds`` (sessions shifted to end an hour before the clock, and
moved by whole years with their dates kept).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import numpy as np

from bench import recall_pool
from bench.common import Figure, at_least, emit, result
from bench.recall_folds import KS, LIMIT, Lab, recall_rows
from sync.policy.salience import DAY_MS, DEFAULT_PARAMS, Use, salience
from sync.search.query.ranking.rank import Ranked, apply_decay, apply_salience, collapse_duplicates

SHIPPED: Final = "used, as shipped (no age decay)"  # what sync.usage.table gives the search
HANDED: Final = 5  # memories a context block hands over for a question, about
NOW_MS: Final = recall_pool.NOW_S * 1000

SalienceOf = Callable[[int], float] | None


def ranker(lab: Lab, salience_of: SalienceOf) -> Callable[[int], list[int]]:
    """The product's ranking of a question (shipped model, decay, salience if given, collapse)."""
    from sync.search.query.ranking.learned import Gathered, ordered, shipped_model
    from sync.search.query.ranking.rerank_model import DEPTH
    from sync.search.stores import Scored

    model = shipped_model()
    c = lab.corpus

    def rank(qi: int) -> list[int]:
        p = c.pools[qi]
        dense = [Scored(str(t), float(s)) for t, s in zip(p.dense[:DEPTH], p.dense_scores[:DEPTH], strict=True)]
        sparse = [Scored(str(t), float(s)) for t, s in zip(p.sparse[:DEPTH], p.sparse_scores[:DEPTH], strict=True)]
        scored = ordered(Gathered(lab.candidates(qi), lab.coverage[qi], {}, dense, sparse), model)
        cosine = c.doc_dense @ c.query_dense[qi]
        ranked = [
            Ranked(
                i,
                s,
                float(cosine[int(i)]),
                c.turns[int(i)].ts_ms,
                {"duplicateOf": str(lab.heads[int(i)]) if int(i) in lab.heads else None},
            )
            for i, s in scored
        ]
        ranked = apply_decay(ranked, NOW_MS)
        if salience_of is not None:
            ranked = apply_salience(ranked, lambda r: salience_of(int(r.id)), initial=DEFAULT_PARAMS.initial)
        return [int(r.id) for r in collapse_duplicates(ranked)[:LIMIT]]

    return rank


def split(lab: Lab) -> tuple[list[int], list[int]]:
    """Each conversation's questions in order, alternately asked earlier (used) and measured."""
    earlier: list[int] = []
    measured: list[int] = []
    for conv in lab.conversations:
        for n, qi in enumerate(lab.questions_of(conv)):
            (earlier if n % 2 == 0 else measured).append(qi)
    return earlier, measured


def simulated_uses(lab: Lab, earlier: Sequence[int]) -> dict[int, int]:
    """Turn index -> times handed over, by the shipped ranking, for the questions asked earlier."""
    rank = ranker(lab, None)
    handed: dict[int, int] = {}
    for qi in earlier:
        for t in rank(qi)[:HANDED]:
            handed[t] = handed.get(t, 0) + 1
    return handed


def salience_from(lab: Lab, handed: Mapping[int, int], *, age_decay: bool) -> Callable[[int], float]:
    turns = lab.corpus.turns
    used_at = NOW_MS - DAY_MS

    def of(t: int) -> float:
        count = handed.get(t, 0)
        written = turns[t].ts_ms if age_decay else None
        use = Use({"context": count}, used_at if count else None, written_ms=written)
        return salience(use, NOW_MS)

    return of


def measure(data: Path, *, calendar: bool) -> tuple[str, dict[str, np.ndarray]]:
    lab = Lab.load(data, calendar=calendar)
    earlier, measured = split(lab)
    handed = simulated_uses(lab, earlier)
    variants: dict[str, SalienceOf] = {
        "off": None,
        "no use yet": salience_from(lab, {}, age_decay=True),
        "used, age decay too": salience_from(lab, handed, age_decay=True),
        SHIPPED: salience_from(lab, handed, age_decay=False),
    }
    rows = {name: recall_rows(lab, measured, ranker(lab, of)) for name, of in variants.items()}
    title = (
        f"{len(lab.corpus.turns)} turns; {len(earlier)} questions asked earlier (their first {HANDED} results "
        f"used: {len(handed)} memories), {len(measured)} measured; {lab.placement} placement"
    )
    return title, rows


def table(rows: Mapping[str, np.ndarray]) -> str:
    head = "| salience | " + " | ".join(f"R@{k}" for k in KS) + " | ΔR@10 vs off |"
    lines = [head, "|" + "---|" * (len(KS) + 2)]
    base = rows["off"].mean(axis=0)
    for name, r in rows.items():
        mean = r.mean(axis=0)
        cells = " | ".join(f"{100 * v:.1f}" for v in mean)
        lines.append(f"| {name} | {cells} | {100 * (mean[1] - base[1]):+.1f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.salience_lab", description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="a folder of LoCoMo conversations (the development half)")
    parser.add_argument("--out", type=Path, help="also write the table here (markdown)")
    args = parser.parse_args(argv)
    parts = ["### Salience on LoCoMo's development half"]
    found: list[Figure] = []
    runs: list[dict[str, Any]] = []
    for calendar in (False, True):
        title, rows = measure(args.data, calendar=calendar)
        parts += [title, table(rows)]
        placement = "calendar" if calendar else "shifted"
        off, on = rows["off"].mean(axis=0), rows[SHIPPED].mean(axis=0)
        runs.append(
            {
                "placement": placement,
                **{name: [float(round(100 * v, 1)) for v in r.mean(axis=0)] for name, r in rows.items()},
            }
        )
        for i, k in enumerate(KS):
            found.append(Figure(f"R@{k}, {placement}: salience off", float(round(100 * off[i], 1)), "%"))
            found.append(
                at_least(
                    f"R@{k}, {placement}: salience on (as shipped)",
                    float(round(100 * on[i], 1)),
                    "%",
                    float(round(100 * off[i], 1)) - 0.5,
                )
            )
    text = "\n\n".join(parts) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    emit(result("salience", {"locomo": args.data.name, "handed": HANDED}, runs, found))
    return 0


def describe_run(r: dict[str, Any]) -> str:
    """One placement's recall at 5/10/25/50, off and as shipped."""
    return f"{r['placement']}: off {'/'.join(map(str, r['off']))}, on {'/'.join(map(str, r[SHIPPED]))}"


if __name__ == "__main__":
    sys.exit(main())
