"""A plan as the steps a backbone records, and what the recorded steps mean for the next night:
pure, no I/O (the records themselves are ``sync.backbone.dreams``')."""

from __future__ import annotations

from collections.abc import Iterable

from sync.backbone.dreams import CONSOLIDATES, SUPERSEDES, DreamStep, Key, NewStep
from sync.dream.plan import DreamPlan, Standing


def steps_of(plan: DreamPlan) -> list[NewStep]:
    """The folds, then the supersedes."""
    steps = [
        NewStep(CONSOLIDATES, f.canonical, f.members, f"{len(f.members) + 1} alike (cosine >= {f.cosine_min:.2f})")
        for f in plan.folds
    ]
    steps += [
        NewStep(SUPERSEDES, s.newer, (s.older,), "; ".join(f"{k}: {old} -> {new}" for k, old, new in s.changed))
        for s in plan.supersedes
    ]
    return steps


def standing(steps: Iterable[DreamStep]) -> Standing:
    """What the next night must respect: standing canonicals and hidden memories, and the pairs of
    every undone step, kept apart."""
    canonicals: set[Key] = set()
    hidden: set[Key] = set()
    apart: set[frozenset[Key]] = set()
    for step in steps:
        if step.standing:
            if step.kind == CONSOLIDATES:
                canonicals.add(step.canonical)
            hidden.update(step.members)
        else:
            apart.update(frozenset((step.canonical, m)) for m in step.members)
    return Standing(frozenset(canonicals - hidden), frozenset(hidden), frozenset(apart))


def parse_key(text: str) -> Key:
    """``SITE:ID`` as a key; ValueError for anything else."""
    site, sep, source_id = text.partition(":")
    if not sep or not site or not source_id:
        raise ValueError(f"{text!r} is not SITE:ID")
    return site, source_id


__all__ = ["SUPERSEDES", "parse_key", "standing", "steps_of"]
