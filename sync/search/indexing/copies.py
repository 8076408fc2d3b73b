"""A rebuild's copies: what a fresh collection takes from the collection it replaces rather than
from the embedder.

A rebuild (``memsync reindex``, a purge) fills a fresh collection from the feed with the collection
it replaces as ``previous``: a point whose text is unchanged is copied from it (its vectors, when
the spec is the same), not embedded again; an archived episode, whose body the feed no longer
has, can only be copied (or, under another model, embedded from the text its old payload kept).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sync.backbone.base import Change
from sync.search.embedders import bm25
from sync.search.indexing.passages import Split, ToEmbed, head_id, passage_items, payload_for, point_ids, whole
from sync.search.payload import (
    ARCHIVED_KEY,
    LINKS,
    PASSAGE_KEY,
    PASSAGES_KEY,
    SITE_KEY,
    SOURCE_ID_KEY,
    SPAN_KEY,
    TEXT_HASH_KEY,
    TEXT_KEY,
    passage_count,
)
from sync.search.stores import CollectionSpec, StoredPoint, VectorStore, WarmPoint


@dataclass(frozen=True, slots=True)
class Previous:
    """The collection a rebuild replaces, open in its own store handle, and what built it."""

    store: VectorStore
    spec: CollectionSpec


@dataclass(frozen=True, slots=True)
class CopyPlan:
    """What a rebuild takes from the collection it replaces, rather than from the embedder."""

    copy: list[WarmPoint] = field(default_factory=list)  # upserted as they are
    embed: list[ToEmbed] = field(default_factory=list)  # still to embed
    missing: list[str] = field(default_factory=list)  # archived, and in neither collection


def _made_from(payload: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a point's vectors were made from: the text, and which part of it."""
    return tuple(payload.get(k) for k in (TEXT_HASH_KEY, PASSAGES_KEY, SPAN_KEY, PASSAGE_KEY))


def plan_copy(
    embed: Sequence[ToEmbed],
    carry: Sequence[str],
    previous: Mapping[str, StoredPoint],
    *,
    same_model: bool,
    same_bm25: bool,
    bm25_config: bm25.Bm25Config,
    split: Split = whole,
) -> CopyPlan:
    """Which of a page's points come from ``previous`` (the replaced collection's points, by id).

    A point to embed whose text is unchanged there is copied with its dense vector when the model
    (and dimensions) are the same; its BM25 vector is copied when the BM25 recipe is the same and
    computed again otherwise (cheap: no model). Its near-duplicate link comes along: it was found
    with those very vectors. Each passage is copied or embedded on its own: a point is copied only
    when it was made from the same part of the same text. An archived point (``carry``) keeps its
    old payload, marked archived, its passages cut again from the text that payload kept (the feed
    no longer has its body); what cannot be copied is embedded from that text. An adopted episode's
    first point keeps its seed's id (``head_id``), its passages are cut and copied as any other's."""
    plan = CopyPlan()

    def take(item: ToEmbed) -> None:
        held = previous.get(item.point_id)
        if not same_model or held is None or held.dense is None or _made_from(held.payload) != _made_from(item.payload):
            # A link found among other vectors than these is not carried over: the new ones find their own.
            plan.embed.append(replace(item, payload={k: v for k, v in item.payload.items() if k not in LINKS}))
            return
        payload = item.payload | {k: held.payload[k] for k in LINKS if k in held.payload}
        plan.copy.append(_copied(item, held, payload, same_bm25, bm25_config))

    for item in embed:
        take(item)
    for pid in carry:
        held = previous.get(pid)
        text = None if held is None else held.payload.get(TEXT_KEY)
        if held is None or not isinstance(text, str):
            plan.missing.append(pid)  # without its body nothing can index it again
            continue
        payload = held.payload | {ARCHIVED_KEY: True}
        site, source_id = payload.get(SITE_KEY), payload.get(SOURCE_ID_KEY)
        if not isinstance(site, str) or not isinstance(source_id, str):
            # A payload from before sourceId was kept, or an adopted collection's point memsync never
            # rewrote (the seed's own keys): one point as it was.
            take(ToEmbed(pid, text, payload))
            continue
        # Cut again, as a memsync episode is: under its own id, or the seed's point an adopted one
        # kept (``head_id``), with its further passages under the ids derived from its key.
        for item in passage_items(site, source_id, payload, split(text), pid):
            take(item)
    return plan


def archived_to_embed(
    changes: Sequence[Change],
    missing: Sequence[str],
    records: Mapping[tuple[str, str], Mapping[str, Any]],
    split: Split = whole,
) -> tuple[list[ToEmbed], list[str]]:
    """For archived points in no collection: what to embed from the archive's records (marked
    archived), and the ids still missing (the archive did not have them either)."""
    by_id = {head_id(c): c for c in changes}
    revived: list[ToEmbed] = []
    still: list[str] = []
    for pid in missing:
        change = by_id[pid]
        record = records.get((change.site, change.source_id))
        if record is None:
            still.append(pid)
            continue
        episode = {k: v for k, v in record.items() if k != ARCHIVED_KEY}
        payload = payload_for(Change(change.seq, change.site, change.source_id, episode)) | {ARCHIVED_KEY: True}
        revived.extend(passage_items(change.site, change.source_id, payload, split(payload[TEXT_KEY]), pid))
    return revived, still


def copy_page(
    previous: Previous,
    spec: CollectionSpec,
    embed: Sequence[ToEmbed],
    carry: Sequence[str],
    *,
    bm25_config: bm25.Bm25Config,
    split: Split,
) -> CopyPlan:
    """What ``previous`` gives a page of a rebuild into a collection built as ``spec``: its
    points to embed (``embed``) and its archived episodes not in the new collection (``carry``),
    read from ``previous`` and decided by ``plan_copy``."""
    same_model = (previous.spec.model_name, previous.spec.dims) == (spec.model_name, spec.dims)
    wanted = [item.point_id for item in embed] + list(carry)
    # Vectors of another model are useless here: read only the payloads then.
    held = {p.id: p for p in previous.store.get(wanted, with_vectors=same_model)}
    # An archived episode's further passages, which the feed no longer names.
    more = [
        pid
        for carried in carry
        if carried in held
        for pid in point_ids(
            str(held[carried].payload.get(SITE_KEY, "")),
            str(held[carried].payload.get(SOURCE_ID_KEY, "")),
            passage_count(held[carried].payload),
        )[1:]
    ]
    if more:
        held |= {p.id: p for p in previous.store.get(more, with_vectors=same_model)}
    return plan_copy(
        embed,
        carry,
        held,
        same_model=same_model,
        same_bm25=previous.spec.bm25 == spec.bm25,
        bm25_config=bm25_config,
        split=split,
    )


def _copied(
    item: ToEmbed, held: StoredPoint, payload: dict[str, Any], same_bm25: bool, bm25_config: bm25.Bm25Config
) -> WarmPoint:
    assert held.dense is not None
    sparse = held.sparse if same_bm25 and held.sparse is not None else None
    if sparse is None:
        sparse = bm25.embed_document(item.text, bm25_config)
    return WarmPoint(item.point_id, held.dense, sparse, payload)
