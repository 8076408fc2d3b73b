/**
 * The seven periodic jobs as Convex runs them: each cron (crons.ts) calls one of these actions, which
 * runs the job's sweep with its default parameters and records the run in jobRuns as "convex"'s
 * (lib/cronRun.ts). The job names are the daemon's (daemon/schedule/policy/plan.py), so `memsync jobs`
 * shows a cron's last run beside the schedule; the sweeps themselves are internal functions that
 * an admin may also run by hand (`npx convex run agents:markStale '{}'`).
 */
import { v } from "convex/values";
import { internal } from "./_generated/api";
import { internalAction } from "./_generated/server";
import { archiveRun, ORPHAN_GRACE_MS } from "./lib/archiveWrite";
import { cronRun, type Schedule } from "./lib/cronRun";
import { plural } from "./lib/alertSignals";
import { ALERTS_OFF, alertsSummary, archiveSummary, digestSummary, expiredSummary, healthSummary, staleSummary } from "./lib/runSummary";
import { agentRetentionMs, archiveAfterDays } from "./lib/settings";

// One run's cap on pruning batches (agents:pruneAgents); what is left goes at the next run.
export const PRUNE_MAX_BATCHES = 20;
// One run's cap on episodes archived (in batches of lib/archiveWrite.ts's ARCHIVE_BATCH), well
// inside an action's time limit; what is left waits for next week's run (contracts/job_bodies.json).
export const ARCHIVE_RUN_LIMIT = 200_000;
const DAY_MS = 24 * 60 * 60 * 1000;

export const SCHEDULES = {
  "mark-stale-agents": { type: "interval", minutes: 5 },
  "expire-pending-approvals": { type: "interval", minutes: 15 },
  "sync-health": { type: "interval", minutes: 30 },
  "qdrant-episode-sync": { type: "interval", minutes: 5 },
  "daily-digest": { type: "daily", hourUTC: 6, minuteUTC: 0 },
  "cleanup-old-episodes": { type: "weekly", dayOfWeek: 0, hourUTC: 3, minuteUTC: 0 },
  alerts: { type: "interval", minutes: 1 },
} as const satisfies Record<string, Schedule>;

const summary = v.string();

export const markStaleAgents = internalAction({
  args: {},
  returns: summary,
  handler: (ctx): Promise<string> =>
    cronRun(ctx, "mark-stale-agents", SCHEDULES["mark-stale-agents"], async () => {
      const { marked } = await ctx.runMutation(internal.agents.markStale, {});
      const retentionMs = agentRetentionMs();
      let pruned = 0;
      for (let batch = 0; batch < PRUNE_MAX_BATCHES; batch++) {
        const gone = (await ctx.runMutation(internal.agents.pruneAgents, { retentionMs })).pruned.length;
        pruned += gone;
        if (gone === 0) break;
      }
      return staleSummary(marked, pruned);
    }),
});

export const expirePendingApprovals = internalAction({
  args: {},
  returns: summary,
  handler: (ctx): Promise<string> =>
    cronRun(ctx, "expire-pending-approvals", SCHEDULES["expire-pending-approvals"], async () => {
      const { expired } = await ctx.runMutation(internal.approvals.expirePending, {});
      return expiredSummary(expired.length);
    }),
});

export const syncHealth = internalAction({
  args: {},
  returns: summary,
  handler: (ctx): Promise<string> =>
    cronRun(ctx, "sync-health", SCHEDULES["sync-health"], async () => {
      const changed = await ctx.runMutation(internal.health.syncHealthAlert, {});
      return healthSummary(changed);
    }),
});

export const qdrantEpisodeSync = internalAction({
  args: {},
  returns: summary,
  handler: (ctx): Promise<string> =>
    cronRun(ctx, "qdrant-episode-sync", SCHEDULES["qdrant-episode-sync"], async () => {
      // Database work only: count what waits for a vector. Embedding is the daemons' job.
      const { backlog, capped } = await ctx.runMutation(internal.episodes.vectorBacklog, {});
      return capped ? `${backlog}+ episodes wait for a vector` : `${plural(backlog, "episode")} ${backlog === 1 ? "waits" : "wait"} for a vector`;
    }),
});

export const dailyDigest = internalAction({
  args: {},
  returns: summary,
  handler: (ctx): Promise<string> =>
    cronRun(ctx, "daily-digest", SCHEDULES["daily-digest"], async (now) => {
      // The 06:00 digest covers the day that ended: yesterday, midnight to midnight UTC.
      const day = new Date(now - DAY_MS).toISOString().slice(0, 10);
      const digest: { episodes: number; sites: unknown[] } = await ctx.runMutation(internal.digest.build, { day, now });
      const { queued } = await ctx.runMutation(internal.digest.announce, { day });
      return digestSummary(day, digest.episodes, digest.sites.length, queued);
    }),
});

export const cleanupOldEpisodes = internalAction({
  args: {},
  returns: summary,
  handler: (ctx): Promise<string> =>
    cronRun(ctx, "cleanup-old-episodes", SCHEDULES["cleanup-old-episodes"], async (now) => {
      // One cutoff for the whole run; each week's file is written, verified and committed in turn
      // (lib/archiveWrite.ts), and the run recorded for archive:lastRun.
      const days = archiveAfterDays();
      const cutoff = now - days * 86_400_000;
      const run = await archiveRun(ctx, cutoff, ARCHIVE_RUN_LIMIT, ORPHAN_GRACE_MS);
      if (run.failures.length > 0 && run.archived === 0 && run.files === 0) {
        throw new Error(`archiving failed; ${plural(run.failures.length, "week")} failed: ${run.failures.join("; ")}`);
      }
      return archiveSummary(run.archived, days, run.files, run.failures);
    }),
});

export const alerts = internalAction({
  args: {},
  returns: summary,
  handler: (ctx): Promise<string> =>
    cronRun(ctx, "alerts", SCHEDULES.alerts, async () => {
      const swept = await ctx.runMutation(internal.alerts.sweep, {});
      await ctx.runMutation(internal.telegram.housekeep, {});
      return swept === null ? ALERTS_OFF : alertsSummary(swept.observed, swept.notices.map((n) => [n.kind, n.subject] as const));
    }),
});
