import type { MutationCtx, QueryCtx } from "../_generated/server";
import type { Doc } from "../_generated/dataModel";

export type Cursor = { site: string; lastSyncedId: number; lastSyncedAt: number; totalSynced: number };

export function cursorOf(doc: Doc<"syncCursors">): Cursor {
  return { site: doc.site, lastSyncedId: doc.lastSyncedId, lastSyncedAt: doc.lastSyncedAt, totalSynced: doc.totalSynced };
}

export async function readCursor(db: QueryCtx["db"], site: string): Promise<Doc<"syncCursors"> | null> {
  return await db
    .query("syncCursors")
    .withIndex("by_site", (q) => q.eq("site", site))
    .unique();
}

/**
 * The hub's cursor rule: lastSyncedId never goes backwards, lastSyncedAt is this write's time,
 * totalSynced counts inserted episodes (less the forgotten: `forgetFromCursor`). Called inside the
 * mutation that wrote the rows.
 */
export async function advanceCursor(
  ctx: MutationCtx,
  site: string,
  lastSyncedId: number,
  inserted: number,
  now: number,
): Promise<Cursor> {
  const found = await readCursor(ctx.db, site);
  if (found === null) {
    const cursor = { site, lastSyncedId, lastSyncedAt: now, totalSynced: inserted };
    await ctx.db.insert("syncCursors", cursor);
    return cursor;
  }
  const cursor = {
    site,
    lastSyncedId: Math.max(found.lastSyncedId, lastSyncedId),
    lastSyncedAt: now,
    totalSynced: found.totalSynced + inserted,
  };
  await ctx.db.patch(found._id, cursor);
  return cursor;
}

/**
 * One of the site's episodes was forgotten (deleted): totalSynced counts the site's episodes the
 * deployment holds, so that status and the fleet agree with it (the hub's forget does the same).
 */
export async function forgetFromCursor(ctx: MutationCtx, site: string): Promise<void> {
  const found = await readCursor(ctx.db, site);
  if (found !== null) await ctx.db.patch(found._id, { totalSynced: Math.max(0, found.totalSynced - 1) });
}
