/**
 * The cold archive on Convex (issue 13): episodes older than the retention leave the hot table for
 * one gzip JSON Lines file per (site, ISO week of ts) in file storage, with a manifest in
 * archiveFiles; their keys stay (archived: true, hashes and times kept), so a push of the same
 * content is "unchanged" and the change feed lists the key as archived. The write path is
 * lib/archiveWrite.ts (actions); here are its reads and commits (queries and mutations) and the
 * site's public functions: files, verify, restore, episodes, records, lastRun.
 */
import { v } from "convex/values";
import { api, internal } from "./_generated/api";
import type { Doc, Id } from "./_generated/dataModel";
import {
  action,
  type ActionCtx,
  internalAction,
  internalMutation,
  internalQuery,
  query,
  type QueryCtx,
} from "./_generated/server";
import { type ArchiveRecord, isoWeek, overlaps, weekRange } from "./lib/archiveFormat";
import { type Rewritten, rewriteWeek } from "./lib/archiveWrite";
import { authenticate, siteArgs } from "./lib/auth";
import { ChangeSequence } from "./lib/changes";
import { exportEpisode, isHot, isMemsync } from "./lib/episodeView";
import { fail } from "./lib/errors";
import { findEpisode } from "./lib/push";
import { archiveManifest, exportedEpisode, isCount } from "./lib/validators";


export type Manifest = Omit<Doc<"archiveFiles">, "_id" | "_creationTime">;
type Check = { file: Manifest; problem: string | null };
type Page = { episodes: (ArchiveRecord & { approvalStatus?: string; archived: true })[]; next: string | null };
type Records = { records: (ArchiveRecord & { archived: true })[]; unread: { sourceSite: string; sourceId: string }[] };

export const archiveFile = v.object({
  site: v.string(),
  week: v.string(),
  storageId: v.id("_storage"),
  ...archiveManifest,
});

const fileRow = v.object({ _id: v.id("archiveFiles"), _creationTime: v.number(), ...archiveFile.fields });

async function findFile(db: QueryCtx["db"], site: string, week: string) {
  return await db
    .query("archiveFiles")
    .withIndex("by_site_week", (q) => q.eq("site", site).eq("week", week))
    .unique();
}

async function purgesOf(db: QueryCtx["db"], site: string, week: string) {
  return await db
    .query("tombstones")
    .withIndex("by_archive_week", (q) => q.eq("archiveWeek", week).eq("sourceSite", site))
    .collect();
}

function manifest(row: Doc<"archiveFiles">) {
  const { _id: _ignored, _creationTime: _time, ...rest } = row;
  return rest;
}

function requireTime(name: string, value: number | undefined): void {
  if (value !== undefined && !Number.isSafeInteger(value)) fail("INVALID", `${name} must be a whole number of ms, not ${value}`);
}

// -- the write path's reads and commits (lib/archiveWrite.ts) -------------------------------------

/** A week's committed file and the forgets that its file may still hold. */
export const weekState = internalQuery({
  args: { site: v.string(), week: v.string() },
  returns: v.object({
    file: v.union(fileRow, v.null()),
    purges: v.array(v.object({ id: v.id("tombstones"), sourceId: v.string() })),
  }),
  handler: async (ctx, { site, week }) => ({
    file: await findFile(ctx.db, site, week),
    purges: (await purgesOf(ctx.db, site, week)).map((t) => ({ id: t._id, sourceId: t.sourceId })),
  }),
});

// What one batch may carry to the write path (episodes are up to ~1 MiB; a query reads 16 MiB).
const MAX_BATCH_BYTES = 4 * 1024 * 1024;

