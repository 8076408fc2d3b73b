import { v } from "convex/values";
import { internal } from "./_generated/api";
import {
  action,
  type ActionCtx,
  internalAction,
  internalMutation,
  internalQuery,
  type MutationCtx,
  mutation,
  query,
} from "./_generated/server";
import { isoWeek } from "./lib/archiveFormat";
import { archiveRun, ORPHAN_GRACE_MS, rewriteWeek, type RunResult } from "./lib/archiveWrite";
import { authenticate, siteArgs } from "./lib/auth";
import { backfillChangeSeqs, CHANGE_COUNTER, ChangeSequence, readChanges, recordPoint, withApproval } from "./lib/changes";
import { advanceCursor, cursorOf, forgetFromCursor, readCursor } from "./lib/cursor";
import { releaseForgotten } from "./lib/dreamSteps";
import { exportEpisode, isHot } from "./lib/episodeView";
import { fail } from "./lib/errors";
import { findEpisode, MAX_BATCH_ROWS, pushEpisodes } from "./lib/push";
import { dropLinks } from "./lib/links";
import { setAlertState } from "./lib/alerts";
import { forgetUses } from "./lib/uses";
import { cursorValue, exportedEpisode, isCount, nullable, pushItem } from "./lib/validators";
import { rebuildStoredDigest } from "./digest";

const MAX_PAGE = 500;

function requireCount(name: string, value: number, max = Number.MAX_SAFE_INTEGER): void {
  if (!isCount(value) || value > max) fail("INVALID", `${name} must be a whole number from 0 to ${max}, not ${value}`);
}

const pushResult = v.object({
  sourceId: v.string(),
  outcome: v.union(
    v.literal("inserted"),
    v.literal("updated"),
    v.literal("unchanged"),
    v.literal("conflict"),
    v.literal("rejected"),
  ),
  remoteId: v.union(v.string(), v.null()),
  syncedAt: v.union(v.number(), v.null()),
  reason: v.union(v.string(), v.null()),
});

/** A site's push: every row upserted and the site's cursor advanced, in one transaction. */
export const bulkSyncEpisodes = mutation({
  args: { ...siteArgs, cursor: v.number(), episodes: v.array(pushItem) },
  returns: v.object({ results: v.array(pushResult), cursor: cursorValue }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    if (args.episodes.length > MAX_BATCH_ROWS) {
      fail("TOO_LARGE", `${args.episodes.length} episodes in one call; at most ${MAX_BATCH_ROWS}`);
    }
    requireCount("cursor", args.cursor);
    const now = Date.now();
    const results = await pushEpisodes(ctx, site, args.episodes, now);
    const inserted = results.filter((result) => result.outcome === "inserted").length;
    const cursor = await advanceCursor(ctx, site, args.cursor, inserted, now);
    return { results, cursor };
  },
});

export const updateCursor = mutation({
  args: { ...siteArgs, lastSyncedId: v.number() },
  returns: cursorValue,
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    requireCount("lastSyncedId", args.lastSyncedId);
    return await advanceCursor(ctx, site, args.lastSyncedId, 0, Date.now());
  },
});

export const getCursor = query({
  args: siteArgs,
  returns: v.union(cursorValue, v.null()),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const found = await readCursor(ctx.db, site);
    return found === null ? null : cursorOf(found);
  },
});

/**
 * The site's own hot episodes in order of first receipt, a page at a time (`memsync export`).
 * Archived ones are not here (their bodies are in the archive: archive:episodes). A page may hold
 * fewer than `limit` episodes; only `next: null` ends the listing.
 */
export const listEpisodes = query({
  args: { ...siteArgs, after: v.union(v.string(), v.null()), limit: v.number() },
  returns: v.object({ episodes: v.array(exportedEpisode), next: v.union(v.string(), v.null()) }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    requireCount("limit", args.limit, MAX_PAGE);
    if (args.limit === 0) fail("INVALID", "limit must be at least 1");
    const page = await ctx.db
      .query("episodes")
      .withIndex("by_site_synced", (q) => q.eq("sourceSite", site))
      .paginate({ cursor: args.after, numItems: args.limit });
    const episodes = page.page
      .filter(isHot)
      .map((doc) => withApproval(exportEpisode(doc), doc.approvalStatus, "dreamState" in doc ? doc.dreamState : undefined));
    return { episodes, next: page.isDone ? null : page.continueCursor };
  },
});

