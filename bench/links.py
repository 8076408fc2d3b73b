"""Links on LoCoMo's development half: are the evidence turns of a multi-hop question one another's
neighbours (``related``), and what does following one hop from the best hits (``search --follow``)
do to recall, per category.

The turns are written as ``bench/judgement_lab.py`` writes them (``bench/recall.py``'s episodes:
task ``"<speaker>: <text>"``, session ``<conv>-s<N>``, tag ``<conv>``, each conversation's newest
session an hour before a fixed clock, 30 s between turns), each with ``metadata.entities`` the
identifiers its text names (``sync.identifiers``, standing in for the episode's own
``entities`` field until it lands), pushed into a real embedded hub and indexed from its change
feed by the real ``Indexer`` (the product's ``LocalEmbedder``, vectors cached in ``bench/.cache/``),
which also records its near-duplicates as ``similar_to`` links.

- **related**: for every multi-hop question (category 1) with two evidence turns or more, each
  evidence turn's ``related`` (the hub's, limit 20): the share of evidence turns with another of
  their question's evidence among their neighbours, the share of questions where one evidence turn
  reaches another, which kinds made the link, and beside them what 20 turns of the conversation
  drawn at random would reach (the chance rate, computed exactly).
- **one hop**: every question of categories 1-4 through the product's ``search`` in this process
  (``-n 50``, the conversation's tag, no relevance floor: the ranking as ``recall``'s ``uncut``
  mode measures it), without and with ``follow``; recall@k (the share of a question's evidence
  turns in its first k results) per category.

    python -m bench.links LOCOMO_DEV [--out bench/results/links.md]
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from bench.common import ROOT, Figure, emit, progress, result
from bench.judgement_lab import NOW_MS, CachedEmbedder, LabEpisode, LabQuery, indexed_hub, locomo_set

KS: Final = (5, 10, 25, 50)
LIMIT: Final = 50
RELATED: Final = 20
CATEGORIES: Final = {"1": "multi-hop", "2": "temporal", "3": "open-domain", "4": "single-hop"}
OUT: Final = ROOT / "bench" / "results" / "links.md"


def _with_entities(episodes: Sequence[LabEpisode]) -> list[LabEpisode]:
    from sync.identifiers import identifiers

    out = []
    for e in episodes:
        named = sorted({x.casefold() for x in identifiers(str(e.fields.get("task") or ""))})
        out.append(LabEpisode(e.source_id, {**e.fields, "metadata": {"entities": named}}))
    return out


def _chance(turns: int, others: int, drawn: int = RELATED) -> float:
    """The chance that ``drawn`` turns of ``turns - 1`` (all but this one), drawn at random, hold at
    least one of ``others``."""
    pool = turns - 1
    if others <= 0 or drawn <= 0:
        return 0.0
    if pool - others < drawn:
        return 1.0
    return 1.0 - math.comb(pool - others, drawn) / math.comb(pool, drawn)


def measure_related(hub: Any, episodes: Sequence[LabEpisode], queries: Sequence[LabQuery]) -> dict[str, Any]:
    site = hub.site
    size = Counter(e.source_id.split(":", 1)[0] for e in episodes)
    evidence_turns = reached_turns = questions = reached_questions = 0
    chance_turns = 0.0
    kinds: Counter[str] = Counter()
    for q in queries:
        if q.kind != "1" or len(q.relevant) < 2:
            continue
        questions += 1
        reached_any = False
        for turn in sorted(q.relevant):
            others = q.relevant - {turn}
            try:
                links = hub.related(site, turn, RELATED)
            except Exception:  # an evidence id naming no turn (the data's typo): not counted
                continue
            evidence_turns += 1
            chance_turns += _chance(size[q.fold], len(others))
            hits = [link for link in links if link.other.source_id in others]
            if hits:
                reached_turns += 1
                reached_any = True
                kinds.update({link.kind for link in hits})
        reached_questions += reached_any
    return {
        "questions": questions,
        "evidence_turns": evidence_turns,
        "turn_share": 100.0 * reached_turns / max(evidence_turns, 1),
        "question_share": 100.0 * reached_questions / max(questions, 1),
        "chance_share": 100.0 * chance_turns / max(evidence_turns, 1),
        "kinds": dict(kinds),
    }


def measure_search(store: Any, embedder: Any, queries: Sequence[LabQuery], follow: bool) -> dict[str, dict[int, float]]:
    from sync.search.query.pipeline import search
    from sync.search.request import SearchFilter, SearchRequest

    sums: dict[str, dict[int, float]] = defaultdict(lambda: dict.fromkeys(KS, 0.0))
    counts: Counter[str] = Counter()
    for q in queries:
        if q.kind not in CATEGORIES or not q.relevant:
            continue
        request = SearchRequest(q.text, limit=LIMIT, filter=SearchFilter(tags=q.tags), floor=0.0, follow=follow)
        found = [r.source_id for r in search(store, embedder, request, now_ms=NOW_MS)]
        counts[q.kind] += 1
        counts["all"] += 1
        for k in KS:
            share = len(q.relevant & set(found[:k])) / len(q.relevant)
            sums[q.kind][k] += share
            sums["all"][k] += share
    return {kind: {k: 100.0 * v / counts[kind] for k, v in by_k.items()} for kind, by_k in sums.items()}


def run(folder: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    episodes, queries = locomo_set(folder)
    episodes = _with_entities(episodes)
    embedder = CachedEmbedder()
    started = time.monotonic()
    progress(f"pushing and indexing {len(episodes)} turns")
    with indexed_hub(episodes, embedder) as (hub, store):
        progress("related: the multi-hop questions' evidence turns")
        t0 = time.monotonic()
        related = measure_related(hub, episodes, queries)
        related["seconds"] = round(time.monotonic() - t0, 1)
        progress("search without and with one hop")
        before = measure_search(store, embedder, queries, follow=False)
        after = measure_search(store, embedder, queries, follow=True)
        embedder.cache.save()
    return related, {"before": before, "after": after, "seconds": round(time.monotonic() - started)}


def render(related: dict[str, Any], search: dict[str, Any], load: Sequence[float]) -> str:
    lines = [
        "# Links on LoCoMo's development half",
        "",
        "`python -m bench.links LOCOMO_DEV` (bench/links.py; conversations 26, 30, 41, 42, 43). "
        f"Load average as it ended: {'/'.join(f'{x:.1f}' for x in load)}.",
        "",
        "## Are a multi-hop question's evidence turns one another's neighbours?",
        "",
        f"{related['questions']} multi-hop questions with two evidence turns or more, {related['evidence_turns']} "
        f"evidence turns; each turn's `related` on the embedded hub (limit {RELATED}), {related['seconds']} s in all.",
        "",
        "| measure | share |",
        "|---|---|",
        f"| evidence turns with another of their question's evidence among their neighbours | "
        f"{related['turn_share']:.1f} % |",
        f"| questions where one evidence turn reaches another | {related['question_share']:.1f} % |",
        f"| the same for {RELATED} turns of the conversation drawn at random (chance) | "
        f"{related['chance_share']:.1f} % |",
        "",
        "Kinds that made the links (evidence turns reached by each): "
        + (", ".join(f"{k} {v}" for k, v in sorted(related["kinds"].items())) or "none"),
        "",
        "## Recall with one hop from the best hits (`search --follow`)",
        "",
        "Every question of categories 1-4 through `sync.search.query.pipeline.search` in this process, "
        f"`-n {LIMIT}`, the conversation's tag, no relevance floor; recall@k in percent, without -> with one hop.",
        "",
        "| category | " + " | ".join(f"R@{k}" for k in KS) + " |",
        "|---|" + "---|" * len(KS),
    ]
    for kind in [*CATEGORIES, "all"]:
        name = CATEGORIES.get(kind, "all")
        cells = [f"{search['before'][kind][k]:.1f} -> {search['after'][kind][k]:.1f}" for k in KS]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def describe_run(run: dict[str, Any]) -> str:
    """One run in a few words, for BENCHMARKS.md's repetitions."""
    before, after = run["before"]["all"], run["after"]["all"]
    return (
        f"related: {run['turn_share']:.1f}% of {run['evidence_turns']} multi-hop evidence turns reach another "
        f"(chance {run['chance_share']:.1f}%), kinds {run['kinds']}; R@5/10 all {before['5']:.1f}/{before['10']:.1f} "
        f"-> {after['5']:.1f}/{after['10']:.1f} with --follow; {run['seconds']} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("locomo", type=Path, help="a folder of LoCoMo conversations (the development half)")
    parser.add_argument("--out", type=Path, default=OUT, help="the markdown results (default: bench/results/links.md)")
    args = parser.parse_args(argv)
    related, search = run(args.locomo)
    figures = [
        Figure("multi-hop evidence turns reaching another (related, 20)", round(related["turn_share"], 1), "%"),
        Figure("multi-hop questions with one evidence turn reaching another", round(related["question_share"], 1), "%"),
        Figure("the same by chance (20 random turns)", round(related["chance_share"], 1), "%"),
    ]
    for kind in ("1", "all"):
        name = CATEGORIES.get(kind, "all")
        for k in (5, 10):
            figures.append(Figure(f"R@{k} {name}, no hop", round(search["before"][kind][k], 1), "%"))
            figures.append(Figure(f"R@{k} {name}, one hop (--follow)", round(search["after"][kind][k], 1), "%"))
    res = result(
        "links",
        {"locomo": args.locomo.name, "related_limit": RELATED, "depth": LIMIT},
        [{**related, **search}],
        figures,
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(related, search, res["load"]), encoding="utf-8")
    emit(res)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
