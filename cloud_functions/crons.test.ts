import { expect, test } from "vitest";
import crons from "./crons";
import { SCHEDULES } from "./scheduled";

test("crons.ts registers exactly the seven jobs, with their schedules, each through its recorded run", () => {
  const jobs = Object.fromEntries(
    Object.entries(crons.crons).map(([name, job]) => [name, { fn: job.name, schedule: job.schedule, args: job.args }]),
  );
  expect(jobs).toEqual({
    "mark-stale-agents": { fn: "scheduled:markStaleAgents", schedule: { type: "interval", minutes: 5 }, args: [{}] },
    "expire-pending-approvals": { fn: "scheduled:expirePendingApprovals", schedule: { type: "interval", minutes: 15 }, args: [{}] },
    "sync-health-alert": { fn: "scheduled:syncHealth", schedule: { type: "interval", minutes: 30 }, args: [{}] },
    "qdrant-episode-sync": { fn: "scheduled:qdrantEpisodeSync", schedule: { type: "interval", minutes: 5 }, args: [{}] },
    "daily-digest": { fn: "scheduled:dailyDigest", schedule: { type: "daily", hourUTC: 6, minuteUTC: 0 }, args: [{}] },
    "cleanup-old-episodes": {
      fn: "scheduled:cleanupOldEpisodes",
      schedule: { type: "weekly", dayOfWeek: "sunday", hourUTC: 3, minuteUTC: 0 },
      args: [{}],
    },
    alerts: { fn: "scheduled:alerts", schedule: { type: "interval", minutes: 1 }, args: [{}] },
  });
});

test("the slots' schedules are the crons' schedules", () => {
  const registered = Object.values(crons.crons).map((job) => job.schedule);
  const days = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
  const declared = Object.values(SCHEDULES).map((s) =>
    s.type === "weekly" ? { ...s, dayOfWeek: days[s.dayOfWeek] } : s,
  );
  expect(registered).toEqual(declared);
});
