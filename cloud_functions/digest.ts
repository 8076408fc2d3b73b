import { v } from "convex/values";
import type { Doc } from "./_generated/dataModel";
import { internalMutation, mutation, type MutationCtx, query, type QueryCtx } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { type DigestDocument, digestMessage } from "./lib/digestMessage";
import { isMemsync, type MemsyncEpisode } from "./lib/episodeView";
import { fail } from "./lib/errors";
import { enqueueRouted } from "./lib/outbox";
import { digestKey, digestSentKey } from "./lib/outboxKeys";

const DAY_MS = 24 * 60 * 60 * 1000;
export const TOP = 5;
const UNKNOWN_AGENT = "unknown"; // episodes that name no agent
// Enough for a busy day across sites while staying inside one transaction's read limits; past it
// the digest says `truncated`.
export const MAX_EPISODES = 5000;

/** [since, until) in ms of the UTC day "YYYY-MM-DD"; INVALID for anything else. */
export function dayBounds(day: string): { since: number; until: number } {
  const since = /^\d{4}-\d{2}-\d{2}$/.test(day) ? Date.parse(`${day}T00:00:00Z`) : NaN;
  if (Number.isNaN(since) || new Date(since).toISOString().slice(0, 10) !== day) {
    fail("INVALID", `a digest's day is YYYY-MM-DD, not ${JSON.stringify(day)}`);
  }
  return { since, until: since + DAY_MS };
}

type DayEpisode = {
  site: string;
  sourceId: string;
  createdAt: number;
  agent: string;
  task: string | null; // null: archived, its text is in the archive file
  tags: string[];
  success: boolean;
  reward: number | null;
};

export type SiteFacts = {
  health: "up" | "down" | null;
  lastSyncAt: number | null;
  quarantined: number;
  conflicts: number;
  redacted: number;
  pending: number;
  expired: number;
};

const noFacts = (): SiteFacts => ({
  health: null,
  lastSyncAt: null,
  quarantined: 0,
  conflicts: 0,
  redacted: 0,
  pending: 0,
  expired: 0,
});

const byText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

class Tally {
  episodes = 0;
  successes = 0;
  rewardSum = 0;
  rewarded = 0;
  tasks = new Map<string, number>();
  tags = new Map<string, number>();

  add(episode: DayEpisode): void {
    this.episodes += 1;
    if (episode.success) this.successes += 1;
    if (episode.reward !== null) {
      this.rewardSum += episode.reward;
      this.rewarded += 1;
    }
    if (episode.task !== null) this.tasks.set(episode.task, (this.tasks.get(episode.task) ?? 0) + 1);
    for (const tag of new Set(episode.tags)) this.tags.set(tag, (this.tags.get(tag) ?? 0) + 1); // once an episode
  }

  figures() {
    return {
      episodes: this.episodes,
      successRate: this.episodes === 0 ? null : this.successes / this.episodes,
      meanReward: this.rewarded === 0 ? null : this.rewardSum / this.rewarded,
      topTasks: top(this.tasks),
      topTags: top(this.tags),
    };
  }
}

/** The most frequent first; ties by name, so both backbones list the same five. */
function top(counts: Map<string, number>): string[] {
  return [...counts.entries()]
    .sort(([a, n], [b, m]) => m - n || byText(a, b))
    .slice(0, TOP)
    .map(([name]) => name);
}

/**
 * The digest of `day` from its episodes and every known site's facts. The same computation as
 * sync/backbone/hub/fleet/digest.py's `build`, field for field: the sums run in one order (createdAt,
 * then sourceId) so that even a mean of floats is the same number on both backbones.
 */
