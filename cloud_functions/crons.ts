import { cronJobs } from "convex/server";
import { internal } from "./_generated/api";

export { ARCHIVE_AFTER_MS } from "./lib/settings";

/**
 * The seven periodic jobs (scheduled.ts: each runs its sweep and records the run in jobRuns). The
 * schedules are scheduled.ts's SCHEDULES; the cron names are the deployment's history, kept as they
 * were ("sync-health-alert" runs the job the daemons call sync-health).
 */
const crons = cronJobs();

crons.interval("mark-stale-agents", { minutes: 5 }, internal.scheduled.markStaleAgents, {});
crons.interval("expire-pending-approvals", { minutes: 15 }, internal.scheduled.expirePendingApprovals, {});
crons.interval("sync-health-alert", { minutes: 30 }, internal.scheduled.syncHealth, {});
crons.interval("qdrant-episode-sync", { minutes: 5 }, internal.scheduled.qdrantEpisodeSync, {});
crons.daily("daily-digest", { hourUTC: 6, minuteUTC: 0 }, internal.scheduled.dailyDigest, {});
crons.weekly(
  "cleanup-old-episodes",
  { dayOfWeek: "sunday", hourUTC: 3, minuteUTC: 0 },
  internal.scheduled.cleanupOldEpisodes,
  {},
);
crons.interval("alerts", { minutes: 1 }, internal.scheduled.alerts, {});

export default crons;