/**
 * Hard delete, and a tombstone so that a later push of the same key is refused ("forgotten"). A new
 * tombstone is a change (the feed lists the key with no episode); forgetting it again is not. When
 * the week of the episode's ts has an archive file, the tombstone is marked with that week until
 * the file is rewritten without it (forgetIn's caller does it; should it die, the next run does).
 */
async function forgetIn(ctx: MutationCtx, site: string, sourceId: string): Promise<{ deleted: boolean; week: string | null }> {
  const found = await findEpisode(ctx.db, site, sourceId);
  let week: string | null = null;
  if (found !== null) {
    const candidate = isoWeek(found.ts);
    const file = await ctx.db
      .query("archiveFiles")
      .withIndex("by_site_week", (q) => q.eq("site", site).eq("week", candidate))
      .unique();
    if (file !== null || found.archived) week = candidate;
    await ctx.db.delete(found._id);
    await releaseForgotten(ctx, site, sourceId);
    await forgetUses(ctx, site, sourceId);
    await forgetFromCursor(ctx, site);
    await rebuildStoredDigest(ctx, found.createdAt);
  }
  await dropLinks(ctx, site, sourceId); // both ends' links, whether or not the episode was here
  const tombstone = await ctx.db
    .query("tombstones")
    .withIndex("by_site_source", (q) => q.eq("sourceSite", site).eq("sourceId", sourceId))
    .unique();
  if (tombstone === null) {
    const sequence = new ChangeSequence(ctx.db);
    const changeSeq = await sequence.next();
    await ctx.db.insert("tombstones", {
      sourceSite: site,
      sourceId,
      deletedAt: Date.now(),
      changeSeq,
      ...(week === null ? {} : { archiveWeek: week }),
      // An adopted episode's point lives under the seed's id: indexes delete that one.
      ...(found?.seedPointId === undefined ? {} : { seedPointId: found.seedPointId }),
    });
    await sequence.save();
  } else if (week !== null) {
    await ctx.db.patch(tombstone._id, { archiveWeek: week });
  }
  return { deleted: found !== null, week };
}

const forgotten = v.object({ deleted: v.boolean(), week: v.union(v.string(), v.null()) });
const forgetResult = v.object({ deleted: v.boolean(), archiveWeek: v.union(v.string(), v.null()) });

/** The site's forget, in the table (the action forget then rewrites the archive file). */
export const forgetOwn = internalMutation({
  args: { ...siteArgs, sourceId: v.string() },
  returns: forgotten,
  handler: async (ctx, args) => await forgetIn(ctx, await authenticate(ctx, args), args.sourceId),
});

/** Any site's forget, in the table (admin: forgetAny). */
export const forgetKey = internalMutation({
  args: { sourceSite: v.string(), sourceId: v.string() },
  returns: forgotten,
  handler: async (ctx, args) => await forgetIn(ctx, args.sourceSite, args.sourceId),
});

type ForgetResult = { deleted: boolean; archiveWeek: string | null };

async function forgetArchived(
  ctx: ActionCtx,
  site: string,
  sourceId: string,
  done: { deleted: boolean; week: string | null },
): Promise<ForgetResult> {
  if (done.week === null) return { deleted: done.deleted, archiveWeek: null };
  const rewritten = await rewriteWeek(ctx, site, done.week, []);
  return { deleted: done.deleted, archiveWeek: rewritten.removed.includes(sourceId) ? done.week : null };
}

/**
 * Forgets one of the site's episodes for good, hot or archived: deleted, tombstoned, and left out
 * of its week's archive file (rewritten, verified, the old blob deleted; the file's row deleted
 * when it is left empty). `archiveWeek`: the file it was taken out of.
 */
export const forget = action({
  args: { ...siteArgs, sourceId: v.string() },
  returns: forgetResult,
  handler: async (ctx, args): Promise<ForgetResult> =>
    await forgetArchived(ctx, args.site, args.sourceId, await ctx.runMutation(internal.episodes.forgetOwn, args)),
});