/** Up to `limit` hot episodes (and about 4 MiB) with ts < cutoff, oldest first, from `afterTs` on, minus `skip`. */
export const oldBatch = internalQuery({
  args: { cutoff: v.number(), afterTs: v.union(v.number(), v.null()), skip: v.array(v.id("episodes")), limit: v.number() },
  returns: v.object({
    episodes: v.array(v.object({ id: v.id("episodes"), ts: v.number(), contentHash: v.string(), record: exportedEpisode })),
    exhausted: v.boolean(), // no further episode in the range
  }),
  handler: async (ctx, args) => {
    const skip = new Set<string>(args.skip);
    const range =
      args.afterTs === null
        ? ctx.db.query("episodes").withIndex("by_archived_ts", (q) => q.eq("archived", false).lt("ts", args.cutoff))
        : ctx.db
            .query("episodes")
            .withIndex("by_archived_ts", (q) => q.eq("archived", false).gte("ts", args.afterTs!).lt("ts", args.cutoff));
    const out = [];
    let bytes = 0;
    for await (const doc of range) {
      if (out.length >= args.limit || bytes >= MAX_BATCH_BYTES) return { episodes: out, exhausted: false };
      if (skip.has(doc._id) || !isHot(doc)) continue;
      const record = exportEpisode(doc);
      bytes += JSON.stringify(record).length;
      out.push({ id: doc._id, ts: doc.ts, contentHash: doc.contentHash, record });
    }
    return { episodes: out, exhausted: true };
  },
});

/** Forgets whose week's file may still hold the forgotten episode: each (site, week) once. */
export const pendingPurges = internalQuery({
  args: {},
  returns: v.array(v.object({ site: v.string(), week: v.string() })),
  handler: async (ctx) => {
    const seen = new Map<string, { site: string; week: string }>();
    const marked = ctx.db.query("tombstones").withIndex("by_archive_week", (q) => q.gt("archiveWeek", ""));
    for await (const t of marked) {
      seen.set(JSON.stringify([t.sourceSite, t.archiveWeek]), { site: t.sourceSite, week: t.archiveWeek! });
      if (seen.size >= 1000) break;
    }
    return [...seen.values()];
  },
});

/**
 * Blobs in file storage that no archiveFiles row names, stored before `before`: written by a run
 * or a forget that died before its commit. File storage holds only the archive's files. The
 * grace keeps a blob that a running action is about to commit.
 */
export const orphanBlobs = internalQuery({
  args: { before: v.number() },
  returns: v.array(v.id("_storage")),
  handler: async (ctx, { before }) => {
    const out: Id<"_storage">[] = [];
    for await (const blob of ctx.db.system.query("_storage")) {
      if (blob._creationTime > before) continue;
      const named = await ctx.db
        .query("archiveFiles")
        .withIndex("by_storage", (q) => q.eq("storageId", blob._id))
        .first();
      if (named === null) out.push(blob._id);
      if (out.length >= 1000) break;
    }
    return out;
  },
});

/**
 * Commits a week's rewrite, if nothing moved since it was read: the file row still names
 * `expected`, no forget of the week came in, and every episode written still exists (one
 * forgotten meanwhile: `gone`, and the caller writes the file again without it). Then the row
 * names the new file (or goes, the file empty; `keep`: left as it is), the replaced blob is
 * deleted, the forgets' marks cleared, and each episode written whose content is still the
 * archived copy's loses its body and takes a new seq (archiving is a change).
 */
