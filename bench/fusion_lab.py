"""Fusion variants, measured in process: LoCoMo's dialog turns and the project's labelled set.

A fast loop for tuning ``sync.search.query.ranking.fusion`` and ``sync.search.query.ranking.rank``
(the CLI benchmark that an agent's experience is judged by is ``bench/recall.py``). Both sets go
through the product's own parts:

- LoCoMo (a folder in its format, e.g. the development half; see its README for where the public
  set lives): each dialog turn is an episode (task ``"<speaker>: <text>"``, plus `` [shares a photo
  of <caption>]`` when it has one; session ``<conv>-s<N>``; tag ``<conv>``; time from the session's
  date, shifted so the newest session of all is an hour before a fixed clock, 30 s between turns;
  the turn's ``dia_id`` in its metadata), converted by the sync engine (``sync.source.agentdb.rows.convert``),
  pushed to an embedded hub (``HubBackbone``) and indexed by the real ``Indexer`` with
  ``LocalEmbedder`` into an embedded qdrant-edge collection, cached under ``bench/.cache/``.
  Each question of categories 1-4 with evidence is then searched by ``sync.search.query.pipeline.search``
  (the conversation as the tag filter, limit 50) per variant; recall@k is the share of the
  question's evidence turns among the first k results, averaged over the questions.
- The labelled set (``tests/data/warm_relevance.json``): MRR@10 overall, on exact identifiers and on
  paraphrases, through the same ``search`` per variant.

    python -m bench.fusion_lab /work/shared/data/locomo-dev [--variants NAME ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench import recall
from bench.common import CACHE, ROOT, progress
from sync.search.request import Mode

NOW_MS: Final = 1_790_000_000_000  # the fixed clock: searches run "now"
HOUR_MS: Final = 3_600_000
TURN_MS: Final = 30_000
SITE: Final = "locomo"
COLLECTION: Final = "locomo"
KS: Final = (5, 10, 25, 50)
LIMIT: Final = 50
CATEGORIES: Final = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
LABELLED: Final = ROOT / "tests" / "data" / "warm_relevance.json"


# -- the data ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Turn:
    conv: str
    session: int
    dia_id: str
    task: str
    ts_ms: int


@dataclass(frozen=True, slots=True)
class Question:
    conv: str
    text: str
    evidence: frozenset[str]
    category: int


def load_locomo(folder: Path) -> tuple[list[Turn], list[Question]]:
    """The conversations as ``bench.recall`` reads them (its turn text too), each turn's time its
    session's shifted so that the newest session of all began an hour before ``NOW_MS``."""
    conversations = recall.load_locomo(folder)
    newest = max(s.began for c in conversations for s in c.sessions)
    shift_ms = NOW_MS - HOUR_MS - int(newest.timestamp() * 1000)
    turns = [
        Turn(c.name, s.number, t.dia_id, recall.turn_task(t), int(s.began.timestamp() * 1000) + shift_ms + i * TURN_MS)
        for c in conversations
        for s in c.sessions
        for i, t in enumerate(s.turns)
    ]
    questions = [Question(c.name, q.text, q.evidence, q.category) for c in conversations for q in c.questions]
    return turns, questions


# -- the index -------------------------------------------------------------------------------------
def build_store(turns: Sequence[Turn], cache: Path) -> tuple[Any, dict[str, str]]:
    """The indexed collection (reused from ``cache`` when built from the same turns) and a map from
    each point's sourceId to its ``<conv>:<dia_id>``."""
    from sync.backbone.base import PushItem
    from sync.backbone.hub import HubBackbone
    from sync.episode import Attribution, Episode
    from sync.search.collection.cursor import CursorFile
    from sync.search.embedders.local import LocalEmbedder
    from sync.search.indexing.indexer import Indexer
    from sync.search.stores import EdgeStore
    from sync.source.agentdb.rows import convert

    keys = {str(i + 1): f"{t.conv}:{t.dia_id}" for i, t in enumerate(turns)}
    digest = hashlib.sha256(json.dumps([[t.conv, t.session, t.dia_id, t.task, t.ts_ms] for t in turns]).encode())
    folder = cache / f"fusion_lab-{digest.hexdigest()[:12]}"
    if not (folder / "done").exists():
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        progress(f"indexing {len(turns)} turns into {folder} (once)")
        hub = HubBackbone(folder / "hub.db", SITE, clock=lambda: NOW_MS)
        store = EdgeStore(folder / "qdrant")
        try:
            items = []
            for i, t in enumerate(turns):
                row = {
                    "id": i + 1,
                    "ts": t.ts_ms // 1000,
                    "session_id": f"{t.conv}-s{t.session}",
                    "task": t.task,
                    "tags": json.dumps([t.conv]),
                    "metadata": json.dumps({"dia_id": t.dia_id}),
                    "created_at": t.ts_ms // 1000,
                }
                episode = convert(row, Attribution(agent_name="locomo"))
                if not isinstance(episode, Episode):
                    raise TypeError(f"the engine rejected turn {t.conv}:{t.dia_id}: {episode}")
                items.append(
                    PushItem(
                        str(i + 1), i + 1, episode.identity_hash, episode.content_hash, episode.fields, episode.body
                    )
                )
            for start in range(0, len(items), 200):
                hub.push(items[start : start + 200], start + len(items[start : start + 200]))
            indexer = Indexer(
                backbone=hub,
                store=store,
                embedder=LocalEmbedder(),
                collection=COLLECTION,
                cursor_file=CursorFile(folder / "indexer.json"),
            )
            report = indexer.run()
            if report.embedded != len(turns) or report.failed:
                raise RuntimeError(f"the indexer did not embed every turn: {report}")
        finally:
            store.close()
            hub.close()
        (folder / "done").write_text("ok\n")
    store = EdgeStore(folder / "qdrant")
    store.open_as_built(COLLECTION)
    return store, keys


