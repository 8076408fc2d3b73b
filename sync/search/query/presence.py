"""Whether any memory holds an identifier the query names: "absent" said only when it is known.

BM25 splits ``ZQX_7781_A`` into ``zqx`` and ``7781`` (and drops ``a``), so its best hit for the
identifier may hold ``ZQX_7781_B`` instead, and a memory outside the query's pool may hold the
identifier itself: neither the ranking nor the pool can say it is absent. What can: every memory
holding the identifier verbatim holds each of its BM25 terms (the same tokenizer cut both, and
``holds`` asks for a boundary on each side), and a BM25 search for one term alone returns exactly
the points holding it (sparse search is exhaustive: a point sharing a term scores above 0). So:

1. an identifier held by a memory the search already read (its results and its pool) is present;
2. else its terms are searched one at a time (the rarest-looking first), ``DEPTH`` deep, under the
   request's filter: the first whose list is shorter than ``DEPTH`` lists every point holding the
   term, so every memory that could hold the identifier; their texts are read and checked;
3. an identifier each of whose terms is held by ``DEPTH`` points or more (``user_id``: ``user``,
   ``id``) cannot be checked this way, and is said to be unchecked, never absent.

No index key is added for whole identifiers: this works on every collection, adopted ones too,
with no reindex, and costs nothing for a query whose identifiers the pool holds (most of them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sync.identifiers import holds
from sync.search.embedders import bm25
from sync.search.payload import PARENT_KEY, TEXT_KEY
from sync.search.request import SearchFilter
from sync.search.stores import VectorStore

DEPTH: Final = 256  # points one term's search may return and still be known to list them all
TERMS_TRIED: Final = 3  # an identifier's terms searched at most
CHECKED_MAX: Final = 5  # identifiers of one query checked against the whole store at most
_DIGIT = re.compile(r"\d")


@dataclass(frozen=True, slots=True)
class Presence:
    """The query's identifiers that no memory holds, and those that could not be checked."""

    absent: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()


def not_seen(named: Sequence[str], texts: Iterable[str]) -> list[str]:
    """Those of ``named`` that none of ``texts`` holds verbatim, in their order."""
    left = list(named)
    for text in texts:
        if not left:
            break
        left = [n for n in left if not holds(text, n)]
    return left


def terms_to_try(identifier: str) -> list[int]:
    """The identifier's BM25 term ids, the likeliest rare first: letters with digits (``e11000``),
    then numbers of three digits or more (``7781``), then words, longer first."""

    def rarity(word: str) -> tuple[int, int]:
        kind = 0 if _DIGIT.search(word) and not word.isdigit() else 1 if word.isdigit() and len(word) >= 3 else 2
        return kind, -len(word)

    ranked = sorted(bm25.query_terms(identifier), key=lambda w: rarity(w[0]))
    return [tid for _, tid in ranked[:TERMS_TRIED]]


def presence(
    store: VectorStore, named: Sequence[str], seen: Iterable[str], filter: SearchFilter | None = None
) -> Presence:
    """Which of the query's ``named`` identifiers no memory under ``filter`` holds; ``seen``: texts
    of the memories the search read already (any holding one settles it)."""
    absent: list[str] = []
    unchecked: list[str] = []
    for n, identifier in enumerate(not_seen(named, seen)):
        if n >= CHECKED_MAX:
            unchecked.append(identifier)
            continue
        texts = _texts_holding_a_term(store, identifier, filter)
        if texts is None:
            unchecked.append(identifier)
        elif not any(holds(t, identifier) for t in texts):
            absent.append(identifier)
    return Presence(tuple(absent), tuple(unchecked))


def _texts_holding_a_term(store: VectorStore, identifier: str, filter: SearchFilter | None) -> list[str] | None:
    """The texts of every episode holding one of the identifier's terms (the first term held by
    fewer than ``DEPTH`` points); None when none is, or the identifier has no term."""
    for term in terms_to_try(identifier):
        vector = bm25.SparseVector((term,), (1.0,))
        # A term held by DEPTH points or more is passed over: asked for its DEPTH-th holder alone
        # (one point read, not DEPTH), then for the ids of a rarer one's holders, then their texts.
        if store.sparse_search(vector, limit=1, filter=filter, with_payload=False, offset=DEPTH - 1):
            continue
        hits = store.sparse_search(vector, limit=DEPTH, filter=filter, with_payload=False)
        return texts_of(store, [(p.id, p.payload) for p in store.get([h.id for h in hits])])
    return None


def texts_of(store: VectorStore, points: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """The episodes' texts for these points: a further passage's is its episode's (read once)."""
    texts = [str(p[TEXT_KEY]) for _, p in points if isinstance(p.get(TEXT_KEY), str)]
    parents = sorted({str(p[PARENT_KEY]) for _, p in points if p.get(PARENT_KEY) and TEXT_KEY not in p})
    if parents:
        texts += [str(sp.payload.get(TEXT_KEY, "")) for sp in store.get(parents)]
    return texts


__all__ = ["CHECKED_MAX", "DEPTH", "Presence", "not_seen", "presence", "terms_to_try", "texts_of"]
