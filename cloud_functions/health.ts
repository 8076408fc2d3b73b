import { v } from "convex/values";
import { internalMutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { cursorOf } from "./lib/cursor";
import { silentAfterMs } from "./lib/settings";
import { isCount } from "./lib/validators";


const transition = v.object({
  site: v.string(),
  state: v.union(v.literal("up"), v.literal("down")),
  at: v.number(),
  silentForS: v.number(),
});

/** Every site's cursor and how long it has been silent: sites see each other's health, nothing more. */
export const syncHealth = query({
  args: siteArgs,
  returns: v.array(
    v.object({
      site: v.string(),
      lastSyncedId: v.number(),
      lastSyncedAt: v.number(),
      totalSynced: v.number(),
      silentForMs: v.number(),
    }),
  ),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const now = Date.now();
    const cursors = await ctx.db.query("syncCursors").collect();
    return cursors.map((doc) => ({ ...cursorOf(doc), silentForMs: Math.max(0, now - doc.lastSyncedAt) }));
  },
});

/**
 * Sweep sync-health (the sync-health-alert cron): a site whose last sync (its cursor's
 * lastSyncedAt) is `silentAfterMs` (the deployment's MEMSYNC_JOBS__SILENT_AFTER) old or older is "down", else "up". Only a change of judgement
 * is recorded and returned, so an alert goes out once when a site falls silent and once when it is
 * back; a site first judged healthy is no news, first judged silent is. The same rule as the
 * embedded hub's sync_health (sync/backbone/hub/fleet/health.py).
 */
export const syncHealthAlert = internalMutation({
  args: { now: v.optional(v.number()), silentAfterMs: v.optional(v.number()) },
  returns: v.array(transition),
  handler: async (ctx, args) => {
    const now = args.now ?? Date.now();
    const silentAfter = args.silentAfterMs ?? silentAfterMs();
    const transitions: { site: string; state: "up" | "down"; at: number; silentForS: number }[] = [];
    const cursors = (await ctx.db.query("syncCursors").collect()).sort((a, b) =>
      a.site < b.site ? -1 : a.site > b.site ? 1 : 0,
    );
    for (const cursor of cursors) {
      const silentMs = Math.max(0, now - cursor.lastSyncedAt);
      const state: "up" | "down" = silentMs >= silentAfter ? "down" : "up";
      const found = await ctx.db
        .query("healthStates")
        .withIndex("by_site", (q) => q.eq("site", cursor.site))
        .unique();
      if (found?.state === state) continue;
      if (found === null) await ctx.db.insert("healthStates", { site: cursor.site, state, since: now });
      else await ctx.db.patch(found._id, { state, since: now });
      if (found === null && state === "up") continue;
      const change = { site: cursor.site, state, at: now, silentForS: silentMs / 1000 };
      await ctx.db.insert("healthTransitions", change);
      transitions.push(change);
    }
    return transitions;
  },
});

/** The sync-health sweep's transitions at or after `sinceMs`, oldest first, for any site. */
export const transitions = query({
  args: { ...siteArgs, sinceMs: v.number() },
  returns: v.array(transition),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const since = isCount(args.sinceMs) ? args.sinceMs : 0;
    const found = await ctx.db
      .query("healthTransitions")
      .withIndex("by_at", (q) => q.gte("at", since))
      .take(1000);
    return found.map(({ site, state, at, silentForS }) => ({ site, state, at, silentForS }));
  },
});
