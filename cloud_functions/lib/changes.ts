import type { Doc } from "../_generated/dataModel";
import type { MutationCtx, QueryCtx } from "../_generated/server";
import { fail } from "./errors";
import { type ExportedEpisode, exportEpisode, isHot, isMemsync, NOT_ADOPTED_MESSAGE } from "./episodeView";

/**
 * The change feed's sequence: one counter document, read at a mutation's first change and written
 * once at its end. Every mutation that assigns a seq reads and writes this one document, so Convex's
 * optimistic concurrency serialises them: seqs are assigned in commit order, and a reader that has
 * seen seq N never later sees a new change numbered N or below. A mutation with no change (an
 * unchanged push) never touches it, so it does not contend.
 */
export const CHANGE_COUNTER = "changeSeq";

export class ChangeSequence {
  private counter: Doc<"counters"> | null = null;
  private loaded = false;
  private last = 0;
  private issued = 0;

  constructor(private readonly db: MutationCtx["db"]) {}

  /** The next seq of this mutation. */
  async next(): Promise<number> {
    if (!this.loaded) {
      this.counter = await this.db
        .query("counters")
        .withIndex("by_name", (q) => q.eq("name", CHANGE_COUNTER))
        .unique();
      this.last = this.counter?.value ?? 0;
      this.loaded = true;
    }
    this.issued += 1;
    this.last += 1;
    return this.last;
  }

  /** Writes the counter, once, if this mutation took any seq. */
  async save(): Promise<void> {
    if (this.issued === 0) return;
    if (this.counter === null) await this.db.insert("counters", { name: CHANGE_COUNTER, value: this.last });
    else await this.db.patch(this.counter._id, { value: this.last });
    this.issued = 0;
  }
}

/**
 * What one page of the feed may read. Convex lets a query read 16 MiB; episodes are up to ~1 MiB,
 * so a page stops early once this much has been read (the two look-ahead documents at most add
 * another 2 MiB). Always at least one change, so the feed cannot get stuck.
 */
export const MAX_FEED_BYTES = 8 * 1024 * 1024;

/** An episode as the feed and export give it: an approval's decision after the fields, only on an episode one is about. */
export type DreamMark = { role: string; by: string; step: string };
export type FeedEpisode = ExportedEpisode & { approvalStatus?: string; dream?: DreamMark };

export function withApproval(
  episode: ExportedEpisode,
  approvalStatus: string | undefined,
  dreamState?: DreamMark | undefined,
): FeedEpisode {
  const approved = approvalStatus === undefined ? episode : { ...episode, approvalStatus };
  return dreamState === undefined ? approved : { ...approved, dream: dreamState };
}

export type ChangeEntry = {
  seq: number;
  sourceSite: string;
  sourceId: string;
  episode: FeedEpisode | null; // null: forgotten, or archived
  qdrantPointId: string | null;
  archived: boolean; // the body moved to the cold archive: indexes mark the key archived, not gone
  seedPointId?: string; // an adopted episode's point in the seed's collection: indexes write (or delete) that one
};

function seedPoint(doc: { seedPointId?: string }): { seedPointId?: string } {
  return doc.seedPointId === undefined ? {} : { seedPointId: doc.seedPointId };
}

type Head<T> = { seq: number; doc: T } | null;

/** The next document of an index range that holds only documents with a changeSeq. */
async function advance<T extends object>(docs: AsyncIterator<T>): Promise<Head<T>> {
  const step = await docs.next();
  if (step.done === true) return null;
  // The ranges are `changeSeq > after`, which leaves out documents without one (seed documents
  // among them: the migration gives each adopted one its seq).
  const seq = "changeSeq" in step.value && typeof step.value.changeSeq === "number" ? step.value.changeSeq : 0;
  return { seq, doc: step.value };
}

function size(entry: ChangeEntry): number {
  return new TextEncoder().encode(JSON.stringify(entry)).length;
}