/**
 * The operator's forget of any site's episode (a site's secret reaches only its own): internal,
 * so only the deployment's admin key may call it (`npx convex run episodes:forgetAny ...`).
 */
export const forgetAny = internalAction({
  args: { sourceSite: v.string(), sourceId: v.string() },
  returns: forgetResult,
  handler: async (ctx, args): Promise<ForgetResult> =>
    await forgetArchived(ctx, args.sourceSite, args.sourceId, await ctx.runMutation(internal.episodes.forgetKey, args)),
});

const change = v.object({
  seq: v.number(),
  sourceSite: v.string(),
  sourceId: v.string(),
  episode: nullable(exportedEpisode), // null: the key was forgotten, or archived
  qdrantPointId: nullable(v.string()),
  archived: v.boolean(), // the body went to the cold archive: the key stays, marked archived
  seedPointId: v.optional(v.string()), // an adopted episode's point id in the seed's collection
});

/**
 * The change feed, for every site's warm layer: each insert, edit, archiving, restore and forget of every site, after
 * seq `after`, in seq order (commit order: see lib/changes.ts). An episode edited since appears
 * once, at its latest seq, as it now is. A page may hold fewer than `limit` changes when the
 * episodes are large; only an empty page means the caller has caught up.
 */
export const changes = query({
  args: { ...siteArgs, after: v.number(), limit: v.number() },
  returns: v.array(change),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    requireCount("after", args.after);
    requireCount("limit", args.limit, MAX_PAGE);
    if (args.limit === 0) fail("INVALID", "limit must be at least 1");
    return await readChanges(ctx.db, args.after, args.limit);
  },
});

/** The feed's latest seq (0 before any change): how far a reader has to go, for progress bars. */
export const feedEnd = query({
  args: { ...siteArgs },
  returns: v.number(),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const counter = await ctx.db
      .query("counters")
      .withIndex("by_name", (q) => q.eq("name", CHANGE_COUNTER))
      .unique();
    return counter?.value ?? 0;
  },
});

/**
 * The warm layer reports the Qdrant points it wrote, for any site's episodes (point ids are
 * deterministic, so whichever site embeds first may record). A point is recorded only while the
 * episode's content hash is still the one it was embedded from; unknown keys are ignored.
 * Recording is not a change: the feed's sequence does not move.
 */
export const recordPoints = mutation({
  args: {
    ...siteArgs,
    items: v.array(
      v.object({ sourceSite: v.string(), sourceId: v.string(), qdrantPointId: v.string(), contentHash: v.string() }),
    ),
  },
  returns: v.object({ recorded: v.number() }),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    if (args.items.length > MAX_PAGE) fail("TOO_LARGE", `${args.items.length} items in one call; at most ${MAX_PAGE}`);
    let recorded = 0;
    for (const item of args.items) {
      const doc = await findEpisode(ctx.db, item.sourceSite, item.sourceId);
      if (await recordPoint(ctx.db, doc, item.qdrantPointId, item.contentHash)) recorded += 1;
    }
    return { recorded };
  },
});

/**
 * For deployments that hold documents written before the change feed: gives episodes, then
 * tombstones, without a changeSeq one, `limit` a mutation, scheduling the next batch until none is
 * left. Run once after deploying: `npx convex run episodes:backfillChangeSeq '{"limit": 200}'` (a
 * lower limit if a batch of large episodes meets Convex's 16 MiB a transaction).
 */
export const backfillChangeSeq = internalMutation({
  args: { limit: v.number() },
  returns: v.object({ assigned: v.number(), more: v.boolean() }),
  handler: async (ctx, args) => {
    requireCount("limit", args.limit, MAX_PAGE);
    if (args.limit === 0) fail("INVALID", "limit must be at least 1");
    const assigned = await backfillChangeSeqs(ctx.db, args.limit);
    const more = assigned === args.limit;
    if (more) await ctx.scheduler.runAfter(0, internal.episodes.backfillChangeSeq, args);
    return { assigned, more };
  },
});

