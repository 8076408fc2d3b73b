"""The learned ranking of hybrid search's candidates: features in, order out. Pure, no I/O.

Fusing two lists with hand-set weights (``sync.search.query.ranking.fusion``) fitted the conversations it was
tuned on and fell below BM25 alone on others. This stage instead ranks a wide pool (each list's
best ``depth``, 100 by default) by a linear model over signals search already holds for every
candidate, trained by logistic regression on conversations and measured on others
(``bench/rerank_train.py`` is the recipe, ``bench/recall_folds.py`` the leave-conversations-out
measurement, ``rerank_model.json`` beside this module the shipped weights):

- ``dense_gap``: the candidate's cosine to the query minus the pool's best cosine;
- ``bm25_share``: its BM25 score over the pool's best BM25 score (0 when BM25 did not find it);
- ``dense_rank``, ``bm25_rank``: ``log(1 + rank)`` in each list, the list's depth when absent;
- ``in_bm25``: whether BM25 found it at all (it shares a term with the query);
- ``length``: ``log(1 + characters)`` of the point's text (a passage's span): a turn of
  substance against "haha, sure!";
- ``session_best``, ``session_hits``: how strongly the rest of its session matched (the best
  first-stage score of another candidate of the same session, and ``log(1 + how many`` of the
  first-stage top ``SESSION_TOP`` share its session)): an answer often sits beside the turn that
  names the question's words, in a session about the question's topic;
- ``in_window``: whether its time lies in the window the query names (``sync.search.query.query_time``:
  "in June 2023", "last week", "on 9 November"); 0 when the query names none.

The first-stage score that the session features read is reciprocal rank fusion,
``1/(2 + dense rank) + 1/(2 + BM25 rank)`` (an absent list adding nothing): no weight to fit.

The model ranks the queries it was trained on. A query whose BM25 first hit holds less of its
terms than ``min_coverage`` (the 10th percentile of the training questions': half of a LoCoMo
question's terms) is a paraphrase of its memory, or a chatty prompt: few such were in its data,
and for them lexical hits are noise that the hand-weighted fusion (``sync.search.query.ranking.fusion``, whose
dense weight rises as coverage falls) already discounts; it ranks those.

A candidate's score is the model's probability that it is relevant (a logistic of the weighted,
standardised features), so it lies in (0, 1), compares across queries, and the recency decay may
scale it. Ties go to the id: the order is the same on every run and every engine.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

FEATURES: Final = (
    "dense_gap",
    "bm25_share",
    "dense_rank",
    "bm25_rank",
    "in_bm25",
    "length",
    "session_best",
    "session_hits",
    "in_window",
)
DEPTH: Final = 100  # candidates taken from each list; a rank past it counts as absent
SESSION_TOP: Final = 20  # the first-stage places that ``session_hits`` counts
RRF_K: Final = 2  # the first stage's reciprocal rank constant (Qdrant's default)
MODEL_FILE: Final = "rerank_model.json"
FORMAT: Final = 1


@dataclass(frozen=True, slots=True)
class Candidate:
    """What search knows of one point in the pool. Ranks count from 0; None: not in that list."""

    id: str
    similarity: float  # cosine of its dense vector to the query
    dense_rank: int | None
    bm25_score: float | None
    bm25_rank: int | None
    session: str | None
    chars: int  # length of the text it was indexed from
    in_window: bool = False  # its time lies in the window the query names


@dataclass(frozen=True, slots=True)
class LinearModel:
    """Weights over standardised features: ``sigmoid(bias + sum w * (x - mean) / scale)``."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    depth: int = DEPTH
    # Queries whose BM25 first hit holds less of them than this are outside what the model was
    # trained on (the 10th percentile of its training queries'): the fusion ranks those.
    min_coverage: float = 0.0
    notes: Mapping[str, Any] | None = None  # how it was trained (the recipe, the data)

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.weights) == n):
            raise ValueError(f"a model of {n} features needs as many means, scales and weights")
        unknown = set(self.features) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown ranking features {sorted(unknown)}; known: {', '.join(FEATURES)}")
        if any(not s > 0 for s in self.scale):
            raise ValueError("every feature's scale must be positive")
        if self.depth < 1:
            raise ValueError(f"depth must be at least 1, got {self.depth}")
        if not 0.0 <= self.min_coverage <= 1.0:
            raise ValueError(f"min_coverage must be within 0..1, got {self.min_coverage}")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
            "depth": self.depth,
            "min_coverage": self.min_coverage,
            "notes": dict(self.notes or {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LinearModel:
        """ValueError names what is wrong with it."""
        if data.get("format") != FORMAT:
            raise ValueError(f"a ranking model must be format {FORMAT}, got {data.get('format')!r}")
        try:
            return cls(
                tuple(str(f) for f in data["features"]),
                tuple(float(v) for v in data["mean"]),
                tuple(float(v) for v in data["scale"]),
                tuple(float(v) for v in data["weights"]),
                float(data["bias"]),
                int(data.get("depth", DEPTH)),
                float(data.get("min_coverage", 0.0)),
                dict(data.get("notes") or {}),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"a ranking model lacks or mistypes {exc}") from None

    def covers(self, coverage: float) -> bool:
        """Whether a query whose BM25 first hit holds ``coverage`` of its terms is the model's to rank."""
        return coverage >= self.min_coverage

    def score(self, row: Mapping[str, float]) -> float:
        z = self.bias + math.fsum(
            w * (row[f] - m) / s for f, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        )
        return _sigmoid(z)


def _sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def load_model(text: str | None = None) -> LinearModel:
    """The shipped model (``rerank_model.json`` in this package), or one from ``text``."""
    if text is None:
        text = resources.files("sync.search.query.ranking").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return LinearModel.from_json(json.loads(text))


def first_stage(c: Candidate) -> float:
    """Reciprocal rank fusion of the two lists: what the session features read."""
    return sum(1.0 / (RRF_K + rank) for rank in (c.dense_rank, c.bm25_rank) if rank is not None)


def features(candidates: Sequence[Candidate], depth: int = DEPTH) -> list[dict[str, float]]:
    """Each candidate's features (``FEATURES``), in the candidates' order."""
    if not candidates:
        return []
    best_cosine = max(c.similarity for c in candidates)
    best_bm25 = max((c.bm25_score for c in candidates if c.bm25_score is not None), default=0.0)
    base = [first_stage(c) for c in candidates]
    top = sorted(range(len(candidates)), key=lambda i: (-base[i], candidates[i].id))[:SESSION_TOP]
    best_in: dict[str, list[float]] = {}  # session -> its two best first-stage scores
    hits_in: dict[str, int] = {}
    for i, c in enumerate(candidates):
        if c.session is not None:
            best_in[c.session] = sorted([*best_in.get(c.session, []), base[i]], reverse=True)[:2]
    for i in top:
        session = candidates[i].session
        if session is not None:
            hits_in[session] = hits_in.get(session, 0) + 1
    top_set = set(top)
    rows = []
    for i, c in enumerate(candidates):
        session_best = session_hits = 0.0
        if c.session is not None:
            pair = best_in[c.session]
            # The best other candidate of the session: the second best when this one is the best.
            session_best = (pair[1] if len(pair) > 1 else 0.0) if pair[0] == base[i] else pair[0]
            session_hits = math.log1p(hits_in.get(c.session, 0) - (1 if i in top_set else 0))
        rows.append(
            {
                "dense_gap": c.similarity - best_cosine,
                "bm25_share": (c.bm25_score or 0.0) / best_bm25 if best_bm25 > 0 else 0.0,
                "dense_rank": math.log1p(_capped(c.dense_rank, depth)),
                "bm25_rank": math.log1p(_capped(c.bm25_rank, depth)),
                "in_bm25": 0.0 if c.bm25_rank is None else 1.0,
                "length": math.log1p(max(0, c.chars)),
                "session_best": session_best,
                "session_hits": session_hits,
                "in_window": 1.0 if c.in_window else 0.0,
            }
        )
    return rows


def _capped(rank: int | None, depth: int) -> int:
    return depth if rank is None else min(rank, depth)


def rank(candidates: Sequence[Candidate], model: LinearModel) -> list[tuple[str, float]]:
    """``(id, score)`` best first: the model's probability of relevance, ties by id."""
    rows = features(candidates, model.depth)
    scored = [(c.id, model.score(row)) for c, row in zip(candidates, rows, strict=True)]
    return sorted(scored, key=lambda pair: (-pair[1], pair[0]))


def pool(dense: Sequence[str], sparse: Sequence[str]) -> list[str]:
    """The candidates' ids, each once: the dense list's, then the BM25 list's others."""
    return list(dict.fromkeys([*dense, *sparse]))
