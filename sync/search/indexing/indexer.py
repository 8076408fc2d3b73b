"""The indexer: the backbone's change feed in, embedded points in the vector store out.

Data flows one way: the sync engine pushes to the backbone; the indexer reads the backbone's change
feed (every site's inserts, edits and forgets, in commit order), embeds what is new and upserts it.
The daemon runs a pass as soon as its own sync pass pushed something, and every few seconds for the
other sites' episodes; the same pass, run until the feed is drained, is the ``qdrant-episode-sync``
catch-up job and ``memsync reindex``.

Why it is safe to repeat: the store is the record of what is indexed. Each point carries the hash
of the text it was embedded from (``textHash``), so a change whose text is unchanged is not embedded
again (a re-graded reward only rewrites the payload), and a crash between upsert and cursor just
replays a page that then costs a lookup. Order within a page: upsert, then record ``qdrantPointId``
in the backbone, then advance the cursor, so nothing is recorded before it is searchable.

An archived episode (the cleanup job moved its body to the cold archive; the key stays) keeps its
point, marked ``archived`` in the payload, so that it stays searchable; a restore is a normal change
again and the rewrite drops the mark. A forget deletes the point, and marks the collection as owing
a purge (``CursorFile.owe_purge``): the engine's files keep a deleted point's bytes, so the warm
layer rebuilds the collection without it.

A rebuild (``memsync reindex``, a purge) fills a fresh collection from the feed with the collection
it replaces as ``previous``: a point whose text is unchanged is copied from it (its vectors, when
the spec is the same), not embedded again; an archived episode, whose body the feed no longer
has, can only be copied (or, under another model, embedded from the text its old payload kept).

An episode longer than the embedder's window is several points, one per passage
(``sync.search.indexing.text.split_passages``), each with its own dense and BM25 vector: BM25 per passage too,
so that a keyword search says which passage matched, and a long episode's length does not dilute a
rare term. The first passage keeps the episode's own id and its whole payload, plus ``passages``
(how many) and ``span``; the others (``passage_id``) carry the filter fields, ``parent`` (the
first's id), ``passage`` (the index) and ``span``, not the text. A short episode is one point,
exactly as before passages existed, so existing collections stay valid; a long episode indexed
before them (one point, its text cut at the window) is embedded again as passages when its text is
next edited, or by the next rebuild (``memsync reindex``), whose copy finds its first point lacking
the ``passages`` the new cut has.

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

The decisions (what to embed, copy, rewrite, mark, delete, which point a near-duplicate links to)
are pure functions, tested from tables; ``Indexer`` does the I/O around them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from sync.backbone.base import Change, ChangeFeed, PointRecord
from sync.errors import PermanentError
from sync.search.collection.cursor import CursorFile
from sync.search.embedders import bm25
from sync.search.embedders.base import Embedder
from sync.search.indexing.text import Span, episode_text, split_passages, text_hash
from sync.search.payload import (
    AGENT_KEY,
    APPROVAL_STATUS_KEY,
    ARCHIVED_KEY,
    CONTENT_HASH_KEY,
    DUPLICATE_KEY,
    LINKS,
    PARENT_KEY,
    PASSAGE_FIELDS,
    PASSAGE_KEY,
    PASSAGES_KEY,
    REWARD_KEY,
    SESSION_KEY,
    SITE_KEY,
    SOURCE_ID_KEY,
    SPAN_KEY,
    SUCCESS_KEY,
    TAGS_KEY,
    TASK_KEY,
    TEXT_HASH_KEY,
    TEXT_KEY,
    TS_KEY,
    passage_count,
)
from sync.search.query.rank import cosine
from sync.search.stores import (
    CollectionSpec,
    StoredPoint,
    VectorStore,
    WarmPoint,
    passage_id,
    point_id,
)

DEFAULT_DUPLICATE_THRESHOLD: Final = 0.95

Split = Callable[[str], Sequence[Span]]


def whole(text: str) -> list[Span]:
    """No splitting: the text is one passage."""
    return [(0, len(text))]


# --- the pure core -------------------------------------------------------------------------------


def payload_for(change: Change) -> dict[str, Any]:
    """What a point carries: every filter's field, the text shown in results, and the hashes."""
    episode = change.episode
    assert episode is not None
    text = episode_text(episode)
    # An approval's decision, only where one was asked: every other point keeps the payload it had.
    approval = {APPROVAL_STATUS_KEY: episode["approvalStatus"]} if episode.get("approvalStatus") else {}
    return approval | {
        SITE_KEY: change.site,
        SOURCE_ID_KEY: change.source_id,
        AGENT_KEY: episode.get("agentName"),
        SESSION_KEY: episode.get("sessionId"),
        TASK_KEY: episode.get("task"),
        TS_KEY: episode.get("ts"),
        REWARD_KEY: episode.get("reward"),
        SUCCESS_KEY: episode.get("success"),
        TAGS_KEY: list(episode.get("tags") or []),
        CONTENT_HASH_KEY: episode.get("contentHash"),
        TEXT_HASH_KEY: text_hash(text),
        TEXT_KEY: text,
    }