export const commit = internalMutation({
  args: {
    site: v.string(),
    week: v.string(),
    expected: v.union(v.id("_storage"), v.null()),
    keep: v.boolean(),
    file: v.union(v.object({ storageId: v.id("_storage"), ...archiveManifest }), v.null()),
    strip: v.array(v.object({ id: v.id("episodes"), sourceId: v.string(), contentHash: v.string() })),
    purged: v.array(v.id("tombstones")),
  },
  returns: v.object({ ok: v.boolean(), stripped: v.number(), gone: v.array(v.string()) }),
  handler: async (ctx, args) => {
    const refused = { ok: false, stripped: 0, gone: [] as string[] };
    const row = await findFile(ctx.db, args.site, args.week);
    if ((row?.storageId ?? null) !== args.expected) return refused;
    if (args.file !== null && (await ctx.db.system.get(args.file.storageId)) === null) return refused;
    const purges = new Set<string>((await purgesOf(ctx.db, args.site, args.week)).map((t) => t._id));
    if (purges.size !== args.purged.length || args.purged.some((id) => !purges.has(id))) return refused;
    const docs = await Promise.all(args.strip.map((s) => ctx.db.get(s.id)));
    const gone = args.strip.filter((_, i) => docs[i] === null).map((s) => s.sourceId);
    if (gone.length > 0) return { ...refused, gone };

    if (!args.keep) {
      if (args.file !== null) {
        const fields = { site: args.site, week: args.week, ...args.file };
        if (row === null) await ctx.db.insert("archiveFiles", fields);
        else await ctx.db.replace(row._id, fields);
      } else if (row !== null) {
        await ctx.db.delete(row._id);
      }
      if (row !== null && row.storageId !== args.file?.storageId) await ctx.storage.delete(row.storageId);
    }
    for (const id of args.purged) await ctx.db.patch(id, { archiveWeek: undefined });
    const sequence = new ChangeSequence(ctx.db);
    let stripped = 0;
    for (const [i, s] of args.strip.entries()) {
      const doc = docs[i]!;
      // Edited since it was read: it stays hot (the file's copy is replaced by a later run).
      if (!isMemsync(doc) || doc.archived || doc.contentHash !== s.contentHash) continue;
      await ctx.db.patch(doc._id, {
        sessionId: undefined,
        task: undefined,
        input: undefined,
        output: undefined,
        critique: undefined,
        tags: undefined,
        metadataJson: undefined,
        archived: true,
        changeSeq: await sequence.next(),
      });
      stripped += 1;
    }
    await sequence.save();
    return { ok: true, stripped, gone: [] };
  },
});

export const recordRun = internalMutation({
  args: { at: v.number(), archived: v.number(), files: v.number() },
  returns: v.null(),
  handler: async (ctx, args) => {
    await ctx.db.insert("archiveRuns", args);
    return null;
  },
});

/**
 * Which of a site's keys are archived with exactly this content (the file's copy is theirs), each
 * with the decision on an approval about it, if any (kept on the row, not in the file).
 */
export const archivedAmong = internalQuery({
  args: { site: v.string(), items: v.array(v.object({ sourceId: v.string(), contentHash: v.string() })) },
  returns: v.array(v.object({ sourceId: v.string(), approvalStatus: v.optional(v.string()) })),
  handler: async (ctx, { site, items }) => {
    const out: { sourceId: string; approvalStatus?: string }[] = [];
    for (const item of items) {
      const doc = await findEpisode(ctx.db, site, item.sourceId);
      if (doc !== null && doc.archived && doc.contentHash === item.contentHash) {
        const { approvalStatus } = doc;
        out.push(approvalStatus === undefined ? { sourceId: item.sourceId } : { sourceId: item.sourceId, approvalStatus });
      }
    }
    return out;
  },
});

/** A site's archived keys with ts in [from, to). */
export const archivedKeys = internalQuery({
  args: { site: v.string(), from: v.number(), to: v.number() },
  returns: v.array(v.string()),
  handler: async (ctx, { site, from, to }) =>
    (
      await ctx.db
        .query("episodes")
        .withIndex("by_site_archived_ts", (q) => q.eq("sourceSite", site).eq("archived", true).gte("ts", from).lt("ts", to))
        .collect()
    ).map((doc) => doc.sourceId),
});

/** Bodies from a file back into the table, for keys still archived with the file copy's content. */
export const restoreBatch = internalMutation({
  args: { site: v.string(), records: v.array(exportedEpisode) },
  returns: v.number(),
  handler: async (ctx, { site, records }) => {
    const sequence = new ChangeSequence(ctx.db);
    let restored = 0;
    for (const record of records) {
      const doc = await findEpisode(ctx.db, site, record.sourceId);
      if (doc === null || !doc.archived || doc.contentHash !== record.contentHash) continue;
      await ctx.db.patch(doc._id, {
        sessionId: record.sessionId,
        task: record.task,
        input: record.input,
        output: record.output,
        critique: record.critique,
        tags: record.tags,
        metadataJson: record.metadataJson ?? JSON.stringify(record.metadata),
        archived: false,
        changeSeq: await sequence.next(),
      });
      restored += 1;
    }
    await sequence.save();
    return restored;
  },
});

/**
 * Rewrites one week's file by hand (admin): without the keys forgotten since, and with `added`
 * (episodes read by archive:oldBatch) archived into it, as a run does.
 */
