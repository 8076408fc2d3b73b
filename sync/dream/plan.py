"""The night's decisions, from the memories and their vectors: pure, no I/O, the clock an argument.

- **Folds.** Near-duplicates (the same fact in other words, by any agent on any site) become one
  cluster whose canonical memory stands for it; the others are its members. Two memories are
  near-duplicates only when both tests agree: the dense one (cosine at least ``fold_cosine``,
  ``plain_fold_cosine`` for memories that name no identifier and no number) and the lexical one
  (the same identifiers and numbers, ``signature.Signature.same_fact``, and at least
  ``fold_words`` of their other words shared, ``signature.Signature.shared_words``; and the times
  they say relative to their writing, "today" or "next month", naming the same periods,
  ``signature.Signature.same_time``). A cluster is built around
  its best memory (its leader): a memory joins the first cluster whose leader it is alike, never by
  a chain of look-alikes.
- **Supersedes.** Among the memories that stand (canonicals and memories in no cluster), one that
  gives the same keys of the same subject other values than a newer one, and reads alike
  (``update_cosine``), is superseded by the newest.
- **The canonical** is the best member: a canonical of an earlier night first (it stays), then by
  salience (when given), outcome (success), reward, recency, and key.
- Nothing already hidden (a member of a standing fold, a superseded memory) is planned again, and
  no two memories a person pulled apart (``apart``, from undone steps) are put together again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from sync.backbone.dreams import Key
from sync.dream.signature import Signature, signature

FOLD_COSINE: Final = 0.80
PLAIN_FOLD_COSINE: Final = 0.93
# The share of their other words two memories must have in common to fold (Jaccard): a dense model
# finds two turns of one conversation, or two notes naming one acronym, alike when they say
# different things (bench.dream_effect on LoCoMo); the same fix in other words keeps most of its
# words (bench.dream's planted pairs share at least 0.32).
FOLD_WORDS: Final = 0.30
UPDATE_COSINE: Final = 0.80
SETTLE_MS: Final = 3_600_000  # memories younger than an hour wait for the next night (a live session)


@dataclass(frozen=True, slots=True)
class Memory:
    key: Key
    text: str
    ts: int  # ms
    success: bool | None = None
    reward: float | None = None


@dataclass(frozen=True, slots=True)
class Standing:
    """What earlier nights decided and still stands (not undone)."""

    canonicals: frozenset[Key] = frozenset()  # canonical memories of standing folds
    hidden: frozenset[Key] = frozenset()  # members of standing folds and superseded memories
    apart: frozenset[frozenset[Key]] = frozenset()  # pairs a person pulled apart (unmerge)


@dataclass(frozen=True, slots=True)
class Thresholds:
    fold_cosine: float = FOLD_COSINE
    plain_fold_cosine: float = PLAIN_FOLD_COSINE
    fold_words: float = FOLD_WORDS
    update_cosine: float = UPDATE_COSINE
    settle_ms: int = SETTLE_MS


@dataclass(frozen=True, slots=True)
class Fold:
    canonical: Key
    members: tuple[Key, ...]  # the others, by key
    cosine_min: float  # the lowest member-to-canonical cosine


@dataclass(frozen=True, slots=True)
class Supersede:
    newer: Key
    older: Key
    changed: tuple[tuple[str, str, str], ...]  # (key, old value, new value)


@dataclass(frozen=True, slots=True)
class DreamPlan:
    at: int  # ms: when it was planned
    considered: int  # memories looked at (not hidden, settled)
    folds: tuple[Fold, ...] = ()
    supersedes: tuple[Supersede, ...] = ()
    signatures: Mapping[Key, Signature] = field(default_factory=dict, compare=False, repr=False)

    @property
    def folded(self) -> int:
        """Memories the folds hide (their members)."""
        return sum(len(f.members) for f in self.folds)


def _rank(m: Memory, standing: Standing, salience: Mapping[Key, float] | None) -> tuple[object, ...]:
    """Sort key: the best canonical first."""
    sal = salience.get(m.key, 0.0) if salience is not None else 0.0
    outcome = {True: 2, None: 1, False: 0}[m.success]
    reward = m.reward if m.reward is not None and np.isfinite(m.reward) else 0.0
    return (m.key not in standing.canonicals, -sal, -outcome, -reward, -m.ts, m.key)


def plan(
    memories: Sequence[Memory],
    vectors: npt.NDArray[np.floating] | Sequence[Sequence[float]],
    *,
    now_ms: int,
    standing: Standing = Standing(),
    salience: Mapping[Key, float] | None = None,
    thresholds: Thresholds = Thresholds(),
) -> DreamPlan:
    """The folds and supersedes for ``memories`` (``vectors[i]`` is ``memories[i]``'s, L2-normalised)."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if len(memories) and (matrix.ndim != 2 or matrix.shape[0] != len(memories)):
        raise ValueError(f"{len(memories)} memories but vectors of shape {matrix.shape}")
    cutoff = now_ms - thresholds.settle_ms
    index = [i for i, m in enumerate(memories) if m.key not in standing.hidden and m.ts <= cutoff]
    sigs = {memories[i].key: signature(memories[i].text) for i in index}
    blocks: dict[tuple[frozenset[str], frozenset[str]], list[int]] = {}
    for i in index:
        sig = sigs[memories[i].key]
        blocks.setdefault((sig.ids, sig.numbers), []).append(i)
    folds: list[Fold] = []
    stands: list[int] = []  # leaders and memories in no fold
    for (ids, numbers), block in blocks.items():
        block.sort(key=lambda i: _rank(memories[i], standing, salience))
        threshold = thresholds.plain_fold_cosine if not ids and not numbers else thresholds.fold_cosine
        clusters = _leader_clusters(block, matrix, memories, sigs, threshold, thresholds.fold_words, standing.apart)
        for leader, members, worst in clusters:
            stands.append(leader)
            if members:
                folds.append(Fold(memories[leader].key, tuple(sorted(memories[j].key for j in members)), worst))
    supersedes = _supersedes(stands, matrix, memories, sigs, thresholds.update_cosine, standing.apart)
    folds.sort(key=lambda f: f.canonical)
    return DreamPlan(now_ms, len(index), tuple(folds), tuple(supersedes), sigs)


def _leader_clusters(
    block: Sequence[int],
    matrix: npt.NDArray[np.float32],
    memories: Sequence[Memory],
    sigs: Mapping[Key, Signature],
    threshold: float,
    words: float,
    apart: frozenset[frozenset[Key]],
) -> list[tuple[int, list[int], float]]:
    """Leader clustering of one block, best first: each memory joins the first leader it is at
    least ``threshold`` alike, shares at least ``words`` of its other words with, is not a
    look-alike of (``Signature.lookalike``) and says the same relative times as
    (``Signature.same_time``), and no member of which a person pulled it apart from."""
    clusters: list[tuple[int, list[int], float]] = []
    leaders: list[int] = []
    for i in block:
        joined = False
        if leaders:
            sims = matrix[leaders] @ matrix[i]
            for c in np.flatnonzero(sims >= threshold):
                leader, members, worst = clusters[int(c)]
                mine, theirs = sigs[memories[i].key], sigs[memories[leader].key]
                if mine.lookalike(theirs) or mine.shared_words(theirs) < words:
                    continue
                if not mine.same_time(memories[i].ts, theirs, memories[leader].ts):
                    continue
                if apart and any(frozenset((memories[i].key, memories[j].key)) in apart for j in (leader, *members)):
                    continue
                members.append(i)
                clusters[int(c)] = (leader, members, min(worst, float(sims[c])))
                joined = True
                break
        if not joined:
            leaders.append(i)
            clusters.append((i, [], 1.0))
    return clusters


def _supersedes(
    stands: Sequence[int],
    matrix: npt.NDArray[np.float32],
    memories: Sequence[Memory],
    sigs: Mapping[Key, Signature],
    threshold: float,
    apart: frozenset[frozenset[Key]],
) -> list[Supersede]:
    subjects: dict[tuple[frozenset[str], frozenset[str], frozenset[str]], list[int]] = {}
    for i in stands:
        subject = sigs[memories[i].key].subject()
        if subject is not None:
            subjects.setdefault(subject, []).append(i)
    out: list[Supersede] = []
    for group in subjects.values():
        if len(group) < 2:
            continue
        group.sort(key=lambda i: (-memories[i].ts, memories[i].key))
        newest = group[0]
        newer_sig = sigs[memories[newest].key]
        for older in group[1:]:
            changed = newer_sig.changed(sigs[memories[older].key])
            if not changed or memories[older].ts >= memories[newest].ts:
                continue
            if frozenset((memories[newest].key, memories[older].key)) in apart:
                continue
            if float(matrix[newest] @ matrix[older]) >= threshold:
                out.append(Supersede(memories[newest].key, memories[older].key, changed))
    out.sort(key=lambda s: (s.newer, s.older))
    return out


__all__ = ["DreamPlan", "Fold", "Key", "Memory", "Standing", "Supersede", "Thresholds", "plan"]
