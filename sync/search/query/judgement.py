"""The judgement on a search's results: how relevant each is, why it ranked, which are cut. Pure.

The ranking (``sync.search.query.ranking.rerank_model``, or the fusion for the queries it does not cover)
orders a query's candidates; its score cannot say whether the first of them answers anything: the
learned model reads features relative to the query's own pool (its best cosine, its best BM25
score), and the fusion scales each list within the query. A chatty prompt's first result scores
as high as a real answer's. **Relevance** is another model, over what a hit holds in absolute
terms, fitted to say how likely it is to be relevant, so that one number means the same for every
query, and for ``memsync search``, the MCP ``search_memory`` and the context block alike:

- ``meaning``: the hit's cosine to the query minus the embedder's floor (the cosine that unrelated
  query/memory pairs reach 1 time in 20; measured per model, kept with the calibration);
- ``lead``: its cosine minus the median cosine of the query's 50 nearest memories: an answer
  stands out of them, the nearest memories of a query nothing answers do not;
- ``coverage``: the share of the query's BM25 terms its matched passage holds;
- ``exact``: it holds an identifier the query names, verbatim (``sync.identifiers``);
  ``lookalike``: it holds a look-alike of one (``ZQX_7781_B`` for ``ZQX_7781_A``) and not the one;
- ``learned``: the learned ranking's log-odds for it, where that model ranked the query;
  ``fused``: the fusion ranked it instead (a query few of whose words BM25's best hit holds).

A hit that **shares nothing** with the query (none of its words in the passage that matched, no
identifier it names, a meaning under the embedder's floor) has relevance 0: of the 1,018 relevant
results among the labelled sets' first ten, none did (bench/results/judgement.md).

The weights are a logistic regression fitted on labelled sets with folds left out
(``bench/judgement_fit.py``; ``relevance_model.json`` beside this module holds them, their data and
their held-out figures). A result under the **floor** (the calibration's, or the request's) is cut:
``limit`` is a maximum, not a promise, and the answer says how many were cut.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import Any, Final

from sync.search.request import SearchResult, Why

FEATURES: Final = ("meaning", "lead", "coverage", "exact", "lookalike", "learned", "fused")
MODEL_FILE: Final = "relevance_model.json"
FORMAT: Final = 1
LEAD_DEPTH: Final = 50  # the query's nearest memories whose median cosine the lead is measured from
LEAD_MIN: Final = 5  # fewer than this many, and there is no median to speak of
LOGIT_CLIP: Final = 12.0  # a probability's log-odds, bounded (a score of exactly 0 or 1)


@dataclass(frozen=True, slots=True)
class Calibration:
    """``relevance = sigmoid(bias + sum w * (x - mean) / scale)`` over ``features``; ``floors``:
    each measured embedder's cosine floor; ``cutoff``: the default least relevance a result needs."""

    features: tuple[str, ...]
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    weights: tuple[float, ...]
    bias: float
    floors: Mapping[str, float]
    cutoff: float
    # For an embedder without a measured floor: its floor is taken as the query's median cosine
    # minus this (what the median stood above the floor, on average, for the measured models).
    median_above_floor: float = 0.0
    notes: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        n = len(self.features)
        if not (len(self.mean) == len(self.scale) == len(self.weights) == n):
            raise ValueError(f"a calibration of {n} features needs as many means, scales and weights")
        unknown = set(self.features) - set(FEATURES)
        if unknown:
            raise ValueError(f"unknown relevance features {sorted(unknown)}; known: {', '.join(FEATURES)}")
        if any(not s > 0 for s in self.scale):
            raise ValueError("every feature's scale must be positive")
        if not 0.0 <= self.cutoff <= 1.0:
            raise ValueError(f"the cutoff must be within 0..1, got {self.cutoff}")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "features": list(self.features),
            "mean": list(self.mean),
            "scale": list(self.scale),
            "weights": list(self.weights),
            "bias": self.bias,
            "floors": dict(self.floors),
            "cutoff": self.cutoff,
            "median_above_floor": self.median_above_floor,
            "notes": dict(self.notes or {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Calibration:
        """ValueError names what is wrong with it."""
        if data.get("format") != FORMAT:
            raise ValueError(f"a relevance calibration must be format {FORMAT}, got {data.get('format')!r}")
        try:
            return cls(
                tuple(str(f) for f in data["features"]),
                tuple(float(v) for v in data["mean"]),
                tuple(float(v) for v in data["scale"]),
                tuple(float(v) for v in data["weights"]),
                float(data["bias"]),
                {str(k): float(v) for k, v in dict(data["floors"]).items()},
                float(data["cutoff"]),
                float(data.get("median_above_floor", 0.0)),
                dict(data.get("notes") or {}),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"a relevance calibration lacks or mistypes {exc}") from None

    def floor_of(self, model: str, pool_median: float | None) -> float:
        """The embedder's cosine floor: measured, else estimated from the query's median cosine."""
        if model in self.floors:
            return self.floors[model]
        if pool_median is not None:
            return pool_median - self.median_above_floor
        return min(self.floors.values(), default=0.0)

    def relevance(self, row: Mapping[str, float]) -> float:
        z = self.bias + math.fsum(
            w * (row[f] - m) / s for f, m, s, w in zip(self.features, self.mean, self.scale, self.weights, strict=True)
        )
        return sigmoid(z)


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


def logit(p: float) -> float:
    p = min(max(p, 1e-12), 1.0 - 1e-12)
    return max(-LOGIT_CLIP, min(LOGIT_CLIP, math.log(p / (1.0 - p))))


def load_calibration(text: str | None = None) -> Calibration:
    """The shipped calibration (``relevance_model.json`` in this package), or one from ``text``."""
    if text is None:
        from importlib import resources  # here: the search's answer is read without the model

        text = resources.files("sync.search.query").joinpath(MODEL_FILE).read_text(encoding="utf-8")
    return Calibration.from_json(json.loads(text))


@cache
def shipped_calibration() -> Calibration:
    return load_calibration()


def pool_median(cosines: Sequence[float]) -> float | None:
    """The median cosine of the query's ``LEAD_DEPTH`` nearest memories (None: too few of them)."""
    nearest = list(cosines[:LEAD_DEPTH])
    from statistics import median  # here: ``memsync search`` reads the answer without it

    return median(nearest) if len(nearest) >= LEAD_MIN else None


def features(why: Why, floor: float) -> dict[str, float]:
    """The calibration's inputs for one judged hit (``FEATURES``); ``floor``: the embedder's."""
    cosine = why.meaning if why.meaning is not None else floor
    return {
        "meaning": cosine - floor,
        "lead": why.lead if why.lead is not None else cosine - floor,
        "coverage": why.terms / why.of if why.of else 0.0,
        "exact": 1.0 if why.exact else 0.0,
        "lookalike": 1.0 if why.lookalike and not why.exact else 0.0,
        "learned": logit(why.score) if why.ranker == "learned" else 0.0,
        "fused": 1.0 if why.ranker == "fusion" else 0.0,
    }


def shares(why: Why, floor: float) -> bool:
    """Whether a hit shares anything with the query: one of its words (a BM25 term) in the passage
    that matched, an identifier it names verbatim, or a meaning closer than unrelated pairs come
    (``floor``, the embedder's)."""
    return why.terms > 0 or bool(why.exact) or (why.meaning is not None and why.meaning >= floor)


def relevance(why: Why, calibration: Calibration, model: str, median_cosine: float | None) -> float | None:
    """The probability that the hit is relevant; None where the ranking compared one list alone
    (``--mode dense|bm25``: what they measure is that list, not a judgement)."""
    if why.ranker not in ("learned", "fusion"):
        return None
    floor = calibration.floor_of(model, median_cosine)
    if not shares(why, floor):
        return 0.0
    return calibration.relevance(features(why, floor))


@dataclass(frozen=True, slots=True)
class Cut:
    """The results shown (in their order) and how many of the first ``limit`` fell under the floor."""

    kept: list[SearchResult]
    cut: int


def cutoff(results: Sequence[SearchResult], floor: float) -> Cut:
    """The results at or over ``floor``, in their order; a result without a relevance is kept."""
    kept = [r for r in results if r.relevance is None or r.relevance >= floor]
    return Cut(kept, len(results) - len(kept))


def with_sessions(results: Sequence[SearchResult]) -> list[SearchResult]:
    """Each result's ``why.session_of``: the number (from 1) of the first result before it from the
    same session of the same site, if any."""
    first: dict[tuple[str, str], int] = {}
    out = []
    for n, r in enumerate(results, 1):
        key = (r.site, r.session) if r.session else None
        earlier = first.get(key) if key else None
        if key and earlier is None:
            first[key] = n
        out.append(replace(r, why=replace(r.why, session_of=earlier)) if r.why is not None else r)
    return out


def why_words(why: Why) -> str:
    """Why a hit ranked, in a few words: ``exact E11000 · 3/4 terms · meaning 0.71 · same session as #1``."""
    parts: list[str] = []
    if why.exact:
        parts.append(f"exact {', '.join(why.exact)}")
    if why.lookalike:
        parts.append(f"look-alike {', '.join(why.lookalike)}")
    if why.of:
        parts.append(f"{why.terms}/{why.of} terms")
    if why.meaning is not None:
        parts.append(f"meaning {why.meaning:.2f}")
    if why.in_window:
        parts.append("in the time asked")
    if why.session_of is not None:
        parts.append(f"same session as #{why.session_of}")
    return " · ".join(parts)


__all__ = [
    "FEATURES",
    "Calibration",
    "Cut",
    "cutoff",
    "features",
    "load_calibration",
    "logit",
    "pool_median",
    "relevance",
    "shipped_calibration",
    "sigmoid",
    "why_words",
    "with_sessions",
]