export const rewrite = internalAction({
  args: {
    site: v.string(),
    week: v.string(),
    added: v.optional(v.array(v.object({ id: v.id("episodes"), contentHash: v.string(), record: exportedEpisode }))),
  },
  returns: v.object({ written: v.boolean(), stripped: v.number(), removed: v.array(v.string()), deleted: v.boolean() }),
  handler: async (ctx, args): Promise<Rewritten> => await rewriteWeek(ctx, args.site, args.week, args.added ?? []),
});

/**
 * For deployments that archived before the cold archive (rows marked archived with their bodies
 * still here, in no file): marks up to `limit` of them hot again, so that the next run archives
 * them properly. Run by hand until `more` is false:
 * `npx convex run archive:unmarkLegacy '{"limit": 500}'`.
 */
export const unmarkLegacy = internalMutation({
  args: { limit: v.number() },
  returns: v.object({ unmarked: v.number(), more: v.boolean() }),
  handler: async (ctx, { limit }) => {
    if (!isCount(limit) || limit < 1 || limit > 1000) fail("INVALID", `limit must be from 1 to 1000, not ${limit}`);
    let unmarked = 0;
    for await (const doc of ctx.db.query("episodes").withIndex("by_archived_ts", (q) => q.eq("archived", true))) {
      if (!isHot({ ...doc, archived: false })) continue; // its body is in a file
      await ctx.db.patch(doc._id, { archived: false });
      unmarked += 1;
      if (unmarked >= limit) return { unmarked, more: true };
    }
    return { unmarked, more: false };
  },
});

// -- the site's public functions --------------------------------------------------------------

const range = { ofSite: v.optional(v.string()), sinceMs: v.optional(v.number()), untilMs: v.optional(v.number()) };

/**
 * Manifests of committed files, by (site, week): every site's, or `ofSite`'s; with a range, the
 * files whose [fromTs, toTs] overlaps [sinceMs, untilMs). Manifests hold no episode text: any
 * site may list them.
 */
export const files = query({
  args: { ...siteArgs, ...range },
  returns: v.array(archiveFile),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    requireTime("sinceMs", args.sinceMs);
    requireTime("untilMs", args.untilMs);
    const rows =
      args.ofSite === undefined
        ? await ctx.db.query("archiveFiles").collect()
        : await ctx.db
            .query("archiveFiles")
            .withIndex("by_site_week", (q) => q.eq("site", args.ofSite!))
            .collect();
    return rows
      .filter((row) => overlaps(row, args.sinceMs, args.untilMs))
      .map(manifest)
      .sort((a, b) => (a.site === b.site ? (a.week < b.week ? -1 : 1) : a.site < b.site ? -1 : 1));
  },
});

/**
 * Reads each file in range back: its bytes and sha256 as the manifest says, every line an episode
 * of the file's site, the count and key range, and every archived key of its site and week in it.
 * Per file, the problem found or null.
 */
export const verify = action({
  args: { ...siteArgs, ...range },
  returns: v.array(v.object({ file: archiveFile, problem: v.union(v.string(), v.null()) })),
  handler: async (ctx, args): Promise<Check[]> => {
    const found: Manifest[] = await ctx.runQuery(api.archive.files, args);
    const out: Check[] = [];
    for (const file of found) {
      const { start, end } = weekRange(file.week);
      const archivedKeys: string[] = await ctx.runQuery(internal.archive.archivedKeys, { site: file.site, from: start, to: end });
      out.push({ file, problem: await ctx.runAction(internal.archiveNode.check, { file, archivedKeys }) });
    }
    return out;
  },
});

/**
 * How many of each file's episodes are archived now, by (site, week): a restore, an edit or a
 * forget makes fewer than its manifest's count, which stays (`archive list` shows both).
 */
