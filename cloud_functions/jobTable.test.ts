/**
 * scheduled.ts's SCHEDULES are daemon/schedule/policy/plan.py's jobs, and lib/cronRun.ts's slotOf writes
 * a run's slot as plan.py's slot_key does: both run contracts/job_table.json
 * (tests/contracts/test_job_table.py is the Python side). crons.test.ts holds crons.ts to SCHEDULES.
 */
import { describe, expect, test } from "vitest";
import { type Schedule, slotOf } from "./lib/cronRun";
import { SCHEDULES } from "./scheduled";
import { contract } from "./test.contracts";

type Table = {
  jobs: Record<string, { scope: string; every_s: number | null; cron: string | null }>;
  slots: { job: keyof typeof SCHEDULES; now: string; slot: string }[];
};

const table = contract<Table>("job_table.json");
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/** A Convex schedule in plan.py's terms: an interval in seconds, or a crontab in UTC. */
function asPlan(schedule: Schedule): { every_s: number | null; cron: string | null } {
  if (schedule.type === "interval") return { every_s: schedule.minutes * 60, cron: null };
  const day = schedule.type === "daily" ? "*" : DAYS[schedule.dayOfWeek];
  return { every_s: null, cron: `${schedule.minuteUTC} ${schedule.hourUTC} * * ${day}` };
}

describe("the job table (contracts/job_table.json)", () => {
  test("Convex schedules the hub's jobs, in its order, each when the hub does", () => {
    // A "fleet" job (the dream cycle) is the daemons' on both backbones, under the lease: no cron.
    const ours = Object.fromEntries(Object.entries(SCHEDULES).map(([name, s]) => [name, asPlan(s)]));
    const cronJobs = Object.entries(table.jobs).filter(([, j]) => j.scope !== "fleet");
    const theirs = Object.fromEntries(cronJobs.map(([name, j]) => [name, { every_s: j.every_s, cron: j.cron }]));
    expect(ours).toEqual(theirs);
    expect(Object.keys(ours)).toEqual(Object.keys(theirs));
  });

  test.each(table.slots.filter((c) => c.job in SCHEDULES).map((c) => [`${c.job}@${c.now}`, c] as const))("the slot of %s", (_, c) => {
    expect(slotOf(SCHEDULES[c.job], Date.parse(c.now))).toBe(c.slot);
  });
});
