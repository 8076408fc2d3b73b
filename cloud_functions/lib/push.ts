import type { Infer } from "convex/values";
import type { Doc } from "../_generated/dataModel";
import type { MutationCtx, QueryCtx } from "../_generated/server";
import { isMemsync, type MemsyncEpisode, NOT_ADOPTED_MESSAGE } from "./episodeView";
import { sameAsSeed } from "./adoption";
import { fail } from "./errors";
import { ChangeSequence } from "./changes";
import { metadataText } from "./metadata";
import { storePushedLinks } from "./links";
import type { pushItem } from "./validators";

export type PushItem = Infer<typeof pushItem>;
export type Outcome = "inserted" | "updated" | "unchanged" | "conflict" | "rejected";
export type PushResult = {
  sourceId: string;
  outcome: Outcome;
  remoteId: string | null;
  syncedAt: number | null;
  reason: string | null;
};

/**
 * Rows per push. Each row costs two index lookups (tombstone, key) and at most one write; 200 rows
 * of ~2 KB stay far inside a mutation's limits (4,096 index reads, 16 MiB written): see the
 * transactionLimits test for the measured headroom.
 */
export const MAX_BATCH_ROWS = 200;
// Convex stores at most 1 MiB a document; keep room for the system fields and encoding overhead.
const MAX_DOCUMENT_BYTES = 1_000_000;

export async function isForgotten(db: QueryCtx["db"], site: string, sourceId: string): Promise<boolean> {
  const tombstone = await db
    .query("tombstones")
    .withIndex("by_site_source", (q) => q.eq("sourceSite", site).eq("sourceId", sourceId))
    .unique();
  return tombstone !== null;
}

/** The document holding a key, in whichever shape (adopt.ts reads seed documents too). */
export async function findDocument(db: QueryCtx["db"], site: string, sourceId: string): Promise<Doc<"episodes"> | null> {
  return await db
    .query("episodes")
    .withIndex("by_site_source", (q) => q.eq("sourceSite", site).eq("sourceId", sourceId))
    .unique();
}

/**
 * The episode holding a key, of memsync's shape. A seed document not adopted yet is refused
 * (NOT_ADOPTED): reading it as memsync's would push a duplicate or lose its metadata.
 */
export async function findEpisode(db: QueryCtx["db"], site: string, sourceId: string): Promise<MemsyncEpisode | null> {
  const doc = await findDocument(db, site, sourceId);
  if (doc !== null && !isMemsync(doc)) fail("NOT_ADOPTED", NOT_ADOPTED_MESSAGE);
  return doc;
}

function refused(sourceId: string, reason: string): PushResult {
  return { sourceId, outcome: "rejected", remoteId: null, syncedAt: null, reason };
}

/** The columns one pushed item writes (everything but the key, identity and timestamps). */
type Row = Omit<PushItem["fields"], "metadata" | "metadataJson"> & { metadataJson: string; contentHash: string };

function rowContent(item: PushItem): { row: Row } | { reason: string } {
  const meta = metadataText(item.fields);
  if ("reason" in meta) return meta;
  const { metadata: _object, metadataJson: _text, ...content } = item.fields;
  const row = { ...content, metadataJson: meta.text, contentHash: item.contentHash };
  const bytes = new TextEncoder().encode(JSON.stringify(row)).length;
  if (bytes > MAX_DOCUMENT_BYTES) {
    return { reason: `episode too large: ${bytes} bytes, Convex stores at most ${MAX_DOCUMENT_BYTES}` };
  }
  return { row };
}

/**
 * One row, with the embedded hub's semantics (sync/backbone/hub/memory/episodes.py): a new key is inserted; a key
 * holding another identity is a conflict and left untouched; the same content is unchanged; new
 * content updates in place and keeps the first syncedAt. As in the hub, a row's content is only
 * judged when it is about to be written. Rows are handled in order inside one mutation, which
 * reads its own writes, so a key repeated within a batch behaves as in the hub too. An insert or an
 * edit is a change: the row takes the next seq of the change feed (lib/changes.ts).
 */