export const counts = action({
  args: { ...siteArgs, ...range },
  returns: v.array(v.object({ site: v.string(), week: v.string(), archived: v.number() })),
  handler: async (ctx, args): Promise<{ site: string; week: string; archived: number }[]> => {
    const found: Manifest[] = await ctx.runQuery(api.archive.files, args);
    const out: { site: string; week: string; archived: number }[] = [];
    for (const file of found) {
      const { start, end } = weekRange(file.week);
      const archivedKeys: string[] = await ctx.runQuery(internal.archive.archivedKeys, { site: file.site, from: start, to: end });
      out.push({ site: file.site, week: file.week, archived: archivedKeys.length });
    }
    return out;
  },
});

/** A committed file's records from `from` on, a page at a time (damaged: throws). */
async function readFrom(
  ctx: Pick<ActionCtx, "runAction">,
  file: Manifest,
  from: number,
  limit: number,
): Promise<{ records: ArchiveRecord[]; total: number }> {
  const page = await ctx.runAction(internal.archiveNode.readPage, {
    file: { storageId: file.storageId, sha256: file.sha256, bytes: file.bytes },
    from,
    limit,
  });
  return { records: page.records as ArchiveRecord[], total: page.total };
}

/**
 * Brings this site's archived episodes of the files in range back to the hot table: those still
 * archived whose content is the file's copy (a change each, so every index unmarks them). How many
 * came back; restoring again brings nothing. The files stay (the next run merges into them).
 */
export const restore = action({
  args: { ...siteArgs, sinceMs: range.sinceMs, untilMs: range.untilMs },
  returns: v.object({ restored: v.number() }),
  handler: async (ctx, args): Promise<{ restored: number }> => {
    const found: Manifest[] = await ctx.runQuery(api.archive.files, { ...args, ofSite: args.site });
    let restored = 0;
    for (const file of found) {
      for (let from = 0; ; ) {
        const { records, total } = await readFrom(ctx, file, from, RESTORE_BATCH);
        restored += (await ctx.runMutation(internal.archive.restoreBatch, { site: file.site, records })) as number;
        from += records.length;
        if (from >= total || records.length === 0) break;
      }
    }
    return { restored };
  },
});

const RESTORE_BATCH = 200;
const MAX_EPISODE_PAGE = 1000;

/**
 * This site's archived episodes (keys archived in the table, with the copy of their content from
 * the files in range), as the export prints them, with `archived: true`, a page at a time: `next`
 * is the cursor of the following page, null after the last.
 */
export const episodes = action({
  args: {
    ...siteArgs,
    sinceMs: range.sinceMs,
    untilMs: range.untilMs,
    cursor: v.union(v.string(), v.null()),
    limit: v.number(),
  },
  returns: v.object({ episodes: v.array(exportedEpisode), next: v.union(v.string(), v.null()) }),
  handler: async (ctx, args): Promise<Page> => {
    if (!isCount(args.limit) || args.limit < 1 || args.limit > MAX_EPISODE_PAGE) {
      fail("INVALID", `limit must be a whole number from 1 to ${MAX_EPISODE_PAGE}, not ${args.limit}`);
    }
    const found: Manifest[] = await ctx.runQuery(api.archive.files, {
      site: args.site,
      secret: args.secret,
      ofSite: args.site,
      sinceMs: args.sinceMs,
      untilMs: args.untilMs,
    });
    let week: string | null = null;
    let offset = 0;
    if (args.cursor !== null) {
      const parsed = /^(\d{4}-W\d{2}):(\d+)$/.exec(args.cursor);
      if (parsed === null) fail("INVALID", `not a cursor of archive:episodes: ${args.cursor}`);
      week = parsed![1]!;
      offset = Number(parsed![2]);
    }
    const out: Page["episodes"] = [];
    let scanned = 0;
    for (const file of found) {
      if (week !== null && file.week < week) continue;
      const from = week !== null && file.week === week ? offset : 0;
      const { records, total } = await readFrom(ctx, file, from, args.limit - scanned);
      const archived = new Map<string, string | undefined>(
        (
          await ctx.runQuery(internal.archive.archivedAmong, {
            site: file.site,
            items: records.map((r) => ({ sourceId: r.sourceId, contentHash: r.contentHash })),
          })
        ).map((a: { sourceId: string; approvalStatus?: string }) => [a.sourceId, a.approvalStatus]),
      );
      for (const record of records) {
        if (!archived.has(record.sourceId)) continue;
        const decision = archived.get(record.sourceId);
        out.push({ ...record, ...(decision === undefined ? {} : { approvalStatus: decision }), archived: true as const });
      }
      scanned += records.length;
      const next = from + records.length;
      if (next < total) return { episodes: out, next: `${file.week}:${next}` };
      if (scanned >= args.limit) {
        const following = found.find((f) => f.week > file.week);
        return { episodes: out, next: following === undefined ? null : `${following.week}:0` };
      }
    }
    return { episodes: out, next: null };
  },
});

