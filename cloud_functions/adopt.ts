/**
 * `memsync adopt`: a deployment the seed design filled (`convex-episode-sync.sh`, its episodes
 * keyed by (sourceSite, sourceId) with a `metadata` object and none of memsync's fields) brought to
 * memsync's shape in place, and back (`--undo`). Internal: only the deploy key runs them.
 *
 * Convex's way of migrating (a staged schema that accepts both shapes: schema.ts; batches that each
 * fit one mutation; resumable): the seed documents still to adopt are an index range (`archived`
 * absent: by_created), so each batch takes the next ones and an interrupted run simply starts again
 * where the range now begins. Adopting an adopted document is not possible (it left the range):
 * running it twice changes nothing. The undo takes hot memsync documents (archived = false) the
 * same way. The decisions are lib/adoption.ts's, pure.
 */
import { v } from "convex/values";
import type { Doc } from "./_generated/dataModel";
import { internalMutation, internalQuery, type QueryCtx } from "./_generated/server";
import { adoptSeed, seedOf, usablePointId } from "./lib/adoption";
import { ChangeSequence } from "./lib/changes";
import { isHot, isMemsync } from "./lib/episodeView";
import { fail } from "./lib/errors";
import { isCount } from "./lib/validators";

/** At most this many documents a batch, and this many bytes written (a mutation may write 16 MiB). */
export const MAX_BATCH = 500;
export const MAX_BATCH_BYTES = 8 * 1024 * 1024;

/** The tables the seed design had, which `adopt --check` reports on. */
export const SEED_TABLES = ["episodes", "approvals", "tasks", "agents", "syncCursors", "collaborators"] as const;
type SeedTable = (typeof SEED_TABLES)[number];

function requireLimit(limit: number): void {
  if (!isCount(limit) || limit < 1 || limit > MAX_BATCH) fail("INVALID", `limit must be from 1 to ${MAX_BATCH}, not ${limit}`);
}

function bytesOf(value: unknown): number {
  return new TextEncoder().encode(JSON.stringify(value)).length;
}

/** A document's shape, as `--check` reports it. */
function shapeOf(table: SeedTable, doc: Doc<SeedTable>): string {
  if (table === "episodes") {
    const episode = doc as Doc<"episodes">;
    if (!isMemsync(episode)) return "seed";
    if (episode.adopted !== undefined) return "adopted";
    return episode.archived ? "archived" : "memsync";
  }
  if (table === "tasks") return (doc as Doc<"tasks">).site === undefined ? "seed" : "memsync";
  return "memsync";
}

const surveyPage = v.object({
  shapes: v.record(v.string(), v.number()),
  seedSites: v.array(v.string()), // the sites the page's seed episodes came from
  seedPoints: v.number(), // seed episodes with a point id memsync's index can write
  next: v.union(v.string(), v.null()),
});

/**
 * One page of a seed table, by shape: "seed" (still as the seed wrote it), "adopted" (adopted,
 * waiting for its site's first push), "archived", "memsync". Reads only: `--check`.
 */
export const survey = internalQuery({
  args: { table: v.string(), after: v.union(v.string(), v.null()), limit: v.number() },
  returns: surveyPage,
  handler: async (ctx, args) => {
    requireLimit(args.limit);
    if (!(SEED_TABLES as readonly string[]).includes(args.table)) {
      fail("INVALID", `table must be one of ${SEED_TABLES.join(", ")}, not ${args.table}`);
    }
    const table = args.table as SeedTable;
    const page = await ctx.db.query(table).paginate({ cursor: args.after, numItems: args.limit });
    const shapes: Record<string, number> = {};
    const sites = new Set<string>();
    let seedPoints = 0;
    for (const doc of page.page) {
      const shape = shapeOf(table, doc);
      shapes[shape] = (shapes[shape] ?? 0) + 1;
      if (table === "episodes" && shape === "seed") {
        const episode = doc as Doc<"episodes">;
        sites.add(episode.sourceSite);
        if (usablePointId(episode.qdrantPointId) !== undefined) seedPoints += 1;
      }
    }
    return { shapes, seedSites: [...sites].sort(), seedPoints, next: page.isDone ? null : page.continueCursor };
  },
});

/** Which of these sites have no `sites` row yet (each needs `sites:register` before its daemon runs). */
export const unregistered = internalQuery({
  args: { sites: v.array(v.string()) },
  returns: v.array(v.string()),
  handler: async (ctx, args) => {
    const out: string[] = [];
    for (const name of args.sites) {
      if ((await siteRow(ctx.db, name)) === null) out.push(name);
    }
    return out;
  },
});

