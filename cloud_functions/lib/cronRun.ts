import { internal } from "../_generated/api";
import type { ActionCtx } from "../_generated/server";

/** When a cron fires, in the terms crons.ts registers it with (UTC). */
export type Schedule =
  | { type: "interval"; minutes: number }
  | { type: "daily"; hourUTC: number; minuteUTC: number }
  | { type: "weekly"; dayOfWeek: number; hourUTC: number; minuteUTC: number }; // dayOfWeek 0 = Sunday

const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

/**
 * The slot a run at `now` works for, written as daemon/schedule/policy/plan.py's slot_key writes it (the
 * latest scheduled fire at or before `now`, to the second, UTC), so that a cron's runs and a hub
 * daemon's runs of a job read alike. Intervals count from the epoch, as the daemon's do (Convex
 * starts its own at deploy time: rounding down finds the slot all the same).
 */
export function slotOf(schedule: Schedule, now: number): string {
  let start: number;
  if (schedule.type === "interval") {
    const every = schedule.minutes * MINUTE;
    start = now - (now % every);
  } else {
    const offset = (schedule.hourUTC * 60 + schedule.minuteUTC) * MINUTE;
    // Day 0 of the epoch was a Thursday (4): the first fire of a weekday d is on day (d - 4) mod 7.
    const first = schedule.type === "daily" ? offset : ((schedule.dayOfWeek + 3) % 7) * DAY + offset;
    const period = schedule.type === "daily" ? DAY : 7 * DAY;
    start = first + Math.floor((now - first) / period) * period;
  }
  return new Date(start).toISOString().replace(/\.\d{3}Z$/, "Z");
}

function oneLine(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return text.replace(/\s+/g, " ").slice(0, 500);
}

/**
 * Runs one cron's body and records it in jobRuns as "convex"'s run of `job` for the slot of `now`,
 * as the hub's daemons record theirs: "running" first, then "ok" with the body's one-line summary,
 * or "failed" with the error (rethrown, so that Convex's logs show the failure too). The record is
 * written by mutations of its own: a body that fails leaves no half-written run behind.
 */
export async function cronRun(
  ctx: Pick<ActionCtx, "runMutation">,
  job: string,
  schedule: Schedule,
  body: (now: number) => Promise<string>,
): Promise<string> {
  const now = Date.now();
  const runId = await ctx.runMutation(internal.jobs.startRun, { job, slot: slotOf(schedule, now), startedAt: now });
  let summary: string;
  try {
    summary = await body(now);
  } catch (error) {
    await ctx.runMutation(internal.jobs.endRun, { runId, outcome: "failed", summary: oneLine(error) });
    throw error;
  }
  await ctx.runMutation(internal.jobs.endRun, { runId, outcome: "ok", summary });
  return summary;
}