/**
 * An episode's approvalStatus as stored (admin and tests: the Python conformance test reads it
 * through tests/convex_local/), or null when the episode, or the field, is absent.
 */
export const approvalStatusOf = internalQuery({
  args: { site: v.string(), sourceId: v.string() },
  returns: v.union(v.string(), v.null()),
  handler: async (ctx, { site, sourceId }) => (await findEpisode(ctx.db, site, sourceId))?.approvalStatus ?? null,
});

function waitingForVectors(db: Parameters<typeof findEpisode>[0]) {
  return db.query("episodes").withIndex("by_qdrant", (q) => q.eq("archived", false).eq("qdrantPointId", undefined));
}

/** Episodes the daemon still has to embed, with the id to report the point under. */
export const needingVectors = internalQuery({
  args: { limit: v.number() },
  handler: async (ctx, args) => {
    requireCount("limit", args.limit, MAX_PAGE);
    const docs = await waitingForVectors(ctx.db).take(args.limit);
    return docs.filter(isHot).map((doc) => ({ id: doc._id, ...exportEpisode(doc) }));
  },
});

/**
 * The Qdrant points written, by document id (admin and tests; sites use recordPoints, by key). With
 * `contentHash`, a point embedded from content that has since changed is not recorded, so the
 * edited episode stays in needingVectors.
 */
export const recordPointIds = internalMutation({
  args: {
    items: v.array(v.object({ id: v.id("episodes"), qdrantPointId: v.string(), contentHash: v.optional(v.string()) })),
  },
  handler: async (ctx, args) => {
    if (args.items.length > MAX_PAGE) fail("TOO_LARGE", `${args.items.length} items in one call; at most ${MAX_PAGE}`);
    let recorded = 0;
    for (const item of args.items) {
      if (await recordPoint(ctx.db, await ctx.db.get(item.id), item.qdrantPointId, item.contentHash)) recorded += 1;
    }
    return { recorded };
  },
});

const BACKLOG_CAP = 1000;

/**
 * The qdrant-episode-sync cron's share of the work: the cloud only counts what waits for a vector
 * (embedding is the daemon's job) and keeps the answer in alertStates under "qdrant-backlog".
 */
export const vectorBacklog = internalMutation({
  args: {},
  handler: async (ctx) => {
    const waiting = (await waitingForVectors(ctx.db).take(BACKLOG_CAP + 1)).length;
    const state = waiting > 0 ? "pending" : "clear";
    await setAlertState(ctx, "qdrant-backlog", state, Date.now());
    return { backlog: Math.min(waiting, BACKLOG_CAP), capped: waiting > BACKLOG_CAP };
  },
});

/**
 * Sweep cleanup-old-episodes, by hand: moves at most `limit` hot episodes with ts before `cutoff`
 * (or older than `olderThanMs` now) to the cold archive, oldest first (lib/archiveWrite.ts:
 * archiveRun), as the embedded hub's archive_older_than does. `more`: the limit was reached.
 * `orphanGraceMs` (default an hour): uncommitted blobs older than this are deleted first.
 */
export const archiveOld = internalAction({
  args: {
    olderThanMs: v.optional(v.number()),
    cutoff: v.optional(v.number()),
    limit: v.number(),
    orphanGraceMs: v.optional(v.number()),
  },
  returns: v.object({ archived: v.number(), files: v.number(), more: v.boolean(), failures: v.array(v.string()) }),
  handler: async (ctx, args): Promise<RunResult> => {
    if ((args.olderThanMs === undefined) === (args.cutoff === undefined)) {
      fail("INVALID", "give exactly one of olderThanMs and cutoff");
    }
    if (args.olderThanMs !== undefined) requireCount("olderThanMs", args.olderThanMs);
    requireCount("limit", args.limit, MAX_ARCHIVE_LIMIT);
    const cutoff = args.cutoff ?? Date.now() - args.olderThanMs!;
    return await archiveRun(ctx, cutoff, args.limit, args.orphanGraceMs ?? ORPHAN_GRACE_MS);
  },
});

export const MAX_ARCHIVE_LIMIT = 200_000;