async function siteRow(db: QueryCtx["db"], name: string) {
  return await db
    .query("sites")
    .withIndex("by_name", (q) => q.eq("name", name))
    .unique();
}

/**
 * Adopts the next seed episodes (at most `limit`, and 8 MiB written): each replaced by its memsync
 * shape (lib/adoption.ts adoptSeed), with the next seq of the change feed. `more`: seed episodes remain.
 */
export const adoptEpisodes = internalMutation({
  args: { limit: v.number() },
  returns: v.object({ adopted: v.number(), more: v.boolean() }),
  handler: async (ctx, args) => {
    requireLimit(args.limit);
    const now = Date.now();
    const sequence = new ChangeSequence(ctx.db);
    let adopted = 0;
    let bytes = 0;
    const range = ctx.db.query("episodes").withIndex("by_created", (q) => q.eq("archived", undefined));
    for await (const doc of range) {
      if (adopted >= args.limit || bytes >= MAX_BATCH_BYTES) break;
      if (isMemsync(doc)) continue; // cannot be: the range holds documents without `archived`
      const adoptedDoc = adoptSeed(doc, now, await sequence.next());
      await ctx.db.replace(doc._id, adoptedDoc);
      bytes += bytesOf(adoptedDoc);
      adopted += 1;
    }
    await sequence.save();
    const left = await ctx.db
      .query("episodes")
      .withIndex("by_created", (q) => q.eq("archived", undefined))
      .first();
    return { adopted, more: left !== null };
  },
});

/**
 * Gives a page of the seed's tasks (no `site`) their site: the site of the approval they wait on,
 * else the site of the agent of their name (when exactly one site has it). `unplaced`: tasks with
 * neither, which no site's `memsync tasks` lists until one is given by hand.
 */
export const placeTasks = internalMutation({
  args: { after: v.union(v.string(), v.null()), limit: v.number() },
  returns: v.object({ placed: v.number(), unplaced: v.number(), next: v.union(v.string(), v.null()) }),
  handler: async (ctx, args) => {
    requireLimit(args.limit);
    const page = await ctx.db.query("tasks").paginate({ cursor: args.after, numItems: args.limit });
    let placed = 0;
    let unplaced = 0;
    for (const task of page.page) {
      if (task.site !== undefined) continue;
      const approval = task.approvalId === undefined ? null : await ctx.db.get(task.approvalId);
      let site = approval?.site;
      if (site === undefined) {
        const agents = await ctx.db
          .query("agents")
          .filter((q) => q.eq(q.field("agentName"), task.agentName))
          .take(2);
        site = agents.length === 1 ? agents[0]!.site : undefined;
      }
      if (site === undefined) {
        unplaced += 1;
        continue;
      }
      await ctx.db.patch(task._id, { site });
      placed += 1;
    }
    return { placed, unplaced, next: page.isDone ? null : page.continueCursor };
  },
});

/**
 * The rollback: the next hot memsync episodes (at most `limit`) back to the seed's shape
 * (lib/adoption.ts seedOf), so that the seed's schema and script can be deployed again. Archived
 * episodes (their bodies in the cold archive) are not in this range: `--undo` reports them, and
 * `archive:restore` brings them back first.
 */
export const undoEpisodes = internalMutation({
  args: { limit: v.number() },
  returns: v.object({ undone: v.number(), more: v.boolean() }),
  handler: async (ctx, args) => {
    requireLimit(args.limit);
    let undone = 0;
    let bytes = 0;
    const range = ctx.db.query("episodes").withIndex("by_archived_ts", (q) => q.eq("archived", false));
    let more = false;
    for await (const doc of range) {
      if (undone >= args.limit || bytes >= MAX_BATCH_BYTES) {
        more = true;
        break;
      }
      if (!isHot(doc)) continue;
      const seed = seedOf(doc);
      await ctx.db.replace(doc._id, seed);
      bytes += bytesOf(seed);
      undone += 1;
    }
    return { undone, more };
  },
});

/** The rollback of placeTasks: a page of tasks without the `site` the seed's tasks never had. */
export const unplaceTasks = internalMutation({
  args: { after: v.union(v.string(), v.null()), limit: v.number() },
  returns: v.object({ unplaced: v.number(), next: v.union(v.string(), v.null()) }),
  handler: async (ctx, args) => {
    requireLimit(args.limit);
    const page = await ctx.db.query("tasks").paginate({ cursor: args.after, numItems: args.limit });
    let unplaced = 0;
    for (const task of page.page) {
      if (task.site === undefined) continue;
      await ctx.db.patch(task._id, { site: undefined });
      unplaced += 1;
    }
    return { unplaced, next: page.isDone ? null : page.continueCursor };
  },
});