class QueryCache:
    """An Embedder that remembers query vectors: the variants ask the same questions many times."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._queries: dict[str, list[float]] = {}
        self.name, self.dims = embedder.name, embedder.dims

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        return list(self._embedder.embed_documents(texts))

    def embed_query(self, text: str) -> list[float]:
        if text not in self._queries:
            self._queries[text] = list(self._embedder.embed_query(text))
        return self._queries[text]


# -- the variants ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Variant:
    name: str
    mode: Mode = "hybrid"
    fusion: Mapping[str, Any] = field(default_factory=dict)  # FusionSpec fields; {} is the default
    decay: bool = True
    collapse: bool = True


def variants() -> list[Variant]:
    out = [Variant("default"), Variant("bm25", mode="bm25"), Variant("dense", mode="dense")]
    for alpha in (0.3, 0.4, 0.5, 0.6, 0.75):
        out.append(Variant(f"relative a={alpha}", fusion={"method": "relative", "alpha": alpha, "head": None}))
    for alpha in (0.5, 0.6, 0.75):
        out.append(Variant(f"relative a={alpha} head=20", fusion={"method": "relative", "alpha": alpha, "head": 20}))
    for head in (10, 30):
        out.append(Variant(f"relative a=0.6 head={head}", fusion={"method": "relative", "alpha": 0.6, "head": head}))
    for k in (2, 10, 60):
        out.append(Variant(f"rrf k={k}", fusion={"method": "rrf", "k": k}))
    for alpha in (0.3, 0.5):
        out.append(Variant(f"wrrf k=60 w={alpha}", fusion={"method": "rrf", "k": 60, "alpha": alpha}))
    for depth in (50, 100, 200):
        out.append(
            Variant(
                f"relative a=0.75 depth={depth}",
                fusion={"method": "relative", "alpha": 0.75, "head": None, "depth": depth},
            )
        )
        out.append(Variant(f"default depth={depth}", fusion={"depth": depth}))
    out.append(Variant("default no decay", decay=False))
    out.append(Variant("default no collapse", collapse=False))
    out.append(
        Variant("relative a=0.75 no decay", fusion={"method": "relative", "alpha": 0.75, "head": None}, decay=False)
    )
    out.append(Variant("bm25 no decay", mode="bm25", decay=False))
    out.append(Variant("dense no decay", mode="dense", decay=False))
    return out


def _search(
    store: Any, embedder: Any, variant: Variant, query: str, tags: tuple[str, ...], limit: int, now_ms: int
) -> list[Any]:
    from sync.search.query.pipeline import search
    from sync.search.query.ranking.fusion import FusionSpec
    from sync.search.request import SearchFilter, SearchRequest

    request = SearchRequest(
        query, limit=limit, filter=SearchFilter(tags=tags), collapse=variant.collapse, mode=variant.mode
    )
    return search(store, embedder, request, now_ms=now_ms, fusion=FusionSpec(**variant.fusion), decay=variant.decay)


@dataclass(slots=True)
class Recall:
    sums: dict[tuple[int | None, int], float] = field(default_factory=dict)  # (category or None, k) -> sum
    counts: dict[int | None, int] = field(default_factory=dict)

    def add(self, category: int, found: Sequence[str], evidence: frozenset[str]) -> None:
        for cat in (None, category):
            self.counts[cat] = self.counts.get(cat, 0) + 1
            for k in KS:
                share = recall.found_share(found, evidence, k)
                self.sums[cat, k] = self.sums.get((cat, k), 0.0) + share

    def at(self, k: int, category: int | None = None) -> float:
        return 100 * self.sums.get((category, k), 0.0) / max(1, self.counts.get(category, 0))


def locomo_recall(
    store: Any, embedder: Any, keys: Mapping[str, str], questions: Iterable[Question], variant: Variant
) -> Recall:
    measured = Recall()
    for q in questions:
        results = _search(store, embedder, variant, q.text, (q.conv,), LIMIT, NOW_MS)
        found = [keys[r.source_id].split(":", 1)[1] for r in results if keys[r.source_id].startswith(f"{q.conv}:")]
        measured.add(q.category, found, q.evidence)
    return measured


@dataclass(frozen=True, slots=True)
class Labelled:
    mrr: float
    identifier: float
    paraphrase: float


def labelled_store(tmp: Path) -> tuple[Any, list[Mapping[str, Any]], list[Mapping[str, Any]], int]:
    from sync.search.embedders import bm25
    from sync.search.embedders.local import LocalEmbedder
    from sync.search.indexing.text import episode_text
    from sync.search.stores import EdgeStore, WarmPoint, point_id

    raw = json.loads(LABELLED.read_text(encoding="utf-8"))
    episodes, queries = raw["episodes"], raw["queries"]
    embedder = LocalEmbedder()
    texts = [episode_text(e) for e in episodes]
    points = [
        WarmPoint(
            point_id(e["site"], e["id"]),
            vector,
            bm25.embed_document(text),
            {k: e[k] for k in ("site", "agent", "session", "tags", "ts", "task")} | {"sourceId": e["id"], "text": text},
        )
        for e, text, vector in zip(episodes, texts, embedder.embed_documents(texts), strict=True)
    ]
    store = EdgeStore(tmp)
    store.open_or_create("relevance", embedder.name, embedder.dims)
    store.upsert(points)
    now = max(int(e["ts"]) for e in episodes) + HOUR_MS
    return store, episodes, queries, now


def labelled_mrr(
    store: Any, embedder: Any, queries: Sequence[Mapping[str, Any]], now_ms: int, variant: Variant
) -> Labelled:
    rr: dict[str, list[float]] = {"identifier": [], "paraphrase": []}
    for q in queries:
        results = _search(store, embedder, variant, q["query"], (), 10, now_ms)
        rank = next((i for i, r in enumerate(results, 1) if r.source_id in q["relevant"]), None)
        rr[q["class"]].append(1 / rank if rank else 0.0)
    every = rr["identifier"] + rr["paraphrase"]
    return Labelled(
        math.fsum(every) / len(every),
        math.fsum(rr["identifier"]) / len(rr["identifier"]),
        math.fsum(rr["paraphrase"]) / len(rr["paraphrase"]),
    )


def table(rows: Sequence[tuple[Variant, Recall, Labelled]]) -> str:
    head = "| variant | R@5 | R@10 | R@25 | R@50 | temporal R@5/R@10 | MRR | identifiers | paraphrases |"
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    for v, r, lab in rows:
        lines.append(
            f"| {v.name} | " + " | ".join(f"{r.at(k):.1f}" for k in KS) + f" | {r.at(5, 2):.1f} / {r.at(10, 2):.1f}"
            f" | {lab.mrr:.3f} | {lab.identifier:.3f} | {lab.paraphrase:.3f} |"
        )
    return "\n".join(lines)


def category_table(rows: Sequence[tuple[Variant, Recall, Labelled]]) -> str:
    lines = ["| variant | " + " | ".join(f"{name} R@5/R@10" for name in CATEGORIES.values()) + " |"]
    lines.append("|---" * (len(CATEGORIES) + 1) + "|")
    for v, r, _ in rows:
        lines.append(f"| {v.name} | " + " | ".join(f"{r.at(5, c):.1f} / {r.at(10, c):.1f}" for c in CATEGORIES) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import tempfile

    from sync.search.embedders.local import LocalEmbedder

    parser = argparse.ArgumentParser(prog="python -m bench.fusion_lab", description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path, help="a folder of LoCoMo conversation files (e.g. the development half)")
    parser.add_argument("--variants", nargs="*", metavar="NAME", help="only these variants (by name)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="write the figures here too")
    args = parser.parse_args(argv)
    turns, questions = load_locomo(args.data)
    progress(f"{len(turns)} turns, {len(questions)} questions")
    store, keys = build_store(turns, CACHE)
    embedder = QueryCache(LocalEmbedder())
    chosen = [v for v in variants() if not args.variants or v.name in args.variants]
    rows: list[tuple[Variant, Recall, Labelled]] = []
    with tempfile.TemporaryDirectory(prefix="fusion-lab-") as tmp:
        lab_store, _, lab_queries, lab_now = labelled_store(Path(tmp))
        try:
            for v in chosen:
                rows.append(
                    (
                        v,
                        locomo_recall(store, embedder, keys, questions, v),
                        labelled_mrr(lab_store, embedder, lab_queries, lab_now, v),
                    )
                )
                progress(table(rows[-1:]).splitlines()[-1])
        finally:
            lab_store.close()
            store.close()
    print(table(rows))
    print()
    print(category_table(rows))
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {
                        "variant": v.name,
                        "recall": {f"{c or 'all'}@{k}": r.at(k, c) for c in (None, *CATEGORIES) for k in KS},
                    }
                    | {"mrr": lab.mrr, "identifier": lab.identifier, "paraphrase": lab.paraphrase}
                    for v, r, lab in rows
                ],
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
