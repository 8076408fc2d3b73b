"""A page of the feed, decided: which points to embed, rewrite, mark archived, delete, carry from
the collection a rebuild replaces, or take over from an adopted seed. Pure, tested from tables;
``sync.search.indexing.indexer.Indexer`` does the I/O around it.

Why it is safe to repeat: the store is the record of what is indexed. Each point carries the hash
of the text it was embedded from (``textHash``), so a change whose text is unchanged is not embedded
again (a re-graded reward only rewrites the payload), and a crash between upsert and cursor just
replays a page that then costs a lookup.

An archived episode (the cleanup job moved its body to the cold archive; the key stays) keeps its
point, marked ``archived`` in the payload, so that it stays searchable; a restore is a normal change
again and the rewrite drops the mark. A forgotten episode's points (every passage) are deleted.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from sync.backbone.base import Change, PointRecord
from sync.search.indexing.passages import Split, ToEmbed, head_id, passage_items, payload_for, point_ids, whole
from sync.search.indexing.seeds import seed_items
from sync.search.payload import (
    ARCHIVED_KEY,
    LINKS,
    PASSAGE_FIELDS,
    PASSAGES_KEY,
    SPAN_KEY,
    TEXT_HASH_KEY,
    TEXT_KEY,
    passage_count,
)


@dataclass(frozen=True, slots=True)
class IndexPlan:
    """One page of the feed, decided."""

    embed: list[ToEmbed] = field(default_factory=list)  # new text: embed and upsert
    rewrite: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # same text, new payload
    delete: list[str] = field(default_factory=list)  # forgotten
    record: list[PointRecord] = field(default_factory=list)  # qdrantPointId to record once upserted
    unchanged: int = 0
    archive: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # archived: payload marked
    carry: list[str] = field(default_factory=list)  # archived, not in this store: from ``previous``
    stale: list[str] = field(default_factory=list)  # passages past an edited episode's new count
    adopt: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # seed points: payload only


def plan_page(
    changes: Sequence[Change],
    stored: Mapping[str, Mapping[str, Any]],
    split: Split = whole,
    seeds: Collection[str] = (),
) -> IndexPlan:
    """Decide a page: ``stored`` maps point ids already in the store to their payloads (an
    episode's first point: the others follow from it), ``split`` cuts a text into passages,
    ``seeds`` names the stored points ``trusted_seed`` accepts (an adopted collection's).

    A key repeated in the page (it cannot be, but a replayed page may overlap) counts once, as its
    latest change."""
    latest: dict[str, Change] = {}
    for change in changes:
        latest[head_id(change)] = change
    plan = IndexPlan()
    unchanged = 0
    for pid, change in latest.items():
        if change.episode is None and change.archived:
            held = stored.get(pid)
            if held is None:
                plan.carry.append(pid)  # its body is gone from the feed: only a copy can bring it
            elif held.get(ARCHIVED_KEY) is True:
                unchanged += 1
            else:
                plan.archive.append((pid, dict(held) | {ARCHIVED_KEY: True}))
            continue
        if change.episode is None:
            if pid in stored:
                plan.delete.extend(point_ids(change.site, change.source_id, passage_count(stored[pid]), pid))
            continue
        held = stored.get(pid)
        if held is not None and pid in seeds and TEXT_HASH_KEY not in held and change.point_id == pid:
            adopt, further = seed_items(change, split)
            plan.adopt.append(adopt)
            plan.embed.extend(further)
            continue
        unchanged += _plan_episode(plan, change, held, split)
        if change.point_id != pid:
            plan.record.append(PointRecord(change.site, change.source_id, pid, str(change.episode.get("contentHash"))))
    # A restored episode is a normal change again: its payload (no ``archived``) differs from the
    # marked one held, so it is rewritten above without the mark.
    return replace(plan, unchanged=unchanged)


def _plan_episode(plan: IndexPlan, change: Change, held: Mapping[str, Any] | None, split: Split) -> int:
    """Add a present episode's points to ``plan``: all embedded when its text changed, all rewritten
    when only the payload did; 1 when nothing did, else 0."""
    episode = payload_for(change)
    head = head_id(change)
    ids = point_ids(change.site, change.source_id, 1 if held is None else passage_count(held), head)
    if held is None or held.get(TEXT_HASH_KEY) != episode[TEXT_HASH_KEY]:
        items = passage_items(change.site, change.source_id, episode, split(episode[TEXT_KEY]), head)
        plan.embed.extend(items)
        plan.stale.extend(ids[len(items) :])
        return 0
    # The same text is cut as it was (the collection's one model): no tokenizer is needed, so a
    # payload-only change (a re-grade, an approval) never loads the model.
    payload = episode | {k: held[k] for k in (PASSAGES_KEY, SPAN_KEY) if k in held}
    if {k: v for k, v in held.items() if k not in LINKS} == payload:
        return 1
    plan.rewrite.append((ids[0], payload | {k: held[k] for k in LINKS if k in held}))
    # Each further passage keeps its own parent, index and span (``Indexer._rewrite``).
    plan.rewrite.extend((pid, {k: episode[k] for k in PASSAGE_FIELDS if k in episode}) for pid in ids[1:])
    return 0