@dataclass(frozen=True, slots=True)
class ToEmbed:
    point_id: str
    text: str  # what is embedded: the passage's text (an episode's whole text when it is one passage)
    payload: dict[str, Any]


def head_id(change: Change) -> str:
    """The point an episode's first passage lives under: memsync's own (derived from the key), or
    the seed's point an adopted episode kept (the feed's ``seedPointId``), so that the index writes
    that point rather than a second one beside it."""
    return change.seed_point_id or point_id(change.site, change.source_id)


def passage_items(
    site: str, source_id: str, payload: Mapping[str, Any], spans: Sequence[Span], head: str | None = None
) -> list[ToEmbed]:
    """An episode's points, first passage first (under ``head``, memsync's own id by default). One
    passage spanning the whole text is the episode's point as it always was; otherwise the first
    carries the episode's payload plus ``passages`` and ``span``, the others the filter fields,
    ``parent``, ``passage`` and ``span``."""
    text = str(payload[TEXT_KEY])
    head = head or point_id(site, source_id)
    base = {k: v for k, v in payload.items() if k not in (PASSAGES_KEY, SPAN_KEY)}
    if list(spans) == [(0, len(text))]:
        return [ToEmbed(head, text, base)]
    (start, end), count = spans[0], len(spans)
    items = [ToEmbed(head, text[start:end], base | {PASSAGES_KEY: count, SPAN_KEY: [start, end]})]
    shared = {k: base[k] for k in PASSAGE_FIELDS if k in base}
    for index, (start, end) in enumerate(spans[1:], 1):
        extra = {PARENT_KEY: head, PASSAGE_KEY: index, SPAN_KEY: [start, end]}
        items.append(ToEmbed(passage_id(site, source_id, index), text[start:end], shared | extra))
    return items


def _ids(site: str, source_id: str, count: int, head: str | None = None) -> list[str]:
    ids = [passage_id(site, source_id, index) for index in range(count)]
    return [head, *ids[1:]] if head else ids


