import { cronJobs } from "convex/server";
import { internal } from "./_generated/api";

export const ARCHIVE_AFTER_MS = 90 * 24 * 60 * 60 * 1000;

const crons = cronJobs();

crons.interval("mark-stale-agents", { minutes: 5 }, internal.agents.markStale, {});
crons.interval("expire-pending-approvals", { minutes: 15 }, internal.approvals.expirePending, {});
crons.interval("sync-health-alert", { minutes: 30 }, internal.health.syncHealthAlert, {});
// Database work only: count what waits for a vector. Embedding is the daemon's job.
crons.interval("qdrant-episode-sync", { minutes: 5 }, internal.episodes.vectorBacklog);
crons.daily("daily-digest", { hourUTC: 6, minuteUTC: 0 }, internal.digest.daily);
crons.weekly(
  "cleanup-old-episodes",
  { dayOfWeek: "sunday", hourUTC: 3, minuteUTC: 0 },
  internal.episodes.archiveOld,
  { olderThanMs: ARCHIVE_AFTER_MS, limit: 1000 },
);

export default crons;
