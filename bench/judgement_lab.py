"""The labelled sets searched in process, every hit's signals and label kept: what the relevance
calibration (``bench/judgement_fit.py``) is fitted on and what the search's floor is chosen from.

Three sets, each indexed by the product's own indexer (``sync.search.indexing.indexer.Indexer``:
passages, near-duplicate links, the payload) from an embedded hub into a real ``EdgeStore``, with
the product's local embedder (vectors kept in ``bench/.cache/`` by text, so a second run embeds
nothing), then searched by the product's own ``sync.search.query.pipeline.answer`` with the cutoff
off (``--all``'s request, collapse on, as the CLI asks), each hit's judgement signals kept:

- **LoCoMo** (the development half): each dialog turn one episode as ``bench/recall.py`` writes it,
  every question of categories 1-4 searched within its conversation (``--tag``), ``-n 50``;
  relevant: the question's evidence turns. Folds: the conversations. The shipped ranking model was
  trained on these conversations, so each conversation is ranked by a model trained as the shipped
  one is (``bench.rerank_train``) on the other four: its scores, which relevance reads, are held out.
- **the labelled search set** (tests/data/warm_relevance.json): ``-n 10``; relevant: its episode.
- **the context set** (tests/data/context_set.json): its prompts as ``memsync context`` searches them
  (``-n 12``); relevant: the memory and those the set accepts beside it; prompts that should get
  nothing have no relevant hit. Its tune/check split is kept: the check half is never fitted on.

    python -m bench.judgement_lab /work/shared/data/locomo-dev [--out FILE.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.common import CACHE, ROOT, progress

NOW_MS: Final = 1_790_000_000_000  # the fixed clock every set's times are placed against
DAY_MS: Final = 86_400_000
LOCOMO_LIMIT: Final = 50  # what bench/recall.py asks for
WARM_LIMIT: Final = 10
CONTEXT_LIMIT: Final = 12  # what memsync context asks for a prompt
WARM: Final = ROOT / "tests" / "data" / "warm_relevance.json"
CONTEXT: Final = ROOT / "tests" / "data" / "context_set.json"


@dataclass(frozen=True, slots=True)
class LabEpisode:
    source_id: str
    fields: Mapping[str, Any]  # camelCase, as the backbone holds an episode


@dataclass(frozen=True, slots=True)
class LabQuery:
    set: str  # locomo | warm | context
    id: str
    fold: str  # locomo: the conversation; context: tune | check; warm: a or b
    kind: str  # locomo: its category; warm: identifier | paraphrase; context: answer, chatty, ...
    text: str
    relevant: frozenset[str]  # source ids
    limit: int
    tags: tuple[str, ...] = ()
    project: str | None = None


# -- the sets --------------------------------------------------------------------------------------
def locomo_set(folder: Path) -> tuple[list[LabEpisode], list[LabQuery]]:
    from bench import recall

    episodes: list[LabEpisode] = []
    queries: list[LabQuery] = []
    for conv in recall.load_locomo(folder):
        for p in recall.plan_conversation(conv, NOW_MS / 1000):
            body = dict(p.episode)
            fields = {
                "sessionId": body.get("sessionId"),
                "task": body.get("task"),
                "input": body.get("input"),
                "tags": list(body.get("tags") or []),
                "ts": int(p.ts * 1000),
                "agentName": "locomo",
                "reward": 0,
                "success": False,
            }
            episodes.append(LabEpisode(f"{conv.name}:{p.key}", fields))
        for n, q in enumerate(conv.questions):
            queries.append(
                LabQuery(
                    "locomo",
                    f"{conv.name}-q{n}",
                    conv.name,
                    str(q.category),
                    q.text,
                    frozenset(f"{conv.name}:{d}" for d in q.evidence),
                    LOCOMO_LIMIT,
                    tags=(conv.name,),
                )
            )
    return episodes, queries


def warm_set(path: Path = WARM) -> tuple[list[LabEpisode], list[LabQuery]]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    # Their spacing kept, the newest an hour before the clock (as bench/recall.py places them).
    shift = NOW_MS - 3_600_000 - max(int(e["ts"]) for e in raw["episodes"])
    episodes = [
        LabEpisode(
            e["id"],
            {
                "sessionId": e["session"],
                "task": e["task"],
                "input": e["input"],
                "output": e["output"],
                "critique": e["critique"],
                "tags": list(e["tags"]),
                "ts": int(e["ts"]) + shift,
                "agentName": e["agent"],
            },
        )
        for e in raw["episodes"]
    ]
    queries = [
        LabQuery("warm", q["id"], "ab"[n % 2], q["class"], q["query"], frozenset(q["relevant"]), WARM_LIMIT)
        for n, q in enumerate(raw["queries"])
    ]
    return episodes, queries


def context_keys(path: Path = CONTEXT) -> dict[str, str]:
    """The context set's episode ids by the source id each is pushed under: a number, as an AgentDB
    row id is (a block's entries name ``site#row``, which ``bench.context_set`` reads back)."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {str(n): e["id"] for n, e in enumerate(raw["episodes"], 1)}


def context_set(path: Path = CONTEXT) -> tuple[list[LabEpisode], list[LabQuery]]:
    raw = json.loads(path.read_text(encoding="utf-8"))
    newest = NOW_MS - 600_000
    source = {key: row for row, key in context_keys(path).items()}
    episodes = [
        LabEpisode(
            source[e["id"]],
            {
                "sessionId": e["session"],
                "task": e["task"],
                "input": e["input"] or None,
                "output": e["output"] or None,
                "critique": e["critique"] or None,
                "reward": e["reward"],
                "success": e["success"],
                "tags": list(e["tags"]),
                "ts": newest - int(float(e["age_days"]) * DAY_MS),
                "agentName": e["agent"],
            },
        )
        for e in raw["episodes"]
    ]
    queries = [
        LabQuery(
            "context",
            p["id"],
            p["split"],
            p["kind"],
            p["prompt"],
            frozenset(source[i] for i in (p["memory"], *p.get("also", ()))) if p.get("memory") else frozenset(),
            CONTEXT_LIMIT,
            project=p.get("project"),
        )
        for p in raw["prompts"]
    ]
    return episodes, queries


# -- the real parts, in process ----------------------------------------------------------------------
class CachedEmbedder:
    """The product's local embedder, its vectors kept by text (``bench.recall_pool.EmbeddingCache``)."""

    def __init__(self) -> None:
        from bench.recall_pool import EmbeddingCache
        from sync.search.embedders.local import LocalEmbedder

        self.inner = LocalEmbedder()
        self.cache = EmbeddingCache(self.inner)
        self.name, self.dims, self.passage_tokens = self.inner.name, self.inner.dims, self.inner.passage_tokens

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        return self.inner.count_tokens(texts)

    def embed_documents(self, texts: Sequence[str]) -> list[list[float]]:
        result: list[list[float]] = self.cache.documents(texts).tolist()
        return result

    def embed_query(self, text: str) -> list[float]:
        result: list[float] = self.cache.queries([text])[0].tolist()
        return result

    def embed_queries(self, texts: Sequence[str]) -> list[list[float]]:
        result: list[list[float]] = self.cache.queries(texts).tolist()
        return result


@contextmanager
def indexed(episodes: Sequence[LabEpisode], embedder: CachedEmbedder) -> Iterator[Any]:
    """A real EdgeStore holding the episodes as the indexer writes them, from an embedded hub."""
    with indexed_hub(episodes, embedder) as (_hub, store):
        yield store


@contextmanager
def indexed_hub(episodes: Sequence[LabEpisode], embedder: CachedEmbedder) -> Iterator[tuple[Any, Any]]:
    """The embedded hub the episodes were pushed into (site "lab", the near-duplicates the indexer
    found recorded as its links) and the real EdgeStore indexed from its change feed."""
    from sync.backbone.base import PushItem
    from sync.backbone.hub import HubBackbone
    from sync.episode import canonical_json
    from sync.search.collection.cursor import CursorFile
    from sync.search.indexing.indexer import Indexer
    from sync.search.indexing.text import text_hash
    from sync.search.stores import EdgeStore

    with tempfile.TemporaryDirectory(prefix="judgement-lab-") as tmp:
        root = Path(tmp)
        hub = HubBackbone(root / "hub.db", "lab")
        store = EdgeStore(root / "qdrant")
        try:
            for start in range(0, len(episodes), 500):
                items = []
                for n, e in enumerate(episodes[start : start + 500], start + 1):
                    body = {k: v for k, v in e.fields.items() if v is not None}
                    raw = canonical_json(body)
                    items.append(
                        PushItem(e.source_id, n, f"identity-{e.source_id}", text_hash(raw.decode()), body, raw)
                    )
                hub.push(items, start + len(items))
            indexer = Indexer(
                backbone=hub,
                store=store,
                embedder=embedder,
                collection="lab",
                cursor_file=CursorFile(root / "indexer.json"),
                page_size=256,
                links=hub,
            )
            indexer.open()
            indexer.run()
            embedder.cache.save()
            yield hub, store
        finally:
            store.close()
            hub.close()


# -- the capture -------------------------------------------------------------------------------------
def fold_models(folder: Path) -> dict[str, Any]:
    """For each LoCoMo conversation, the ranking model trained as the shipped one on the others."""
    from bench import recall_folds
    from bench.rerank_train import choose_l2, fit
    from sync.search.query.ranking.rerank_model import FEATURES

    lab = recall_folds.Lab.load(folder, calendar=True)
    models = {}
    for held in lab.conversations:
        examples, evidence = lab.examples(lab.questions_of(None, exclude=held))
        l2 = choose_l2(examples, evidence)
        models[held] = fit(examples, FEATURES, l2, notes={"l2": l2, "without": held})
        progress(f"  ranking model without conversation {held}: l2 {l2}")
    return models


def capture(
    episodes: Sequence[LabEpisode],
    queries: Sequence[LabQuery],
    embedder: CachedEmbedder,
    models: Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """Each query's answer, cutoff off: its hits as the wire carries them, and which are relevant.
    ``models``: the ranking model for a query's fold (the shipped one for a fold not named)."""
    from sync.search.query.judgement import FEATURES, Calibration
    from sync.search.query.pipeline import answer
    from sync.search.request import SearchFilter, SearchRequest

    # Relevance is what is fitted from this capture: none is judged here (every weight 0), nothing cut.
    n_features = len(FEATURES)
    neutral = Calibration(FEATURES, (0.0,) * n_features, (1.0,) * n_features, (0.0,) * n_features, 0.0, {}, 0.0)
    out = []
    embedder.embed_queries([q.text for q in queries])  # in batches, kept: each search then finds its vector
    with indexed(episodes, embedder) as store:
        for n, q in enumerate(queries):
            request = SearchRequest(q.text, limit=q.limit, filter=SearchFilter(tags=q.tags), floor=0.0)
            ranking = (models or {}).get(q.fold, "learned")
            found = answer(store, embedder, request, now_ms=NOW_MS, calibration=neutral, fusion=ranking)
            out.append(
                {
                    "set": q.set,
                    "id": q.id,
                    "fold": q.fold,
                    "kind": q.kind,
                    "query": q.text,
                    "project": q.project,
                    "relevant": sorted(q.relevant),
                    "answer": found.to_wire(),
                }
            )
            if (n + 1) % 200 == 0:
                progress(f"  {n + 1}/{len(queries)} queries")
    return out


def context_capture(embedder: CachedEmbedder, calibration: Any) -> dict[str, Any]:
    """What ``memsync context`` asks the daemon for each case of the context set (its search, cut
    at no floor, and the project's recent episodes), judged by ``calibration``: the format of
    ``bench.context_set --capture``, replayed by ``bench.context_tune``."""
    from bench.context_set import load_set, planned
    from sync.search.query import browse
    from sync.search.query.pipeline import answer
    from sync.search.request import RecentRequest, SearchFilter, SearchRequest

    data = load_set()
    episodes, _ = context_set()
    cases = []
    with indexed(episodes, embedder) as store:
        for case in data.cases:
            project = case.project or "scratch"
            decided = planned(case, project)
            record: dict[str, Any] = {
                "case": case.id,
                "project": project,
                "plan": decided.action,
                "query": decided.query,
            }
            if decided.action != "search":
                cases.append(record | {"found": [], "recent": []})
                continue
            request = SearchRequest(query=decided.query, limit=CONTEXT_LIMIT, floor=0.0)
            found = answer(store, embedder, request, now_ms=NOW_MS, calibration=calibration)
            recent = browse.recent(store, RecentRequest(limit=12, filter=SearchFilter(tags=(f"project:{project}",))))
            cases.append(
                record | {"found": [r.to_wire() for r in found.results], "recent": [r.to_wire() for r in recent]}
            )
    return {"keys": {f"lab#{row}": key for row, key in context_keys().items()}, "cases": cases}


def run(locomo: Path | None) -> list[dict[str, Any]]:
    embedder = CachedEmbedder()
    sets: list[tuple[str, list[LabEpisode], list[LabQuery], Mapping[str, Any] | None]] = [
        ("warm", *warm_set(), None),
        ("context", *context_set(), None),
    ]
    if locomo is not None:
        sets.append(("locomo", *locomo_set(locomo), fold_models(locomo)))
    captured: list[dict[str, Any]] = []
    for name, episodes, queries, models in sets:
        progress(f"judgement lab: {name}, {len(episodes)} episodes, {len(queries)} queries")
        captured += capture(episodes, queries, embedder, models)
    return captured


def default_out(locomo: Path | None) -> Path:
    digest = hashlib.sha256(str(locomo).encode()).hexdigest()[:8]
    return CACHE / f"judgement-lab-{digest}.json"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("locomo", nargs="?", type=Path, help="LoCoMo's development half (a folder of conversations)")
    parser.add_argument("--out", type=Path, help="where to keep the capture (default: bench/.cache/)")
    parser.add_argument(
        "--context",
        type=Path,
        metavar="FILE",
        help="only the context set, as bench.context_tune replays it, judged by the shipped calibration",
    )
    args = parser.parse_args(argv)
    if args.context is not None:
        from sync.search.query.judgement import load_calibration

        captured_context = context_capture(CachedEmbedder(), load_calibration())
        args.context.write_text(json.dumps(captured_context) + "\n", encoding="utf-8")
        progress(f"judgement lab: {len(captured_context['cases'])} context cases captured in {args.context}")
        return 0
    out = args.out or default_out(args.locomo)
    captured = run(args.locomo)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(captured) + "\n", encoding="utf-8")
    progress(f"judgement lab: {len(captured)} queries captured in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
