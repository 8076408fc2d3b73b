"""Whether a save repeats a memory the site has, updates one, or is new: pure, no I/O.

The seeds' rule, with a lexical gate. A candidate is a memory the search index finds nearest in
meaning to the save, with its cosine (``similarity``). Below ``NEAR`` (0.95, the seeds' and the
index's near-duplicate threshold) the save is new. At or above it, the words decide:
- the same values (numbers, versions, identifiers: ``pool_size``, ``20``, ``E11000``, ``v2.3``) and
  the same negations: a **duplicate**: the existing memory is returned and nothing is saved;
- different values (``pool_size 20`` → ``pool_size 30``) or a negation one has and the other not
  (``use X`` → ``do not use X``): an **update**, saved as newer, naming the memory it supersedes.
Only the nearest candidate at or above the threshold counts (the index's order breaks ties).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

NEAR: Final = 0.95

# A value: a token holding a digit (20, v2.3, E11000, 10.0.3.7:5432), or an identifier's shape
# (snake_case, CamelCase, a path, CONSTANT_NAME).
_TOKEN: Final = re.compile(r"[\w./:@$-]+")
_IDENT: Final = re.compile(r"\w*_\w+|\w*[a-z][A-Z]\w*|[A-Z]{2,}\w*|\S*/\S+|\w+\.\w+")
_NEGATIONS: Final = frozenset({"not", "no", "never", "don't", "dont", "doesn't", "isn't", "without", "avoid", "stop"})


class Verdict(StrEnum):
    NEW = "new"
    DUPLICATE = "duplicate"
    UPDATE = "update"


@dataclass(frozen=True, slots=True)
class Candidate:
    key: str  # SITE:ID
    text: str
    similarity: float | None  # cosine to the save; None: not compared


@dataclass(frozen=True, slots=True)
class Judged:
    verdict: Verdict
    existing: Candidate | None = None
    differs: tuple[str, ...] = ()  # for an update: the values only one of the two holds


def values(text: str) -> frozenset[str]:
    """The values ``text`` names (case folded, trailing punctuation off)."""
    found = set()
    for raw in _TOKEN.findall(text):
        token = raw.rstrip(".:,;-/")
        if not token:
            continue
        if any(c.isdigit() for c in token) or _IDENT.fullmatch(token):
            found.add(token.casefold())
    return frozenset(found)


def negations(text: str) -> frozenset[str]:
    words = {w.casefold() for w in re.findall(r"[\w']+", text)}
    return frozenset(w for w in words if w in _NEGATIONS or w.endswith("n't"))


def judge(text: str, candidates: Sequence[Candidate], near: float = NEAR) -> Judged:
    """The verdict on saving ``text``, given the nearest memories the site has."""
    close = next((c for c in candidates if c.similarity is not None and c.similarity >= near), None)
    if close is None:
        return Judged(Verdict.NEW)
    mine, theirs = values(text), values(close.text)
    differs = tuple(sorted(mine ^ theirs))
    if differs or negations(text) != negations(close.text):
        return Judged(Verdict.UPDATE, close, differs)
    return Judged(Verdict.DUPLICATE, close)
