/**
 * The cold archive's write path, run by actions (mutations cannot write file storage): a week's
 * file is rewritten whole (merged with this run's episodes, without forgotten ones), stored,
 * read back and checked, and only then committed by one mutation (archive:commit) that names it in
 * archiveFiles and strips the archived bodies. A blob stored but never committed (the action
 * died) is not the archive: nothing names it, and the next run deletes it (archive:orphanBlobs).
 */
import { internal } from "../_generated/api";
import type { Id } from "../_generated/dataModel";
import type { ActionCtx } from "../_generated/server";
import { type ArchiveRecord, isoWeek } from "./archiveFormat";

type Ctx = Pick<ActionCtx, "runQuery" | "runMutation" | "runAction" | "storage">;

/** An episode to archive: its row, the content hash read, and its export record (the line). */
export type Added = { id: Id<"episodes">; contentHash: string; record: ArchiveRecord };

export type Rewritten = { written: boolean; stripped: number; removed: string[]; deleted: boolean };

// A week's rewrite that meets concurrent changes (another rewrite, a forget) tries again.
const ATTEMPTS = 5;

/**
 * Rewrites the file of (site, week): its records, plus `added`, without the keys forgotten since
 * (tombstones still marked with this week). The new file is assembled, stored and read back in
 * Node (archiveNode:writeWeek), then committed (archive:commit); on a concurrent change the new
 * blob is deleted and the week done again. Nothing to change: nothing written.
 */
export async function rewriteWeek(ctx: Ctx, site: string, week: string, added: Added[]): Promise<Rewritten> {
  let adding = added;
  for (let attempt = 0; attempt < ATTEMPTS; attempt += 1) {
    const state = await ctx.runQuery(internal.archive.weekState, { site, week });
    const existing = state.file === null ? null : { storageId: state.file.storageId, sha256: state.file.sha256, bytes: state.file.bytes };
    const written = await ctx.runAction(internal.archiveNode.writeWeek, {
      site,
      week,
      existing,
      add: adding.map((a) => a.record),
      drop: state.purges.map((p) => p.sourceId),
    });
    const done = await ctx.runMutation(internal.archive.commit, {
      site,
      week,
      expected: existing?.storageId ?? null,
      keep: !written.changed,
      file: written.file,
      strip: adding.map((a) => ({ id: a.id, sourceId: a.record.sourceId, contentHash: a.contentHash })),
      purged: state.purges.map((p) => p.id),
    });
    if (done.ok) {
      return {
        written: written.file !== null,
        stripped: done.stripped,
        removed: written.removed,
        deleted: written.changed && written.file === null && existing !== null,
      };
    }
    if (written.file !== null) await ctx.storage.delete(written.file.storageId);
    // Episodes forgotten since they were read are not archived (their text must not be in a file).
    const gone = new Set(done.gone);
    adding = adding.filter((a) => !gone.has(a.record.sourceId));
  }
  throw new Error(`archive file ${site} ${week}: still changing after ${ATTEMPTS} attempts; the next run does it`);
}

type Batch = { id: Id<"episodes">; ts: number; contentHash: string; record: ArchiveRecord }[];

export type RunResult = { archived: number; files: number; more: boolean; failures: string[] };

// A blob stored this long ago that no file row names is an orphan: no action runs this long.
export const ORPHAN_GRACE_MS = 60 * 60 * 1000;

export const ARCHIVE_BATCH = 200; // episodes read a query and stripped a commit: well inside a mutation's limits

/**
 * One archive run: orphan blobs older than `orphanGraceMs` deleted, forgets that died before their
 * rewrite finished, then at most `limit` hot episodes with ts < cutoff, oldest first, a batch at
 * a time, each batch's (site, week) groups rewritten and committed one by one. A week that fails
 * (a damaged file) stays as it was, its episodes hot, and is reported. The run is recorded.
 */
export async function archiveRun(ctx: Ctx, cutoff: number, limit: number, orphanGraceMs: number): Promise<RunResult> {
  const at = Date.now();
  for (const storageId of await ctx.runQuery(internal.archive.orphanBlobs, { before: at - orphanGraceMs })) {
    await ctx.storage.delete(storageId);
  }
  let files = 0;
  let archived = 0;
  const failures: string[] = [];
  const attempt = async (site: string, week: string, added: Added[]) => {
    try {
      const done = await rewriteWeek(ctx, site, week, added);
      if (done.written || done.deleted) files += 1;
      archived += done.stripped;
    } catch (error) {
      failures.push(`${site} ${week}: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
  for (const { site, week } of await ctx.runQuery(internal.archive.pendingPurges, {})) await attempt(site, week, []);

  let afterTs: number | null = null;
  let skip: Id<"episodes">[] = [];
  let exhausted = false;
  let read = 0;
  while (read < limit) {
    const want = Math.min(ARCHIVE_BATCH, limit - read);
    const found: { episodes: Batch; exhausted: boolean } = await ctx.runQuery(internal.archive.oldBatch, {
      cutoff,
      afterTs,
      skip,
      limit: want,
    });
    const batch = found.episodes;
    read += batch.length;
    const groups = new Map<string, { site: string; week: string; added: Added[] }>();
    for (const doc of batch) {
      const week = isoWeek(doc.ts);
      const key = JSON.stringify([doc.record.sourceSite, week]);
      if (!groups.has(key)) groups.set(key, { site: doc.record.sourceSite, week, added: [] });
      groups.get(key)!.added.push({ id: doc.id, contentHash: doc.contentHash, record: doc.record });
    }
    for (const { site, week, added } of groups.values()) await attempt(site, week, added);
    if (found.exhausted || batch.length === 0) {
      exhausted = found.exhausted;
      break;
    }
    // The next batch starts at the last ts read, past the episodes of that ts already done (those
    // left hot, edited meanwhile, are not read again this run).
    const lastTs = batch[batch.length - 1]!.ts;
    skip = [...(lastTs === afterTs ? skip : []), ...batch.filter((d) => d.ts === lastTs).map((d) => d.id)];
    afterTs = lastTs;
  }
  await ctx.runMutation(internal.archive.recordRun, { at, archived, files });
  return { archived, files, more: !exhausted, failures };
}