const MAX_RECORD_KEYS = 500;
const episodeKey = v.object({ sourceSite: v.string(), sourceId: v.string() });
const wantedFile = v.object({
  file: v.object({ storageId: v.id("_storage"), sha256: v.string(), bytes: v.number() }),
  site: v.string(),
  keys: v.array(v.object({ sourceId: v.string(), contentHash: v.string() })),
});

/**
 * archive:records' plan: of `keys` (any site's), those archived now, with the row's contentHash,
 * grouped by their week's committed file (site, ISO week of ts), each file once. Keys not found,
 * hot, or of a week with no file are left out.
 */
export const recordsPlan = internalQuery({
  args: { ...siteArgs, keys: v.array(episodeKey) },
  returns: v.array(wantedFile),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    if (args.keys.length > MAX_RECORD_KEYS) fail("INVALID", `at most ${MAX_RECORD_KEYS} keys a call, not ${args.keys.length}`);
    const groups = new Map<string, { site: string; week: string; keys: { sourceId: string; contentHash: string }[] }>();
    const seen = new Set<string>();
    for (const { sourceSite, sourceId } of args.keys) {
      const id = JSON.stringify([sourceSite, sourceId]);
      if (seen.has(id)) continue;
      seen.add(id);
      const doc = await findEpisode(ctx.db, sourceSite, sourceId);
      if (doc === null || !doc.archived) continue;
      const week = isoWeek(doc.ts);
      const group = JSON.stringify([sourceSite, week]);
      if (!groups.has(group)) groups.set(group, { site: sourceSite, week, keys: [] });
      groups.get(group)!.keys.push({ sourceId, contentHash: doc.contentHash });
    }
    const out = [];
    for (const { site, week, keys } of groups.values()) {
      const row = await findFile(ctx.db, site, week);
      if (row === null) continue;
      out.push({ file: { storageId: row.storageId, sha256: row.sha256, bytes: row.bytes }, site, keys });
    }
    return out;
  },
});

/**
 * The archived episodes among `keys` (at most 500), ANY site's: the file copy of each key archived
 * now whose contentHash is the row's, as the export prints it, with `archived: true` (as
 * archive:episodes returns them). Keys hot, unknown, or not in their file are absent. Any
 * authenticated site may read any site's records here: the change feed already gives every site
 * every site's episodes for its search index, and an episode archived before a site indexed it
 * reaches that site only as `archived: true, episode: null`. Each file is read once a call.
 * `unread`: keys not read because the answer reached 8 MiB (at least one record always comes);
 * ask for them again.
 */
export const records = action({
  args: { ...siteArgs, keys: v.array(episodeKey) },
  returns: v.object({ records: v.array(exportedEpisode), unread: v.array(episodeKey) }),
  handler: async (ctx, args): Promise<Records> => {
    const plan = await ctx.runQuery(internal.archive.recordsPlan, args);
    if (plan.length === 0) return { records: [], unread: [] };
    const read = await ctx.runAction(internal.archiveNode.pick, { files: plan });
    return {
      records: (read.records as ArchiveRecord[]).map((record) => ({ ...record, archived: true as const })),
      unread: read.unread,
    };
  },
});

/** The last archive run: when, how many episodes left the hot table, how many files were written. */
export const lastRun = query({
  args: siteArgs,
  returns: v.union(v.object({ at: v.number(), archived: v.number(), files: v.number() }), v.null()),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const last = await ctx.db.query("archiveRuns").withIndex("by_at").order("desc").first();
    return last === null ? null : { at: last.at, archived: last.archived, files: last.files };
  },
});