/**
 * Up to `limit` changes after `after`, in seq order: the episodes' and the tombstones' index ranges,
 * merged. Both are read lazily, so a page reads what it returns plus one document of each.
 */
export async function readChanges(db: QueryCtx["db"], after: number, limit: number): Promise<ChangeEntry[]> {
  const episodes = db
    .query("episodes")
    .withIndex("by_changeSeq", (q) => q.gt("changeSeq", after))
    [Symbol.asyncIterator]();
  const tombstones = db
    .query("tombstones")
    .withIndex("by_changeSeq", (q) => q.gt("changeSeq", after))
    [Symbol.asyncIterator]();
  let episode = await advance(episodes);
  let tombstone = await advance(tombstones);
  const page: ChangeEntry[] = [];
  let bytes = 0;
  while (page.length < limit && bytes < MAX_FEED_BYTES) {
    let entry: ChangeEntry;
    if (episode !== null && (tombstone === null || episode.seq < tombstone.seq)) {
      const { seq, doc } = episode;
      const hot = isHot(doc);
      entry = {
        seq,
        sourceSite: doc.sourceSite,
        sourceId: doc.sourceId,
        episode: hot ? withApproval(exportEpisode(doc), doc.approvalStatus, "dreamState" in doc ? doc.dreamState : undefined) : null,
        qdrantPointId: doc.qdrantPointId ?? null,
        archived: !hot,
        ...(isMemsync(doc) ? seedPoint(doc) : {}),
      };
      episode = await advance(episodes);
    } else if (tombstone !== null) {
      const { seq, doc } = tombstone;
      entry = {
        seq,
        sourceSite: doc.sourceSite,
        sourceId: doc.sourceId,
        episode: null,
        qdrantPointId: null,
        archived: false,
        ...seedPoint(doc),
      };
      tombstone = await advance(tombstones);
    } else {
      break;
    }
    page.push(entry);
    bytes += size(entry);
  }
  return page;
}

export type PointItem = { sourceSite: string; sourceId: string; qdrantPointId: string; contentHash: string };

/**
 * Records a point for an episode only while the content it was embedded from is still the episode's
 * (an edit clears the point and waits for a new one: lib/push.ts). Not a change: no seq is taken.
 */
export async function recordPoint(
  db: MutationCtx["db"],
  doc: Doc<"episodes"> | null,
  qdrantPointId: string,
  contentHash: string | undefined,
): Promise<boolean> {
  if (doc === null || !isMemsync(doc) || (contentHash !== undefined && contentHash !== doc.contentHash)) return false;
  if (doc.qdrantPointId !== qdrantPointId) await db.patch(doc._id, { qdrantPointId });
  return true;
}

/**
 * Old deployments' documents (written before the feed) have no changeSeq: this gives up to `limit`
 * of them one, episodes first (oldest first), then tombstones. Returns how many it assigned.
 */
export async function backfillChangeSeqs(db: MutationCtx["db"], limit: number): Promise<number> {
  const sequence = new ChangeSequence(db);
  const episodes = await db
    .query("episodes")
    .withIndex("by_changeSeq", (q) => q.eq("changeSeq", undefined))
    .take(limit);
  // A seed document gets its seq from the migration, with the rest of memsync's fields (adopt.ts).
  if (!episodes.every(isMemsync)) fail("NOT_ADOPTED", NOT_ADOPTED_MESSAGE);
  for (const doc of episodes) await db.patch(doc._id, { changeSeq: await sequence.next() });
  const rest = limit - episodes.length;
  const tombstones =
    rest > 0
      ? await db
          .query("tombstones")
          .withIndex("by_changeSeq", (q) => q.eq("changeSeq", undefined))
          .take(rest)
      : [];
  for (const doc of tombstones) await db.patch(doc._id, { changeSeq: await sequence.next() });
  await sequence.save();
  return episodes.length + tombstones.length;
}
