import { expect, test } from "vitest";
import crons from "./crons";

test("crons.ts registers exactly the six jobs, with their schedules and functions", () => {
  const jobs = Object.fromEntries(
    Object.entries(crons.crons).map(([name, job]) => [name, { fn: job.name, schedule: job.schedule, args: job.args }]),
  );
  expect(jobs).toEqual({
    "mark-stale-agents": { fn: "agents:markStale", schedule: { type: "interval", minutes: 5 }, args: [{}] },
    "expire-pending-approvals": { fn: "approvals:expirePending", schedule: { type: "interval", minutes: 15 }, args: [{}] },
    "sync-health-alert": { fn: "health:syncHealthAlert", schedule: { type: "interval", minutes: 30 }, args: [{}] },
    "qdrant-episode-sync": { fn: "episodes:vectorBacklog", schedule: { type: "interval", minutes: 5 }, args: [{}] },
    "daily-digest": { fn: "digest:daily", schedule: { type: "daily", hourUTC: 6, minuteUTC: 0 }, args: [{}] },
    "cleanup-old-episodes": {
      fn: "episodes:archiveOld",
      schedule: { type: "weekly", dayOfWeek: "sunday", hourUTC: 3, minuteUTC: 0 },
      args: [{ olderThanMs: 90 * 24 * 60 * 60 * 1000, limit: 1000 }],
    },
  });
});