async function pushOne(
  ctx: MutationCtx,
  site: string,
  item: PushItem,
  now: number,
  sequence: ChangeSequence,
): Promise<PushResult> {
  const { sourceId } = item;
  if (sourceId === "") return refused(sourceId, "sourceId is empty");
  if (await isForgotten(ctx.db, site, sourceId)) return refused(sourceId, "forgotten");
  const found = await findEpisode(ctx.db, site, sourceId);
  if (found?.adopted !== undefined) return await completeAdoption(ctx, found, found.adopted.fields, item, now, sequence);
  if (found !== null && found.identityHash !== item.identityHash) {
    return { sourceId, outcome: "conflict", remoteId: found._id, syncedAt: found.syncedAt, reason: "the key holds another episode" };
  }
  if (found !== null && found.contentHash === item.contentHash) {
    return { sourceId, outcome: "unchanged", remoteId: found._id, syncedAt: found.syncedAt, reason: null };
  }
  const content = rowContent(item);
  if ("reason" in content) return refused(sourceId, content.reason);
  const { row } = content;
  if (found === null) {
    const remoteId = await ctx.db.insert("episodes", {
      ...row,
      sourceSite: site,
      sourceId,
      identityHash: item.identityHash,
      syncedAt: now,
      updatedAt: now,
      archived: false,
      changeSeq: await sequence.next(),
    });
    await storePushedLinks(ctx, { site, sourceId }, row.metadataJson, now);
    return { sourceId, outcome: "inserted", remoteId, syncedAt: now, reason: null };
  }
  // New content needs a new vector: dropping the point id puts the episode back in needingVectors.
  // The new seq moves the episode to the feed's end, so the feed lists it once, as it now is.
  // An archived key edited since is hot again, with its new body (the file's old copy stays until
  // the next run rewrites the week; the hot copy is the one read).
  await ctx.db.patch(found._id, {
    ...row,
    archived: false,
    updatedAt: now,
    qdrantPointId: undefined,
    changeSeq: await sequence.next(),
  });
  await storePushedLinks(ctx, { site, sourceId }, row.metadataJson, now);
  return { sourceId, outcome: "updated", remoteId: found._id, syncedAt: found.syncedAt, reason: null };
}

/**
 * The first push of an adopted key (adopt.ts): the site's content compared with what the seed
 * stored (lib/adoption.ts). The same: "unchanged", and the document completed as memsync would have
 * inserted it (its hashes, the fields the seed never had), keeping its receipt and point; a new seq
 * lets every search index take the completed payload (the same text: nothing is embedded again).
 * Different: an edit, as for any key.
 */
async function completeAdoption(
  ctx: MutationCtx,
  found: MemsyncEpisode,
  fields: readonly string[],
  item: PushItem,
  now: number,
  sequence: ChangeSequence,
): Promise<PushResult> {
  const content = rowContent(item);
  if ("reason" in content) return refused(item.sourceId, content.reason);
  const { row } = content;
  const same = sameAsSeed(found, row, fields);
  await ctx.db.patch(found._id, {
    ...row,
    identityHash: item.identityHash,
    archived: false,
    updatedAt: now,
    adopted: undefined,
    ...(same ? {} : { qdrantPointId: undefined }),
    changeSeq: await sequence.next(),
  });
  const outcome = same ? "unchanged" : "updated";
  return { sourceId: item.sourceId, outcome, remoteId: found._id, syncedAt: found.syncedAt, reason: null };
}

export async function pushEpisodes(
  ctx: MutationCtx,
  site: string,
  items: PushItem[],
  now: number,
): Promise<PushResult[]> {
  const sequence = new ChangeSequence(ctx.db);
  const results: PushResult[] = [];
  for (const item of items) results.push(await pushOne(ctx, site, item, now, sequence));
  await sequence.save(); // once per mutation, and only if a row changed
  return results;
}