export function buildDigest(
  day: string,
  now: number,
  episodes: DayEpisode[],
  facts: Map<string, SiteFacts>,
  truncated: boolean,
) {
  const { since, until } = dayBounds(day);
  const ordered = [...episodes].sort((a, b) => a.createdAt - b.createdAt || byText(a.sourceId, b.sourceId));
  const sites = new Map<string, Tally>();
  const agents = new Map<string, Map<string, Tally>>();
  for (const episode of ordered) {
    if (!sites.has(episode.site)) sites.set(episode.site, new Tally());
    sites.get(episode.site)!.add(episode);
    if (!agents.has(episode.site)) agents.set(episode.site, new Map());
    const ofSite = agents.get(episode.site)!;
    if (!ofSite.has(episode.agent)) ofSite.set(episode.agent, new Tally());
    ofSite.get(episode.agent)!.add(episode);
  }
  const names = [...new Set([...sites.keys(), ...facts.keys()])].sort(byText);
  const entries = names.map((site) => {
    const fact = facts.get(site) ?? noFacts();
    return {
      site,
      ...(sites.get(site) ?? new Tally()).figures(),
      agents: [...(agents.get(site) ?? new Map<string, Tally>()).entries()]
        .sort(([a], [b]) => byText(a, b))
        .map(([agent, tally]) => ({ agent, ...tally.figures() })),
      health: fact.health,
      lastSyncAt: fact.lastSyncAt,
      quarantined: fact.quarantined,
      conflicts: fact.conflicts,
      redacted: fact.redacted,
      approvals: { pending: fact.pending, expired: fact.expired },
    };
  });
  return {
    day,
    since,
    until,
    builtAt: now,
    episodes: [...sites.values()].reduce((sum, tally) => sum + tally.episodes, 0),
    sites: entries,
    approvals: {
      pending: entries.reduce((sum, e) => sum + e.approvals.pending, 0),
      expired: entries.reduce((sum, e) => sum + e.approvals.expired, 0),
    },
    truncated,
  };
}

function dayEpisode(doc: MemsyncEpisode): DayEpisode {
  return {
    site: doc.sourceSite,
    sourceId: doc.sourceId,
    createdAt: doc.createdAt,
    agent: doc.agentName || UNKNOWN_AGENT,
    task: doc.task ?? null,
    tags: doc.tags ?? [],
    success: doc.success,
    reward: doc.reward,
  };
}

/** Every site with a heartbeat, a cursor or approvals of the day, and what the digest reports of it. */
async function siteFacts(db: QueryCtx["db"], since: number, until: number): Promise<Map<string, SiteFacts>> {
  const facts = new Map<string, SiteFacts>();
  const of = (site: string): SiteFacts => {
    if (!facts.has(site)) {
      facts.set(site, noFacts());
    }
    return facts.get(site)!;
  };
  for (const state of await db.query("siteStates").collect()) {
    Object.assign(of(state.site), {
      quarantined: state.quarantined,
      conflicts: state.conflicts,
      redacted: state.redacted ?? 0,
    });
  }
  for (const cursor of await db.query("syncCursors").collect()) of(cursor.site).lastSyncAt = cursor.lastSyncedAt;
  for (const health of await db.query("healthStates").collect()) {
    if (facts.has(health.site)) facts.get(health.site)!.health = health.state;
  }
  const pending = await db
    .query("approvals")
    .withIndex("by_status_expires", (q) => q.eq("status", "pending"))
    .collect();
  for (const approval of pending) if (approval.createdAt < until) of(approval.site).pending += 1;
  const expired = await db
    .query("approvals")
    .withIndex("by_status_resolved", (q) => q.eq("status", "expired").gte("resolvedAt", since).lt("resolvedAt", until))
    .collect();
  for (const approval of expired) of(approval.site).expired += 1;
  return facts;
}

/**
 * Sweep daily-digest: per site and per agent, the episodes created in the UTC day `day` (archived
 * or not), success rate, mean reward, top 5 tasks and tags; per site its sync health, last sync,
 * quarantined rows and conflicts (from its last heartbeat) and approvals pending and expired that
 * day. Stored, one per day (building again replaces it), and returned.
 */
export const build = internalMutation({
  args: { day: v.string(), now: v.optional(v.number()) },
  returns: v.any(),
  handler: async (ctx, args) => await buildAndStore(ctx, args.day, args.now ?? Date.now()),
});

/** What the day's dream steps that still stand did (sync/backbone/hub/fleet/digest.py's dream_of_day). */
async function dreamOfDay(ctx: MutationCtx, since: number, until: number): Promise<{ folds: number; folded: number; superseded: number }> {
  const steps = (await ctx.db.query("dreamSteps").withIndex("by_at", (q) => q.gte("at", since).lt("at", until)).collect()).filter(
    (s) => s.undoneAt === undefined,
  );
  const folds = steps.filter((s) => s.kind === "consolidates");
  return {
    folds: folds.length,
    folded: folds.reduce((n, s) => n + s.members.length, 0),
    superseded: steps.filter((s) => s.kind === "supersedes").length,
  };
}

