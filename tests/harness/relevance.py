"""The labelled relevance set (``tests/data/warm_relevance.json``) and how a ranking of it is scored:
``tests/unit/test_warm_relevance.py`` checks hybrid search with it, and ``bench.recall`` and
``bench.models_lab`` measure with the same set and the same scoring, one function, not a copy.

Scoring: the reciprocal rank of the first relevant hit in the top 10, 0 if there is none. Hits with
equal scores share their ranks (the expected reciprocal rank over every order of the tied group):
RRF ties exactly whenever dense and BM25 swap their top two, and counting such a tie as a win for
whichever the tie-break favours would flatter it."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from harness.paths import ROOT
from sync.search.embedders import bm25
from sync.search.indexing.text import episode_text
from sync.search.stores import Hit, WarmPoint, point_id

DATA: Final = ROOT / "tests" / "data" / "warm_relevance.json"
TOP: Final = 10
CLASSES: Final = ("identifier", "paraphrase")
TIE: Final = 1e-6  # scores closer than this are a tie


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    cls: str
    text: str
    relevant: frozenset[str]
    identifier: str | None
    distractors: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RelevanceSet:
    episodes: tuple[Mapping[str, Any], ...]
    queries: tuple[Query, ...]

    def text(self, episode_id: str) -> str:
        return next(episode_text(e) for e in self.episodes if e["id"] == episode_id)


def load_set(path: Path = DATA) -> RelevanceSet:
    raw = json.loads(path.read_text(encoding="utf-8"))
    queries = tuple(
        Query(
            q["id"],
            q["class"],
            q["query"],
            frozenset(q["relevant"]),
            q.get("identifier"),
            tuple(q.get("distractors", ())),
        )
        for q in raw["queries"]
    )
    return RelevanceSet(tuple(raw["episodes"]), queries)


def shared_rank(hits: Sequence[Hit], relevant: frozenset[str]) -> tuple[float, int | None]:
    """(reciprocal rank with ties shared, worst rank among the ties) of the first relevant hit."""
    return shared_rank_of([(str(h.payload["sourceId"]), h.score) for h in hits], relevant)


def shared_rank_of(scored: Sequence[tuple[str, float]], relevant: frozenset[str]) -> tuple[float, int | None]:
    """``shared_rank`` over (key, score) pairs, best first: what ``bench.recall`` reads from the CLI."""
    for key, score in scored:
        if key not in relevant:
            continue
        ahead = sum(1 for _, s in scored if s > score + TIE)
        tied = sum(1 for k, s in scored if abs(s - score) <= TIE and k not in relevant)
        ranks = range(ahead + 1, ahead + tied + 2)
        return math.fsum(1.0 / r for r in ranks) / len(ranks), ranks[-1]
    return 0.0, None


def set_points(
    relevance_set: RelevanceSet, texts: Sequence[str], vectors: Sequence[Sequence[float]]
) -> list[WarmPoint]:
    """The set's episodes as the indexer's points: their dense vectors, BM25 and payload."""
    return [
        WarmPoint(
            point_id(e["site"], e["id"]),
            vector,
            bm25.embed_document(text),
            {"site": e["site"], "agent": e["agent"], "session": e["session"], "tags": e["tags"], "ts": e["ts"]}
            | {"sourceId": e["id"]},
        )
        for e, text, vector in zip(relevance_set.episodes, texts, vectors, strict=True)
    ]
