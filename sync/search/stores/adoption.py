"""Whose collection is it, and may memsync take over one it did not make: pure decisions, no I/O.

memsync never destroys what it did not make. Every collection it creates records what it was built
with (``CollectionSpec``, under ``RECORD_KEY`` in the collection's metadata); a collection without
that record was made by someone else (the seed design's Convex action filling
``agent_memory_hybrid``, a person's experiment) and is never dropped, renamed or written. Opening
one is refused with the two ways forward (``foreign_refusal``): build memsync's own collection beside
it, or adopt it.

Adopting (``memsync adopt-collection``) is the person's explicit call, and only for a collection
whose vectors memsync can search as they are (``judge``):

- one named dense vector of the configured model's size, cosine distance (the seed's ``dense``,
  768-d Gemini ``gemini-embedding-001``): memsync's queries land in the same space only if the
  person configured the model that filled it, which memsync cannot check, and says so;
- one named sparse vector whose IDF the engine applies (``Modifier.IDF``; the seed's ``text``,
  filled by Qdrant's own BM25, ``qdrant/bm25``, which memsync's client-side BM25 reproduces,
  ``sync.search.embedders.bm25``);
- an unnamed (single) vector, a dense vector of another size or distance, or a sparse vector
  without IDF is refused: it would answer memsync's queries with noise.

When there are several candidates, the names memsync itself uses (``dense``, ``bm25``) and then the
seed's (``dense``, ``text``) break the tie; otherwise the choice is ambiguous and refused.

Payload: memsync filters on ``PAYLOAD_INDEXES``'s fields (site, agent, session, tags, ts, ...) and
shows ``text``. Adoption maps no field: points that lack them (the seed's carry its own keys) are
found by meaning and keywords but by no filter until the indexer rewrites them from the feed;
``judge`` reports which of memsync's fields the sampled points lack, so the person knows.

The record of an adopted collection says so (``adopted``) and names the vectors memsync must use;
an adopted collection is still never dropped: a later rebuild builds memsync's own collection and
leaves it in place (``may_drop``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final

from sync.search.payload import PAYLOAD_INDEXES, TEXT_KEY
from sync.search.stores.base import DENSE, RECORD_KEY, SPARSE

# Names preferred when a collection has several candidates: memsync's own, then the seed design's.
PREFERRED_DENSE: Final = (DENSE,)
PREFERRED_SPARSE: Final = (SPARSE, "text")
COSINE: Final = "cosine"


class Origin(StrEnum):
    OURS = "ours"  # memsync created it: its record, not adopted
    ADOPTED = "adopted"  # someone else made it; the person adopted it (memsync writes it, never drops it)
    FOREIGN = "foreign"  # no memsync record: never dropped, renamed or written


def origin(metadata: Mapping[str, Any] | None) -> Origin:
    """Who made the collection whose metadata (or edge sidecar) this is."""
    record = (metadata or {}).get(RECORD_KEY)
    if not isinstance(record, Mapping):
        return Origin.FOREIGN
    return Origin.ADOPTED if record.get("adopted") is True else Origin.OURS


def may_drop(made_by: Origin) -> bool:
    """Only what memsync made goes; an adopted collection is left in place."""
    return made_by is Origin.OURS


@dataclass(frozen=True, slots=True)
class DenseVector:
    size: int
    distance: str  # "cosine", "dot", "euclid", "manhattan" (lower case)


@dataclass(frozen=True, slots=True)
class Layout:
    """A collection's vectors as the engine describes them, and the payload keys of a sample of its
    points. ``unnamed`` is a single vector without a name (Qdrant's default vector)."""

    dense: Mapping[str, DenseVector] = field(default_factory=dict)
    sparse_idf: Mapping[str, bool] = field(default_factory=dict)  # name -> does the engine apply IDF
    unnamed: bool = False
    payload_keys: frozenset[str] = frozenset()
    sampled: int = 0  # how many points the payload keys were read from


@dataclass(frozen=True, slots=True)
class Verdict:
    dense: str | None  # the dense vector memsync would use
    sparse: str | None  # the sparse vector memsync would use
    problems: tuple[str, ...]  # why it cannot be adopted: empty when it can
    unmapped: tuple[str, ...]  # memsync's filter fields the sampled points lack

    @property
    def adoptable(self) -> bool:
        return not self.problems


def _pick(candidates: list[str], preferred: Iterable[str]) -> str | None:
    if len(candidates) == 1:
        return candidates[0]
    for name in preferred:
        if name in candidates:
            return name
    return None


def judge(layout: Layout, dims: int) -> Verdict:
    """May a collection with ``layout`` be adopted by a site whose model makes ``dims``-d vectors?"""
    problems: list[str] = []
    if layout.unnamed:
        problems.append(
            "its dense vector has no name (memsync searches a named dense vector beside a named sparse one)"
        )
    fitting = sorted(n for n, v in layout.dense.items() if v.size == dims and v.distance == COSINE)
    dense = _pick(fitting, PREFERRED_DENSE)
    if not fitting:
        seen = ", ".join(f"'{n}' {v.size} dims {v.distance}" for n, v in sorted(layout.dense.items())) or "none"
        problems.append(f"no named dense vector of {dims} dims with cosine distance (it has: {seen})")
    elif dense is None:
        problems.append(f"several dense vectors fit ({', '.join(fitting)}) and none is named '{DENSE}'")
    with_idf = sorted(n for n, idf in layout.sparse_idf.items() if idf)
    sparse = _pick(with_idf, PREFERRED_SPARSE)
    if not with_idf:
        seen = ", ".join(f"'{n}'" for n in sorted(layout.sparse_idf)) or "none"
        problems.append(f"no named sparse vector with the IDF modifier for BM25 (it has: {seen})")
    elif sparse is None:
        problems.append(f"several sparse vectors fit ({', '.join(with_idf)}) and none is named '{SPARSE}' or 'text'")
    unmapped = tuple(k for k in (*PAYLOAD_INDEXES, TEXT_KEY) if k not in layout.payload_keys) if layout.sampled else ()
    if problems:
        return Verdict(None, None, tuple(problems), unmapped)
    return Verdict(dense, sparse, (), unmapped)


def foreign_refusal(collection: str, where: str, *, configured: str) -> str:
    """The one sentence that refuses a collection memsync did not make, with the two ways forward.
    Where ``warm.collection`` names it, both start with a name of memsync's own: on a Qdrant server
    that name is the alias every site goes through (``sync.search.collection.shared_alias``), which
    cannot be the name of a collection."""
    if collection == configured:
        ways = (
            f"set warm.collection to a name of its own (e.g. {configured}-memsync), then either memsync builds its "
            f"own collection beside it, or, if its vectors fit this site's model, `memsync adopt-collection "
            f"{collection}` serves it under that name"
        )
    else:
        ways = (
            "either run `memsync reindex`, which builds memsync's own collection beside it, or, if its vectors fit "
            f"this site's model, run `memsync adopt-collection {collection}`"
        )
    return (
        f"collection {collection} at {where} was not made by memsync (no memsync record in its metadata), and "
        f"memsync never drops, renames or writes it: {ways} "
        "(`memsync docs search`: a Qdrant collection memsync did not make)"
    )
