import { v } from "convex/values";
import { internalMutation, mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { fail } from "./lib/errors";
import { fleet, siteRow } from "./lib/fleet";
import { agentStatus, isCount, nullable } from "./lib/validators";

// "Offline after three missed heartbeats" with agents beating once a minute (the daemon's
// jobs.stale_after defaults to the same 180 s).
export const STALE_AFTER_MS = 3 * 60 * 1000;

const agent = v.object({
  agentName: v.string(),
  site: v.string(),
  platform: v.string(),
  status: agentStatus,
  lastHeartbeat: v.number(),
  interface: nullable(v.string()),
  lastEpisodeAt: nullable(v.number()),
});

/**
 * An agent of the caller's site is alive. `interface` and `lastEpisodeAt` left out keep what is
 * known (an agent's hook knows neither; the site's episodes told them), and lastEpisodeAt never
 * goes backwards.
 */
export const heartbeat = mutation({
  args: {
    ...siteArgs,
    agentName: v.string(),
    platform: v.string(),
    interface: v.optional(v.string()),
    lastEpisodeAt: v.optional(v.number()),
  },
  returns: v.object({ status: v.literal("online") }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const found = await ctx.db
      .query("agents")
      .withIndex("by_site_agent", (q) => q.eq("site", site).eq("agentName", args.agentName))
      .unique();
    const known = [args.lastEpisodeAt, found?.lastEpisodeAt].filter((t): t is number => t !== undefined);
    const face = args.interface ?? found?.interface;
    const row = {
      agentName: args.agentName,
      site,
      platform: args.platform,
      status: "online" as const,
      lastHeartbeat: Date.now(),
      ...(face === undefined ? {} : { interface: face }),
      ...(known.length === 0 ? {} : { lastEpisodeAt: Math.max(...known) }),
    };
    if (found === null) await ctx.db.insert("agents", row);
    else await ctx.db.patch(found._id, row);
    return { status: "online" as const };
  },
});

/** The caller's daemon is alive: its registry row, with the figures the digest and fleet report. */
export const heartbeatSite = mutation({
  args: {
    ...siteArgs,
    version: v.string(),
    host: v.string(),
    pid: v.number(),
    lagS: nullable(v.number()),
    backlog: nullable(v.number()),
    indexState: nullable(v.string()),
    quarantined: v.number(),
    conflicts: v.number(),
    // Episodes the site synced with secrets redacted (sync/redaction.py); older daemons leave it out.
    redacted: v.optional(v.number()),
  },
  returns: v.null(),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    for (const name of ["pid", "quarantined", "conflicts"] as const) {
      if (!isCount(args[name])) fail("INVALID", `${name} must be a whole number, not ${args[name]}`);
    }
    if (args.redacted !== undefined && !isCount(args.redacted)) {
      fail("INVALID", `redacted must be a whole number, not ${args.redacted}`);
    }
    const found = await ctx.db
      .query("siteStates")
      .withIndex("by_site", (q) => q.eq("site", site))
      .unique();
    const { secret: _, site: __, ...beat } = args;
    const row = { ...beat, site, status: "online" as const, lastHeartbeat: Date.now() };
    if (found === null) await ctx.db.insert("siteStates", row);
    else await ctx.db.replace(found._id, row);
    return null;
  },
});

/** The fleet: every registered site (disabled ones aside), by name, as any site may read it. */
export const sites = query({
  args: siteArgs,
  returns: v.array(siteRow),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    return await fleet(ctx.db);
  },
});

/** The caller's agents, or with `allSites` every site's (the fleet view). */
export const list = query({
  args: { ...siteArgs, allSites: v.optional(v.boolean()) },
  returns: v.array(agent),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const found = args.allSites
      ? await ctx.db.query("agents").withIndex("by_site_agent").collect()
      : await ctx.db
          .query("agents")
          .withIndex("by_site_agent", (q) => q.eq("site", site))
          .collect();
    return found.map((a) => ({
      agentName: a.agentName,
      site: a.site,
      platform: a.platform,
      status: a.status,
      lastHeartbeat: a.lastHeartbeat,
      interface: a.interface ?? null,
      lastEpisodeAt: a.lastEpisodeAt ?? null,
    }));
  },
});

/**
 * Sweep mark-stale-agents: online agents and sites silent for `staleAfterMs` go offline. `now` and
 * `staleAfterMs` let an admin (or a test) sweep as of another time or rule; the cron leaves them out.
 */
export const markStale = internalMutation({
  args: { now: v.optional(v.number()), staleAfterMs: v.optional(v.number()) },
  returns: v.object({
    marked: v.number(),
    agents: v.array(v.object({ site: v.string(), agentName: v.string() })),
    sites: v.array(v.string()),
  }),
  handler: async (ctx, args) => {
    const cutoff = (args.now ?? Date.now()) - (args.staleAfterMs ?? STALE_AFTER_MS);
    const agents = await ctx.db
      .query("agents")
      .withIndex("by_status", (q) => q.eq("status", "online").lt("lastHeartbeat", cutoff))
      .collect();
    for (const a of agents) await ctx.db.patch(a._id, { status: "offline" });
    const sites = await ctx.db
      .query("siteStates")
      .withIndex("by_status", (q) => q.eq("status", "online").lt("lastHeartbeat", cutoff))
      .collect();
    for (const s of sites) await ctx.db.patch(s._id, { status: "offline" });
    return {
      marked: agents.length + sites.length,
      agents: agents.map((a) => ({ site: a.site, agentName: a.agentName })),
      sites: sites.map((s) => s.site),
    };
  },
});
