import { v } from "convex/values";
import { internalMutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { setAlertState } from "./lib/alerts";
import { cursorOf } from "./lib/cursor";

export const SILENT_AFTER_MS = 60 * 60 * 1000;

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
 * Cron sync-health-alert: a site silent for `silentAfterMs` (default 1 h) goes "down" once; it comes
 * back "up" once when it syncs again. Returns only the transitions, the alerts to send.
 */
export const syncHealthAlert = internalMutation({
  args: { silentAfterMs: v.optional(v.number()) },
  handler: async (ctx, args) => {
    const now = Date.now();
    const silentAfter = args.silentAfterMs ?? SILENT_AFTER_MS;
    const transitions: { site: string; state: "down" | "up"; since: number; silentForMs: number }[] = [];
    for (const cursor of await ctx.db.query("syncCursors").collect()) {
      const silentForMs = now - cursor.lastSyncedAt;
      const state = silentForMs >= silentAfter ? "down" : "up";
      const previous = await setAlertState(ctx, `sync-health:${cursor.site}`, state, now);
      // A site first seen healthy is no news; first seen silent is.
      if (previous !== state && !(previous === null && state === "up")) {
        transitions.push({ site: cursor.site, state, since: now, silentForMs });
      }
    }
    return transitions;
  },
});