def _layout(payload: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a point's vectors were made from: the text, and which part of it."""
    return tuple(payload.get(k) for k in (TEXT_HASH_KEY, PASSAGES_KEY, SPAN_KEY, PASSAGE_KEY))


def trusted_seed(spec: CollectionSpec, held: StoredPoint) -> bool:
    """Is ``held`` (read with its vectors) a seed point of an adopted collection, whose vector
    memsync keeps rather than embedding its episode again: memsync never wrote it (no
    ``textHash``) and it has a dense vector of the collection's size. ``plan_page`` also asks
    the backbone's word that the point is the episode's current content."""
    return (
        spec.adopted and TEXT_HASH_KEY not in held.payload and held.dense is not None and len(held.dense) == spec.dims
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
                plan.delete.extend(_ids(change.site, change.source_id, passage_count(stored[pid]), pid))
            continue
        held = stored.get(pid)
        if held is not None and pid in seeds and TEXT_HASH_KEY not in held and change.point_id == pid:
            _plan_seed(plan, change, split)
            continue
        unchanged += _plan_episode(plan, change, held, split)
        if change.point_id != pid:
            plan.record.append(PointRecord(change.site, change.source_id, pid, str(change.episode.get("contentHash"))))
    # A restored episode is a normal change again: its payload (no ``archived``) differs from the
    # marked one held, so it is rewritten above without the mark.
    return replace(plan, unchanged=unchanged)


def _plan_seed(plan: IndexPlan, change: Change, split: Split) -> None:
    """An adopted seed point the backbone vouches for: its vector kept as the episode's first
    passage, its payload memsync's; only passages past the first are embedded."""
    payload = payload_for(change)
    first, *further = passage_items(change.site, change.source_id, payload, split(payload[TEXT_KEY]), head_id(change))
    plan.adopt.append((first.point_id, first.payload))
    plan.embed.extend(further)


def _plan_episode(plan: IndexPlan, change: Change, held: Mapping[str, Any] | None, split: Split) -> int:
    """Add a present episode's points to ``plan``: all embedded when its text changed, all rewritten
    when only the payload did; 1 when nothing did, else 0."""
    episode = payload_for(change)
    head = head_id(change)
    ids = _ids(change.site, change.source_id, 1 if held is None else passage_count(held), head)
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


@dataclass(frozen=True, slots=True)
class CopyPlan:
    """What a rebuild takes from the collection it replaces, rather than from the embedder."""

    copy: list[WarmPoint] = field(default_factory=list)  # upserted as they are
    embed: list[ToEmbed] = field(default_factory=list)  # still to embed
    missing: list[str] = field(default_factory=list)  # archived, and in neither collection


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
        if not same_model or held is None or held.dense is None or _layout(held.payload) != _layout(item.payload):
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


def _copied(
    item: ToEmbed, held: StoredPoint, payload: dict[str, Any], same_bm25: bool, bm25_config: bm25.Bm25Config
) -> WarmPoint:
    assert held.dense is not None
    sparse = held.sparse if same_bm25 and held.sparse is not None else None
    if sparse is None:
        sparse = bm25.embed_document(item.text, bm25_config)
    return WarmPoint(item.point_id, held.dense, sparse, payload)


def canonical_of(own_id: str, match_id: str, match_payload: Mapping[str, Any]) -> str | None:
    """The point a near-duplicate links to: the head of the match's group, never itself (an edited
    head that now resembles one of its own duplicates heads its group still)."""
    head = str(match_payload.get(DUPLICATE_KEY) or match_id)
    return None if own_id in (head, match_id) else head


def link_within_page(
    items: Sequence[ToEmbed], vectors: Sequence[Sequence[float]], threshold: float
) -> list[str | None]:
    """For each item, the earlier item of the same page it nearly duplicates (its group's head), if any."""
    links: list[str | None] = []
    for i, vector in enumerate(vectors):
        link = None
        for j in range(i):
            if cosine(vector, vectors[j]) >= threshold:
                link = canonical_of(items[i].point_id, items[j].point_id, {DUPLICATE_KEY: links[j]})
                if link is not None:
                    break
        links.append(link)
    return links


# --- the I/O around it ---------------------------------------------------------------------------


_COUNTS: Final = (
    "changes",
    "embedded",
    "copied",
    "rewritten",
    "archived",
    "archived_missing",
    "deleted",
    "unchanged",
    "linked",
    "failed",
    "adopted",
)


@dataclass(slots=True)
class PassReport:
    changes: int = 0
    embedded: int = 0
    rewritten: int = 0
    deleted: int = 0
    unchanged: int = 0
    linked: int = 0
    failed: int = 0
    cursor: int = 0
    end: int = 0  # the feed's latest seq when the pass began (a progress bar's total)
    drained: bool = True  # the feed had nothing more when the pass ended
    copied: int = 0  # taken from the collection a rebuild replaces, not embedded
    archived: int = 0  # points marked archived
    archived_missing: int = 0  # archived episodes with no point to keep (nor, in a rebuild, to copy)
    adopted: int = 0  # an adopted collection's seed points made memsync's, their vectors kept

    def add(self, other: PassReport) -> None:
        for name in _COUNTS:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cursor, self.drained = other.cursor, other.drained
        self.end = max(self.end, other.cursor)


@dataclass(frozen=True, slots=True)
class Previous:
    """The collection a rebuild replaces, open in its own store handle, and what built it."""

    store: VectorStore
    spec: CollectionSpec


class Indexer:
    """Keeps one collection in step with the backbone. Not thread-safe by itself: one indexer per
    store, and the store serialises its own calls (searches run beside it). With ``previous`` it
    builds a fresh collection, copying from the one it replaces what need not be embedded again."""

    def __init__(
        self,
        *,
        backbone: ChangeFeed,
        store: VectorStore,
        embedder: Embedder,
        collection: str,
        cursor_file: CursorFile,
        page_size: int = 64,
        duplicate_threshold: float = DEFAULT_DUPLICATE_THRESHOLD,
        bm25_config: bm25.Bm25Config = bm25.DEFAULT_BM25,
        on_failed: Callable[[str, str], None] | None = None,
        previous: Previous | None = None,
    ) -> None:
        self.backbone = backbone
        self.store = store
        self.embedder = embedder
        self.collection = collection
        self.cursors = cursor_file
        self.page_size = page_size
        self.duplicate_threshold = duplicate_threshold
        self.bm25 = bm25_config
        self.on_failed = on_failed
        self.previous = previous
        self.spec: CollectionSpec | None = None

    def open(self) -> CollectionSpec:
        """Open (or create) the collection; CollectionMismatch if it holds another model's vectors."""
        self.spec = self.store.open_or_create(self.collection, self.embedder.name, self.embedder.dims, self.bm25)
        return self.spec

    @property
    def cursor(self) -> int:
        return self.cursors.read(self.collection)

    def split(self, text: str) -> list[Span]:
        """``text`` cut into passages that fit the embedder's window."""
        return split_passages(text, self.embedder.passage_tokens, self.embedder.count_tokens)

    def run_page(self) -> PassReport:
        """Index one page of the feed. Raises on transient failures with the cursor unmoved."""
        if self.spec is None:
            self.open()
        after = self.cursor
        changes = self.backbone.changes(after, self.page_size)
        # Only an empty page says the feed is drained: a backbone may return short pages (Convex
        # stops a page at its read limit).
        report = PassReport(changes=len(changes), cursor=after, drained=not changes)
        if not changes:
            return report
        ids = list(dict.fromkeys(head_id(c) for c in changes))
        stored = {p.id: p.payload for p in self.store.get(ids)}
        plan = plan_page(changes, stored, self.split, self._seeds(changes, stored))
        if plan.stale:
            # Before the upserts: until the first point says how many passages there are now, a
            # replay still sees the old count and deletes these again.
            self.store.delete(plan.stale)
        copied = self._copy(plan)
        if copied.missing:
            copied = self._from_archive(changes, copied)
        if copied.copy:
            self.store.upsert(copied.copy)
        report.embedded, report.linked, failed = self._embed(copied.embed)
        report.failed = len(failed)
        if plan.adopt:
            # After its further passages: until its payload carries memsync's textHash, a replay
            # trusts the seed point again and embeds them again, rather than finding it done.
            self.store.overwrite_payloads(plan.adopt)
        self._rewrite(plan.rewrite + plan.archive)
        if plan.delete:
            # Owed before the delete: the deleted points' bytes stay in the store's files until the
            # warm layer rebuilds the collection, and a crash right after this must not forget that.
            self.cursors.owe_purge(self.collection)
            self.store.delete(plan.delete)
        records = [r for r in plan.record if r.point_id not in failed]
        if records:
            self.backbone.record_point_ids(records)
        # Counted in episodes, not points: a long episode is one, whatever its passages.
        report.rewritten = sum(pid in stored for pid, _ in plan.rewrite)
        report.deleted, report.unchanged = sum(pid in stored for pid in plan.delete), plan.unchanged
        report.adopted = len(plan.adopt)
        report.copied, report.archived, report.archived_missing = (
            sum(PARENT_KEY not in p.payload for p in copied.copy),
            len(plan.archive) + len(plan.carry) - len(copied.missing),
            len(copied.missing),
        )
        report.cursor = changes[-1].seq
        self.cursors.write(self.collection, report.cursor)
        return report

    def run(
        self, *, stop: Callable[[], bool] = lambda: False, progress: Callable[[PassReport], None] | None = None
    ) -> PassReport:
        """Pages until the feed is drained (or ``stop()``): the catch-up pass."""
        total = PassReport(cursor=self.cursor, end=self.backbone.feed_end() if progress else 0)
        while not stop():
            page = self.run_page()
            total.add(page)
            if progress is not None:
                progress(total)
            if page.drained:
                break
        return total

    def _seeds(self, changes: Sequence[Change], stored: Mapping[str, Mapping[str, Any]]) -> set[str]:
        """The stored points of this page ``trusted_seed`` accepts: only in an adopted collection,
        and only those never written by memsync are read with their vectors."""
        spec = self.spec or self.open()
        if not spec.adopted:
            return set()
        unwritten = [
            c.point_id for c in changes if c.point_id == head_id(c) and TEXT_HASH_KEY not in stored.get(c.point_id, {})
        ]
        unwritten = [pid for pid in dict.fromkeys(unwritten) if pid in stored]
        if not unwritten:
            return set()
        return {p.id for p in self.store.get(unwritten, with_vectors=True) if trusted_seed(spec, p)}

    def _copy(self, plan: IndexPlan) -> CopyPlan:
        """What ``previous`` gives this page (nothing outside a rebuild: then an archived episode
        that is not in the store is missing for good)."""
        previous = self.previous
        if previous is None or not (plan.embed or plan.carry):
            return CopyPlan([], list(plan.embed), list(plan.carry))
        spec = self.spec or self.open()
        same_model = (previous.spec.model_name, previous.spec.dims) == (spec.model_name, spec.dims)
        wanted = [item.point_id for item in plan.embed] + plan.carry
        # Vectors of another model are useless here: read only the payloads then.
        held = {p.id: p for p in previous.store.get(wanted, with_vectors=same_model)}
        # An archived episode's further passages, which the feed no longer names.
        more = [
            pid
            for carried in plan.carry
            if carried in held
            for pid in _ids(
                str(held[carried].payload.get(SITE_KEY, "")),
                str(held[carried].payload.get(SOURCE_ID_KEY, "")),
                passage_count(held[carried].payload),
            )[1:]
        ]
        if more:
            held |= {p.id: p for p in previous.store.get(more, with_vectors=same_model)}
        return plan_copy(
            plan.embed,
            plan.carry,
            held,
            same_model=same_model,
            same_bm25=previous.spec.bm25 == spec.bm25,
            bm25_config=self.bm25,
            split=self.split,
        )

    def _from_archive(self, changes: Sequence[Change], copied: CopyPlan) -> CopyPlan:
        """Archived episodes no collection holds (archived before this index saw them: a new site,
        a new index, a rebuild under another model), embedded from their records in the archive."""
        by_id = {head_id(c): (c.site, c.source_id) for c in changes}
        records = self.backbone.archived_records([by_id[pid] for pid in copied.missing])
        revived, missing = archived_to_embed(changes, copied.missing, records, self.split)
        return CopyPlan(copied.copy, [*copied.embed, *revived], missing)

    def _embed(self, items: Sequence[ToEmbed]) -> tuple[int, int, set[str]]:
        """Embed and upsert; returns (embedded, linked, ids the embedder refused). A refused item
        stays unrecorded and is tried again on its next edit or a reindex."""
        if not items:
            return 0, 0, set()
        try:
            vectors = self.embedder.embed_documents([item.text for item in items])
        except PermanentError as exc:
            if len(items) == 1:
                if self.on_failed is not None:
                    self.on_failed(items[0].point_id, str(exc))
                return 0, 0, {items[0].point_id}
            # One text the provider refuses must not hold up the rest: embed the halves apart.
            half = len(items) // 2
            first, second = self._embed(items[:half]), self._embed(items[half:])
            return first[0] + second[0], first[1] + second[1], first[2] | second[2]
        # Near-duplicates are episodes alike: only an episode's first point links, or is linked to.
        firsts = [i for i, item in enumerate(items) if PARENT_KEY not in item.payload]
        found = link_within_page([items[i] for i in firsts], [vectors[i] for i in firsts], self.duplicate_threshold)
        page_links = dict(zip(firsts, found, strict=True))
        points: list[WarmPoint] = []
        linked = 0
        for i, (item, vector) in enumerate(zip(items, vectors, strict=True)):
            link = None
            if i in page_links:
                link = page_links[i] or self._link_to_store(item.point_id, vector)
            payload = dict(item.payload)
            if link is not None:
                payload[DUPLICATE_KEY] = link
                linked += 1
            points.append(WarmPoint(item.point_id, vector, bm25.embed_document(item.text, self.bm25), payload))
        self.store.upsert(points)
        return sum(PARENT_KEY not in p.payload for p in points), linked, set()

    def _link_to_store(self, own_id: str, vector: Sequence[float]) -> str | None:
        for hit in self.store.dense_search(vector, limit=3, score_threshold=self.duplicate_threshold):
            if PARENT_KEY in hit.payload:
                continue
            link = canonical_of(own_id, hit.id, hit.payload)
            if link is not None:
                return link
        return None

    def _rewrite(self, rewrites: list[tuple[str, dict[str, Any]]]) -> None:
        """Same text, new payload (a re-graded reward, new tags): the stored vectors are kept."""
        if not rewrites:
            return
        held: dict[str, StoredPoint] = {
            p.id: p for p in self.store.get([pid for pid, _ in rewrites], with_vectors=True)
        }
        points = []
        for pid, payload in rewrites:
            point = held.get(pid)
            if point is None or point.dense is None:
                continue  # deleted meanwhile
            sparse = point.sparse or bm25.embed_document(str(payload.get(TEXT_KEY, "")), self.bm25)
            own = {k: point.payload[k] for k in (PARENT_KEY, PASSAGE_KEY, SPAN_KEY) if k in point.payload}
            points.append(WarmPoint(pid, point.dense, sparse, own | payload))
        if points:
            self.store.upsert(points)
