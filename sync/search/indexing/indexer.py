"""The indexer: the backbone's change feed in, embedded points in the vector store out.

Data flows one way: the sync engine pushes to the backbone; the indexer reads the backbone's change
feed (every site's inserts, edits and forgets, in commit order), embeds what is new and upserts it.
The daemon runs a pass as soon as its own sync pass pushed something, and every few seconds for the
other sites' episodes; the same pass, run until the feed is drained, is the ``qdrant-episode-sync``
catch-up job and ``memsync reindex``.

Order within a page: upsert, then record ``qdrantPointId`` in the backbone, then advance the
cursor, so nothing is recorded before it is searchable. A forget deletes the point, and marks the
collection as owing a purge (``CursorFile.owe_purge``): the engine's files keep a deleted point's
bytes, so the warm layer rebuilds the collection without it.

The decisions are pure functions, tested from tables, each in the module of its concern: an
episode's points (``passages``), a page's plan (``plan``), an adopted collection's seed points
(``seeds``), a rebuild's copies (``copies``), near-duplicate links (``duplicates``). ``Indexer``
does the I/O around them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sync.backbone.base import Change, ChangeFeed, Links
from sync.errors import PermanentError
from sync.policy.links import EpisodeRef, StoredLink
from sync.search.collection.cursor import CursorFile
from sync.search.embedders import bm25
from sync.search.embedders.base import Embedder
from sync.search.indexing.copies import CopyPlan, Previous, archived_to_embed, copy_page
from sync.search.indexing.duplicates import DEFAULT_DUPLICATE_THRESHOLD, link_to_store, link_within_page
from sync.search.indexing.passages import ToEmbed, head_id
from sync.search.indexing.plan import IndexPlan, plan_page
from sync.search.indexing.seeds import trusted_seeds
from sync.search.indexing.text import Span, split_passages
from sync.search.payload import DUPLICATE_KEY, PARENT_KEY, PASSAGE_KEY, SITE_KEY, SOURCE_ID_KEY, SPAN_KEY, TEXT_KEY
from sync.search.stores import CollectionSpec, StoredPoint, VectorStore, WarmPoint

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
        links: Links | None = None,
    ) -> None:
        self.backbone = backbone
        self.links = links  # where near-duplicates are recorded as similar_to links (None: nowhere)
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
        seeds = trusted_seeds(self.store, self.spec or self.open(), changes, stored)
        plan = plan_page(changes, stored, self.split, seeds)
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

    def _copy(self, plan: IndexPlan) -> CopyPlan:
        """What ``previous`` gives this page (nothing outside a rebuild: then an archived episode
        that is not in the store is missing for good)."""
        if self.previous is None or not (plan.embed or plan.carry):
            return CopyPlan([], list(plan.embed), list(plan.carry))
        spec = self.spec or self.open()
        return copy_page(self.previous, spec, plan.embed, plan.carry, bm25_config=self.bm25, split=self.split)

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
        heads: dict[str, str] = {}  # a near-duplicate's point -> its group's head
        for i, (item, vector) in enumerate(zip(items, vectors, strict=True)):
            link = None
            if i in page_links:
                link = page_links[i] or link_to_store(self.store, item.point_id, vector, self.duplicate_threshold)
            payload = dict(item.payload)
            if link is not None:
                payload[DUPLICATE_KEY] = link
                heads[item.point_id] = link
            points.append(WarmPoint(item.point_id, vector, bm25.embed_document(item.text, self.bm25), payload))
        self.store.upsert(points)
        if heads and self.links is not None:
            self._record_similar(points, heads)
        return sum(PARENT_KEY not in p.payload for p in points), len(heads), set()

    def _record_similar(self, points: Sequence[WarmPoint], heads: dict[str, str]) -> None:
        """Near-duplicates found in this page, as the backbone's similar_to links (duplicate ->
        its group's head), after the upsert: a replay of the page finds and records them again."""
        payloads = {p.id: p.payload for p in points}
        missing = [h for h in set(heads.values()) if h not in payloads]
        payloads |= {p.id: p.payload for p in self.store.get(missing)}

        def ref(point: str) -> EpisodeRef | None:
            payload = payloads.get(point, {})
            site, source_id = payload.get(SITE_KEY), payload.get(SOURCE_ID_KEY)
            return EpisodeRef(str(site), str(source_id)) if site and source_id else None

        links = []
        for point, head in heads.items():
            source, target = ref(point), ref(head)
            if source is not None and target is not None:
                links.append(StoredLink(source, target, "similar_to"))
        if links and self.links is not None:
            self.links.add_links(links)

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