async function buildAndStore(
  ctx: MutationCtx,
  day: string,
  now: number,
): Promise<ReturnType<typeof buildDigest> & { dream: { folds: number; folded: number; superseded: number } }> {
  const { since, until } = dayBounds(day);
  const docs: MemsyncEpisode[] = [];
  for (const archived of [false, true]) {
    docs.push(
      ...(await ctx.db
        .query("episodes")
        .withIndex("by_created", (q) => q.eq("archived", archived).gte("createdAt", since).lt("createdAt", until))
        .take(MAX_EPISODES + 1 - docs.length)).filter(isMemsync),
    );
  }
  const truncated = docs.length > MAX_EPISODES;
  const episodes = docs.slice(0, MAX_EPISODES).map(dayEpisode);
  const digest = { ...buildDigest(day, now, episodes, await siteFacts(ctx.db, since, until), truncated), dream: await dreamOfDay(ctx, since, until) };
  const found = await ctx.db
    .query("digests")
    .withIndex("by_day", (q) => q.eq("day", day))
    .unique();
  const row = { day, builtAt: now, bodyJson: JSON.stringify(digest) };
  if (found === null) await ctx.db.insert("digests", row);
  else await ctx.db.replace(found._id, row);
  return digest;
}

/**
 * A forget (episodes.ts) took away an episode created at `createdAt`: the stored digest of its day,
 * if any, is built again without it, so that its task is in no top-tasks list. `builtAt` moves.
 */
export async function rebuildStoredDigest(ctx: MutationCtx, createdAt: number): Promise<void> {
  const day = new Date(createdAt).toISOString().slice(0, 10);
  const found = await ctx.db
    .query("digests")
    .withIndex("by_day", (q) => q.eq("day", day))
    .unique();
  if (found !== null) await buildAndStore(ctx, day, Date.now());
}

/**
 * `memsync digest --date <today>`: today's digest built now, "so far" (the episodes created since
 * 00:00 UTC; each site's figures as they are now), and stored until the cron builds the whole day
 * the morning after. Only today: a past day's digest is the cron's, a future day's has not begun.
 */
export const buildToday = mutation({
  args: { ...siteArgs, day: v.string() },
  returns: v.any(),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const now = Date.now();
    const today = new Date(now).toISOString().slice(0, 10);
    dayBounds(args.day);
    if (args.day !== today) fail("INVALID", `only today's digest (${today}) is built on demand, not ${args.day}`);
    return await buildAndStore(ctx, args.day, now);
  },
});

/** The stored digest of a UTC day, or null: any site may read it. */
export const get = query({
  args: { ...siteArgs, day: v.string() },
  returns: v.any(),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    dayBounds(args.day);
    const found = await ctx.db
      .query("digests")
      .withIndex("by_day", (q) => q.eq("day", args.day))
      .unique();
    return found === null ? null : JSON.parse(found.bodyJson);
  },
});

/** Queues the stored digest `found` as one Telegram message under `key` to each chat that hears the digest; false if not queued. */
async function queueDigest(ctx: MutationCtx, found: Doc<"digests">, key: string, severity: "warning" | "critical", now: number) {
  const digest = JSON.parse(found.bodyJson) as DigestDocument;
  const text = digestMessage(digest);
  return await enqueueRouted(ctx, { kind: "send", key, text, severity }, { kind: "digest", name: null }, now);
}

/**
 * The morning's message (the daily-digest cron, after build): the stored digest of `day`, queued
 * once a day however often it is built. A warning: quiet hours hold it.
 */
export const announce = internalMutation({
  args: { day: v.string() },
  returns: v.object({ queued: v.boolean() }),
  handler: async (ctx, args) => {
    const found = await ctx.db
      .query("digests")
      .withIndex("by_day", (q) => q.eq("day", args.day))
      .unique();
    if (found === null) return { queued: false };
    return { queued: await queueDigest(ctx, found, digestKey(args.day), "warning", Date.now()) };
  },
});

/** `memsync digest --send`: the latest stored digest to Telegram now (NOT_FOUND when none is built yet). */
export const send = mutation({
  args: siteArgs,
  returns: v.object({ day: v.string(), queued: v.boolean() }),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const found = await ctx.db.query("digests").withIndex("by_day").order("desc").first();
    if (found === null) fail("NOT_FOUND", "no digest has been built yet");
    const now = Date.now();
    // Asked for by a person, now: no quiet hours.
    return { day: found.day, queued: await queueDigest(ctx, found, digestSentKey(found.day, now), "critical", now) };
  },
});
