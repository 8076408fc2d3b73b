"""A collection memsync adopted: the seed design's points it keeps rather than embedding again.

An adopted collection (``memsync adopt-collection``) already holds the seed design's vectors, under
the point ids its episodes keep (``head_id``), with the seed's payload and no ``textHash``. Its
first pass must not embed them again (the seed's users have hundreds of thousands of paid-for
vectors): a seed point is trusted (``trusted_seed``) when the collection is adopted, the point
carries no ``textHash`` (memsync never wrote it), holds a dense vector of the collection's size,
and the backbone still records it for the episode's content (``Change.point_id`` is the point: an
episode edited after the seed embedded it has no recorded point and is embedded again). Its payload
is replaced by memsync's (``overwrite_payloads``: no vector is read back or sent), so every filter
and browse finds it; its dense and sparse vectors stay the seed's. An episode longer than one
passage keeps the seed's vector as its first passage (the seed embedded the whole text, which its
provider cut at the same window memsync's first passage fills) and only its further passages are
embedded: the tail becomes searchable, the head costs nothing, and the first point's payload says
``passages`` and ``span`` as memsync's own cut does, so a later rebuild copies it as any other.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sync.backbone.base import Change
from sync.search.indexing.passages import Split, ToEmbed, head_id, passage_items, payload_for
from sync.search.payload import TEXT_HASH_KEY, TEXT_KEY
from sync.search.stores import CollectionSpec, StoredPoint, VectorStore


def trusted_seed(spec: CollectionSpec, held: StoredPoint) -> bool:
    """Is ``held`` (read with its vectors) a seed point of an adopted collection, whose vector
    memsync keeps rather than embedding its episode again: memsync never wrote it (no
    ``textHash``) and it has a dense vector of the collection's size. ``plan_page`` also asks
    the backbone's word that the point is the episode's current content."""
    return (
        spec.adopted and TEXT_HASH_KEY not in held.payload and held.dense is not None and len(held.dense) == spec.dims
    )


def seed_items(change: Change, split: Split) -> tuple[tuple[str, dict[str, Any]], list[ToEmbed]]:
    """An adopted seed point the backbone vouches for: its vector kept as the episode's first
    passage, its payload memsync's; only passages past the first are embedded. Returns the first
    point's new payload (written over the seed's, the vectors kept) and the passages to embed."""
    payload = payload_for(change)
    first, *further = passage_items(change.site, change.source_id, payload, split(payload[TEXT_KEY]), head_id(change))
    return (first.point_id, first.payload), further


def trusted_seeds(
    store: VectorStore, spec: CollectionSpec, changes: Sequence[Change], stored: Mapping[str, Mapping[str, Any]]
) -> set[str]:
    """The stored points of this page ``trusted_seed`` accepts: only in an adopted collection,
    and only those never written by memsync are read with their vectors."""
    if not spec.adopted:
        return set()
    unwritten = [
        c.point_id for c in changes if c.point_id == head_id(c) and TEXT_HASH_KEY not in stored.get(c.point_id, {})
    ]
    unwritten = [pid for pid in dict.fromkeys(unwritten) if pid in stored]
    if not unwritten:
        return set()
    return {p.id for p in store.get(unwritten, with_vectors=True) if trusted_seed(spec, p)}
