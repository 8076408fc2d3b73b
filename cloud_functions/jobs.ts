import { v } from "convex/values";
import type { Doc, Id } from "./_generated/dataModel";
import { internalMutation, mutation, query, type MutationCtx, type QueryCtx } from "./_generated/server";
import { authenticate, siteArgs } from "./lib/auth";
import { fail } from "./lib/errors";
import { endedOutcome, isCount, jobOutcome, nullable } from "./lib/validators";

/** Who ran a job when a Convex cron ran it (sync/backbone/base.py's CONVEX_SITE). */
export const CONVEX_SITE = "convex";
const MAX_RUNS = 500;

export type Lease = { holder: string; expiresAt: number; done: boolean };
export type Claim = "take" | "keep" | "take-over" | "skip";

/**
 * May `site` run the slot whose lease is `current`? The same rule as sync/policy/leases.py's `decide`,
 * which the embedded hub applies: both backbones must agree (contracts/job_leases.json). A lease ends
 * when its holder finishes the slot (whatever the outcome: never run again) or when it expires (a
 * holder killed mid-run is taken over).
 */
export function decide(current: Lease | null, site: string, now: number): Claim {
  if (current === null) return "take";
  if (current.done) return "skip";
  if (current.holder === site) return "keep";
  return now >= current.expiresAt ? "take-over" : "skip";
}

const claim = v.union(v.literal("take"), v.literal("keep"), v.literal("take-over"), v.literal("skip"));
const run = v.object({
  job: v.string(),
  slot: v.string(),
  site: v.string(),
  startedAt: v.number(),
  endedAt: nullable(v.number()),
  outcome: jobOutcome,
  summary: v.string(),
});

async function findLease(db: QueryCtx["db"], job: string, slot: string): Promise<Doc<"jobLeases"> | null> {
  return await db
    .query("jobLeases")
    .withIndex("by_job_slot", (q) => q.eq("job", job).eq("slot", slot))
    .unique();
}

async function runsOf(db: QueryCtx["db"], job: string, slot: string, site: string): Promise<Doc<"jobRuns">[]> {
  return await db
    .query("jobRuns")
    .withIndex("by_job_slot_site", (q) => q.eq("job", job).eq("slot", slot).eq("site", site))
    .collect();
}

/**
 * A global job's slot, for a site's daemon (on Convex only sites' own index job with a shared
 * Qdrant needs one: the crons run the rest). Mutations are serializable, so `decide` sees the lease
 * as it is and two sites cannot both take it. TAKE, KEEP and TAKE_OVER make the caller the holder
 * until now + leaseMs and record its run as "running" (KEEP, a retried call or a restart inside the
 * slot, restarts its running run); TAKE_OVER marks the previous holder's running run "abandoned".
 */
export const claimJob = mutation({
  args: { ...siteArgs, job: v.string(), slot: v.string(), leaseMs: v.number() },
  returns: v.object({ claim, holder: v.string(), expiresAt: v.number() }),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    if (!isCount(args.leaseMs)) fail("INVALID", `leaseMs must be a whole number of ms, not ${args.leaseMs}`);
    const now = Date.now();
    const lease = await findLease(ctx.db, args.job, args.slot);
    const decided = decide(lease, site, now);
    if (decided === "skip") return { claim: decided, holder: lease!.holder, expiresAt: lease!.expiresAt };
    const expiresAt = now + args.leaseMs;
    if (lease === null) {
      await ctx.db.insert("jobLeases", { job: args.job, slot: args.slot, holder: site, expiresAt, done: false });
    } else {
      await ctx.db.patch(lease._id, { holder: site, expiresAt, done: false });
    }
    if (decided === "take-over") {
      for (const previous of await runsOf(ctx.db, args.job, args.slot, lease!.holder)) {
        if (previous.outcome === "running") await ctx.db.patch(previous._id, { outcome: "abandoned", endedAt: now });
      }
    }
    const running = (await runsOf(ctx.db, args.job, args.slot, site)).filter((r) => r.outcome === "running");
    if (running.length > 0) {
      for (const mine of running) await ctx.db.patch(mine._id, { startedAt: now });
    } else {
      await ctx.db.insert("jobRuns", {
        job: args.job,
        slot: args.slot,
        site,
        startedAt: now,
        endedAt: null,
        outcome: "running",
        summary: "",
      });
    }
    return { claim: decided, holder: site, expiresAt };
  },
});

/**
 * The slot is done, whoever holds it (a slow holder that was taken over and finished anyway did the
 * work too; the bodies are idempotent), and the caller's latest run of it ends: running, or
 * abandoned by a take-over while it was still working.
 */
