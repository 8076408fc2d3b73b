import { v } from "convex/values";
import { internalMutation, mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";

// "Offline after three missed heartbeats" with agents beating once a minute.
export const STALE_AFTER_MS = 3 * 60 * 1000;

export const heartbeat = mutation({
  args: { ...siteArgs, agentName: v.string(), platform: v.string() },
  returns: v.object({ status: v.literal("online") }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const found = await ctx.db
      .query("agents")
      .withIndex("by_site_agent", (q) => q.eq("site", site).eq("agentName", args.agentName))
      .unique();
    const row = { agentName: args.agentName, site, platform: args.platform, status: "online" as const, lastHeartbeat: Date.now() };
    if (found === null) await ctx.db.insert("agents", row);
    else await ctx.db.patch(found._id, row);
    return { status: "online" as const };
  },
});

export const list = query({
  args: siteArgs,
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    return await ctx.db
      .query("agents")
      .withIndex("by_site_agent", (q) => q.eq("site", site))
      .collect();
  },
});

/** Cron mark-stale-agents: online agents silent for STALE_AFTER_MS go offline. */
export const markStale = internalMutation({
  // `now` lets an admin (or a test) run the sweep as of another time; crons leave it out.
  args: { now: v.optional(v.number()) },
  handler: async (ctx, args) => {
    const cutoff = (args.now ?? Date.now()) - STALE_AFTER_MS;
    const stale = await ctx.db
      .query("agents")
      .withIndex("by_status", (q) => q.eq("status", "online").lt("lastHeartbeat", cutoff))
      .collect();
    for (const agent of stale) await ctx.db.patch(agent._id, { status: "offline" });
    return { marked: stale.map((agent) => ({ site: agent.site, agentName: agent.agentName })) };
  },
});
