import { v, type Infer } from "convex/values";
import type { Doc } from "./_generated/dataModel";
import { mutation, query, type QueryCtx } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";

/**
 * One site name, one source: the AgentDB file (on one machine, told apart by its sidecar's
 * instance id) that feeds a site. A site reads and writes only its own row; whether to claim is
 * the daemon's decision (sync/push/claim.py), these functions only make the claim atomic.
 */

const sourceRecord = v.object({
  instance: v.string(),
  machine: v.string(),
  host: v.string(),
  agentdbPath: v.string(),
  claimedAt: v.number(),
  lastSeenAt: v.number(),
});

type SourceRecord = Infer<typeof sourceRecord>;

/** The record without the row's own fields (site, _id), which the validator would refuse. */
function recordOf(row: SourceRecord): SourceRecord {
  return {
    instance: row.instance,
    machine: row.machine,
    host: row.host,
    agentdbPath: row.agentdbPath,
    claimedAt: row.claimedAt,
    lastSeenAt: row.lastSeenAt,
  };
}

async function findSource(db: QueryCtx["db"], site: string): Promise<Doc<"sources"> | null> {
  return await db
    .query("sources")
    .withIndex("by_site", (q) => q.eq("site", site))
    .unique();
}

export const getSource = query({
  args: siteArgs,
  returns: v.union(sourceRecord, v.null()),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const found = await findSource(ctx.db, site);
    return found === null ? null : recordOf(found);
  },
});

/**
 * Compare-and-set: the record is written if the recorded instance is `expected` (null: no record
 * yet) or already `instance`. Mutations are serializable, so of two daemons that both read the same
 * old instance only one takes the site. `expected` is required (null, not left out) so that a
 * caller cannot take a site without saying what it believes is there. `source` is the row as it
 * now stands, so a loser learns who holds the site and a retried call (reply lost) that won says so.
 */
export const setSource = mutation({
  args: {
    ...siteArgs,
    expected: v.union(v.string(), v.null()),
    instance: v.string(),
    machine: v.string(),
    host: v.string(),
    agentdbPath: v.string(),
  },
  returns: v.object({ claimed: v.boolean(), source: v.union(sourceRecord, v.null()) }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const found = await findSource(ctx.db, site);
    const current = found?.instance ?? null;
    if (current !== args.expected && current !== args.instance) {
      return { claimed: false, source: found === null ? null : recordOf(found) };
    }
    const now = Date.now();
    const row = {
      site,
      instance: args.instance,
      machine: args.machine,
      host: args.host,
      agentdbPath: args.agentdbPath,
      claimedAt: found !== null && current === args.instance ? found.claimedAt : now,
      lastSeenAt: now,
    };
    if (found === null) await ctx.db.insert("sources", row);
    else await ctx.db.patch(found._id, row);
    return { claimed: true, source: recordOf(row) };
  },
});