export const finishJob = mutation({
  args: { ...siteArgs, job: v.string(), slot: v.string(), outcome: endedOutcome, summary: v.string() },
  returns: v.null(),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    const now = Date.now();
    const lease = await findLease(ctx.db, args.job, args.slot);
    if (lease === null) {
      await ctx.db.insert("jobLeases", { job: args.job, slot: args.slot, holder: site, expiresAt: now, done: true });
    } else {
      await ctx.db.patch(lease._id, { done: true });
    }
    const open = (await runsOf(ctx.db, args.job, args.slot, site)).filter(
      (r) => r.outcome === "running" || r.outcome === "abandoned",
    );
    const latest = open.length === 0 ? undefined : open[open.length - 1];
    if (latest === undefined) {
      await ctx.db.insert("jobRuns", { ...runOf(args, site), startedAt: now, endedAt: now });
    } else {
      await ctx.db.patch(latest._id, { endedAt: now, outcome: args.outcome, summary: args.summary });
    }
    return null;
  },
});

function runOf(args: { job: string; slot: string; outcome: "ok" | "failed"; summary: string }, site: string) {
  return { job: args.job, slot: args.slot, site, outcome: args.outcome, summary: args.summary };
}

/** A per-site job's run (no lease), as the caller's. */
export const recordRun = mutation({
  args: {
    ...siteArgs,
    job: v.string(),
    slot: v.string(),
    outcome: endedOutcome,
    summary: v.string(),
    startedAt: v.number(),
    endedAt: v.number(),
  },
  returns: v.null(),
  handler: async (ctx, args) => {
    const site = await authenticate(ctx, args);
    await ctx.db.insert("jobRuns", { ...runOf(args, site), startedAt: args.startedAt, endedAt: args.endedAt });
    return null;
  },
});

/** Every site's runs (and the crons'), of one job or all, newest first: any site may read them. */
export const runs = query({
  args: { ...siteArgs, job: v.optional(v.string()), limit: v.optional(v.number()) },
  returns: v.array(run),
  handler: async (ctx, args) => {
    await authenticate(ctx, args);
    const limit = args.limit ?? 50;
    if (!isCount(limit) || limit > MAX_RUNS) fail("INVALID", `limit must be a whole number from 0 to ${MAX_RUNS}`);
    const job = args.job;
    const found =
      job === undefined
        ? await ctx.db.query("jobRuns").withIndex("by_started").order("desc").take(limit)
        : await ctx.db
            .query("jobRuns")
            .withIndex("by_job_started", (q) => q.eq("job", job))
            .order("desc")
            .take(limit);
    return found.map(({ job, slot, site, startedAt, endedAt, outcome, summary }) => ({
      job,
      slot,
      site,
      startedAt,
      endedAt,
      outcome,
      summary,
    }));
  },
});

/**
 * A cron's run begins (lib/cronRun.ts): recorded as "convex"'s. A run of the same job still
 * "running" was cut off (an action runs at most once, and may die with its process): abandoned.
 */
export const startRun = internalMutation({
  args: { job: v.string(), slot: v.string(), startedAt: v.number() },
  returns: v.id("jobRuns"),
  handler: async (ctx, args): Promise<Id<"jobRuns">> => {
    const stale = await ctx.db
      .query("jobRuns")
      .withIndex("by_outcome", (q) => q.eq("outcome", "running").eq("site", CONVEX_SITE).eq("job", args.job))
      .collect();
    for (const cut of stale) await ctx.db.patch(cut._id, { outcome: "abandoned", endedAt: args.startedAt });
    return await ctx.db.insert("jobRuns", {
      ...args,
      site: CONVEX_SITE,
      endedAt: null,
      outcome: "running",
      summary: "",
    });
  },
});

/** A cron's run ends, with its outcome and one-line summary. */
export const endRun = internalMutation({
  args: { runId: v.id("jobRuns"), outcome: endedOutcome, summary: v.string() },
  returns: v.null(),
  handler: async (ctx: MutationCtx, args): Promise<null> => {
    const now = Date.now();
    await ctx.db.patch(args.runId, { outcome: args.outcome, summary: args.summary, endedAt: now });
    await pruneRuns(ctx, now);
    return null;
  },
});

/** How long runs are kept: the alerts cron alone runs 1,440 times a day. */
export const RUNS_KEPT_MS = 14 * 24 * 60 * 60 * 1000;

/**
 * Forget finished runs older than RUNS_KEPT_MS, a bounded batch per call (every cron run calls it,
 * so the table stays about two weeks long), as the embedded hub does (sync/backbone/hub/fleet/jobs.py).
 */
async function pruneRuns(ctx: MutationCtx, now: number): Promise<void> {
  const old = await ctx.db
    .query("jobRuns")
    .withIndex("by_started", (q) => q.lt("startedAt", now - RUNS_KEPT_MS))
    .take(50);
  for (const run of old) if (run.outcome !== "running") await ctx.db.delete(run._id);
}
