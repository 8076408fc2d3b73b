import { v } from "convex/values";
import { mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { fail } from "./lib/errors";
import { findDocument } from "./lib/push";
import { checkKind, totalsOf, totalsView } from "./lib/uses";

/** Events a call may carry, and memories an event may name: one mutation stays well inside Convex's limits. */
export const MAX_EVENTS = 100;
export const MAX_KEYS = 50;

const memoryKey = v.object({ sourceSite: v.string(), sourceId: v.string() });
const totalsValue = v.object({
  sourceSite: v.string(),
  sourceId: v.string(),
  accessCount: v.number(),
  lastAccessed: v.union(v.number(), v.null()),
  byKind: v.record(v.string(), v.number()),
  pinned: v.boolean(),
  pinnedBy: v.union(v.string(), v.null()),
  pinnedAt: v.union(v.number(), v.null()),
});

/**
 * The caller's agents' uses of the fleet's memories: each (event, memory) once however often it is
 * delivered, a memory the deployment does not hold (unknown, or forgotten) skipped; the totals per
 * memory follow in the same mutation. Returns how many pairs were counted for the first time.
 */
export const record = mutation({
  args: {
    ...siteArgs,
    events: v.array(
      v.object({
        useId: v.string(),
        kind: v.string(),
        usedAt: v.number(),
        keys: v.array(memoryKey),
        agent: v.optional(v.string()),
      }),
    ),
  },
  returns: v.object({ counted: v.number() }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    if (args.events.length > MAX_EVENTS) fail("INVALID", `at most ${MAX_EVENTS} uses a call, got ${args.events.length}`);
    for (const event of args.events) {
      checkKind(event.kind);
      if (event.useId === "") fail("INVALID", "a use needs its id (the recording site's): none was given");
      if (event.keys.length > MAX_KEYS) fail("INVALID", `at most ${MAX_KEYS} memories a use, got ${event.keys.length}`);
    }
    let counted = 0;
    for (const event of args.events) {
      const seen = new Set<string>();
      for (const { sourceSite, sourceId } of event.keys) {
        const key = JSON.stringify([sourceSite, sourceId]);
        if (seen.has(key)) continue; // a memory twice in one event counts once
        seen.add(key);
        if ((await findDocument(ctx.db, sourceSite, sourceId)) === null) continue;
        const already = await ctx.db
          .query("uses")
          .withIndex("by_use", (q) => q.eq("useId", event.useId).eq("sourceSite", sourceSite).eq("sourceId", sourceId))
          .unique();
        if (already !== null) continue;
        await ctx.db.insert("uses", {
          useId: event.useId,
          sourceSite,
          sourceId,
          kind: event.kind,
          bySite: site,
          usedAt: event.usedAt,
          ...(event.agent === undefined ? {} : { agent: event.agent }),
        });
        const totals = await totalsOf(ctx.db, sourceSite, sourceId);
        const byKind: Record<string, number> = totals === null ? {} : JSON.parse(totals.byKindJson);
        byKind[event.kind] = (byKind[event.kind] ?? 0) + 1;
        const byKindJson = JSON.stringify(Object.fromEntries(Object.entries(byKind).sort(([a], [b]) => (a < b ? -1 : 1))));
        if (totals === null) {
          await ctx.db.insert("useTotals", { sourceSite, sourceId, accessCount: 1, lastAccessed: event.usedAt, byKindJson, pinned: false });
        } else {
          await ctx.db.patch(totals._id, {
            accessCount: totals.accessCount + 1,
            lastAccessed: Math.max(totals.lastAccessed ?? event.usedAt, event.usedAt),
            byKindJson,
          });
        }
        counted += 1;
      }
    }
    return { counted };
  },
});

/** The totals of those of `keys` used or pinned. */
export const totals = query({
  args: { ...siteArgs, keys: v.array(memoryKey) },
  returns: v.array(totalsValue),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    if (args.keys.length > MAX_KEYS * 4) fail("INVALID", `at most ${MAX_KEYS * 4} memories a call, got ${args.keys.length}`);
    const found = [];
    for (const { sourceSite, sourceId } of args.keys) {
      const doc = await totalsOf(ctx.db, sourceSite, sourceId);
      if (doc !== null) found.push(totalsView(doc));
    }
    return found;
  },
});

/** Every memory used or pinned, a page at a time (`after`: the previous page's `next`). */
export const totalsPage = query({
  args: { ...siteArgs, after: v.union(v.string(), v.null()), limit: v.number() },
  returns: v.object({ totals: v.array(totalsValue), next: v.union(v.string(), v.null()) }),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const page = await ctx.db.query("useTotals").paginate({ cursor: args.after, numItems: Math.max(1, Math.min(args.limit, 1000)) });
    return { totals: page.page.map(totalsView), next: page.isDone ? null : page.continueCursor };
  },
});

/** Sets or clears a memory's pin (any site's: people pin the fleet's); false when no such memory. */
export const pin = mutation({
  args: { ...siteArgs, sourceSite: v.string(), sourceId: v.string(), pinned: v.boolean(), by: v.string() },
  returns: v.boolean(),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const { sourceSite, sourceId, pinned, by } = args;
    if ((await findDocument(ctx.db, sourceSite, sourceId)) === null) return false;
    const totals = await totalsOf(ctx.db, sourceSite, sourceId);
    const fields = pinned ? { pinned, pinnedBy: by, pinnedAt: Date.now() } : { pinned, pinnedBy: undefined, pinnedAt: undefined };
    if (totals === null) {
      if (pinned) await ctx.db.insert("useTotals", { sourceSite, sourceId, accessCount: 0, byKindJson: "{}", ...fields });
    } else if (!pinned && totals.accessCount === 0) {
      await ctx.db.delete(totals._id); // unpinned and never used: nothing left to say of it
    } else {
      await ctx.db.patch(totals._id, fields);
    }
    return true;
  },
});
