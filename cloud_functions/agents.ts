import { v } from "convex/values";
import { type DatabaseWriter, internalMutation, mutation, query } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { fail } from "./lib/errors";
import { fleet, siteRow } from "./lib/fleet";
import { agentRetentionMs, staleAfterMs as deploymentStaleAfterMs } from "./lib/settings";
import { agentStatus, isCount, nullable } from "./lib/validators";

// An agents:heartbeatSite call carries at most this many agents (sync/backbone/convex/fleet/registry.py
// sends more in several calls): an upsert costs an index read an agent.
export const MAX_AGENT_BEATS = 200;
export const PRUNE_BATCH = 500;

/**
 * Online while the latest sign of life is at most `staleAfterMs` old: the rule the mark-stale
 * sweep applies (sync/push/agents.py `liveness` is the same).
 */
export function liveness(lastSeen: number | null, now: number, staleAfterMs: number): "online" | "offline" {
  return lastSeen !== null && now - lastSeen <= staleAfterMs ? "online" : "offline";
}

const agentBeat = v.object({
  agentName: v.string(),
  platform: v.string(),
  seenAt: v.number(),
  interface: v.optional(v.string()),
  lastEpisodeAt: v.optional(v.number()),
});

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

/**
 * The caller's daemon is alive: its registry row, with the figures the digest and fleet report, and
 * the agents it saw active since its last beat, all in one call. An agent's lastHeartbeat is its
 * latest sign of life (`seenAt`, never after now, never going back).
 */
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
    // Episodes the site synced with secrets redacted (sync/source/redaction.py); older daemons leave it out.
    redacted: v.optional(v.number()),
    // The agents seen since the last beat; older daemons leave it out (and beat each agent alone).
    agents: v.optional(v.array(agentBeat)),
  },
  returns: v.null(),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const agents = args.agents ?? [];
    if (agents.length > MAX_AGENT_BEATS) {
      fail("TOO_LARGE", `${agents.length} agents in one beat; send at most ${MAX_AGENT_BEATS} a call`);
    }
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
    const { secret: _, site: __, agents: ___, ...beat } = args;
    const now = Date.now();
    const row = { ...beat, site, status: "online" as const, lastHeartbeat: now };
    if (found === null) await ctx.db.insert("siteStates", row);
    else await ctx.db.replace(found._id, row);
    for (const a of agents) await seen(ctx.db, site, a, Math.min(a.seenAt, now));
    return null;
  },
});

async function seen(
  db: DatabaseWriter,
  site: string,
  a: { agentName: string; platform: string; interface?: string; lastEpisodeAt?: number },
  at: number,
): Promise<void> {
  const found = await db
    .query("agents")
    .withIndex("by_site_agent", (q) => q.eq("site", site).eq("agentName", a.agentName))
    .unique();
  const known = [a.lastEpisodeAt, found?.lastEpisodeAt].filter((t): t is number => t !== undefined);
  const face = a.interface ?? found?.interface;
  // An agent seen earlier than the stored time (an old episode arriving late) moves nothing.
  const later = found === null || at > found.lastHeartbeat;
  const row = {
    agentName: a.agentName,
    site,
    platform: a.platform,
    status: later ? ("online" as const) : found.status,
    lastHeartbeat: later ? at : found.lastHeartbeat,
    ...(face === undefined ? {} : { interface: face }),
    ...(known.length === 0 ? {} : { lastEpisodeAt: Math.max(...known) }),
  };
  if (found === null) await db.insert("agents", row);
  else await db.patch(found._id, row);
}

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
 * Sweep mark-stale-agents: online agents and sites silent for `staleAfterMs` (the deployment's
 * MEMSYNC_JOBS__STALE_AFTER, lib/settings.ts) go offline. `now` and `staleAfterMs` let an admin (or
 * a test) sweep as of another time or rule; the cron leaves them out.
 */
export const markStale = internalMutation({
  args: { now: v.optional(v.number()), staleAfterMs: v.optional(v.number()) },
  returns: v.object({
    marked: v.number(),
    agents: v.array(v.object({ site: v.string(), agentName: v.string() })),
    sites: v.array(v.string()),
  }),
  handler: async (ctx, args) => {
    const now = args.now ?? Date.now();
    const staleAfterMs = args.staleAfterMs ?? deploymentStaleAfterMs();
    const cutoff = now - staleAfterMs;
    const agents = (
      await ctx.db
        .query("agents")
        .withIndex("by_status", (q) => q.eq("status", "online").lt("lastHeartbeat", cutoff))
        .collect()
    ).filter((a) => liveness(a.lastHeartbeat, now, staleAfterMs) === "offline");
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

/**
 * Agents of every site with no sign of life for `retentionMs` leave the registry, at most `limit`
 * a call (the cron calls again while a call fills its limit). `now` and `retentionMs` let an admin
 * (or a test) prune as of another time or rule; the cron passes the deployment's retention.
 */
export const pruneAgents = internalMutation({
  args: { now: v.optional(v.number()), retentionMs: v.optional(v.number()), limit: v.optional(v.number()) },
  returns: v.object({ pruned: v.array(v.object({ site: v.string(), agentName: v.string() })) }),
  handler: async (ctx, args) => {
    const cutoff = (args.now ?? Date.now()) - (args.retentionMs ?? agentRetentionMs());
    const limit = args.limit ?? PRUNE_BATCH;
    const pruned: { site: string; agentName: string }[] = [];
    for (const status of ["offline", "online"] as const) {
      const old = await ctx.db
        .query("agents")
        .withIndex("by_status", (q) => q.eq("status", status).lt("lastHeartbeat", cutoff))
        .take(limit - pruned.length);
      for (const a of old) {
        await ctx.db.delete(a._id);
        pruned.push({ site: a.site, agentName: a.agentName });
      }
      if (pruned.length >= limit) break;
    }
    return { pruned };
  },
});
