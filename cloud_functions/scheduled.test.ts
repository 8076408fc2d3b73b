/** The crons' bodies: each runs its sweep and records the run in jobRuns as "convex"'s. */
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import type { ActionCtx } from "./_generated/server";
import { cronRun, slotOf } from "./lib/cronRun";
import { ARCHIVE_AFTER_MS } from "./lib/settings";
import { SCHEDULES } from "./scheduled";
import { backend, registerSite, type Backend } from "./test.setup";
import { item } from "./test.fixtures";

const NOW = Date.parse("2026-11-22T10:07:30.250Z"); // a Sunday
let t: Backend;
let laptop: { site: string; secret: string };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
  t = backend();
  laptop = await registerSite(t, "laptop");
});
afterEach(() => vi.useRealTimers());

const runs = () => t.query(api.jobs.runs, laptop);

describe("slotOf: the slot as daemon/schedule/policy/plan.py's slot_key writes it", () => {
  test.each([
    [SCHEDULES["mark-stale-agents"], "2026-11-22T10:05:00Z"],
    [SCHEDULES["sync-health"], "2026-11-22T10:00:00Z"],
    [SCHEDULES["daily-digest"], "2026-11-22T06:00:00Z"],
    [SCHEDULES["cleanup-old-episodes"], "2026-11-22T03:00:00Z"],
  ])("%j", (schedule, slot) => {
    expect(slotOf(schedule, NOW)).toBe(slot);
  });

  test("before the day's or the week's fire, the previous one", () => {
    const early = Date.parse("2026-11-22T02:59:59Z");
    expect(slotOf(SCHEDULES["daily-digest"], early)).toBe("2026-11-21T06:00:00Z");
    expect(slotOf(SCHEDULES["cleanup-old-episodes"], early)).toBe("2026-11-15T03:00:00Z");
    expect(slotOf({ type: "weekly", dayOfWeek: 4, hourUTC: 0, minuteUTC: 0 }, 0)).toBe("1970-01-01T00:00:00Z");
  });
});

describe("each cron records its run", () => {
  test("mark-stale-agents: the sweep ran, and the run says so", async () => {
    await t.mutation(api.agents.heartbeat, { ...laptop, agentName: "old", platform: "p" });
    vi.setSystemTime(NOW + 4 * 60_000);
    expect(await t.action(internal.scheduled.markStaleAgents, {})).toBe("1 agent or site went offline");
    expect((await t.query(api.agents.list, laptop))[0].status).toBe("offline");
    expect(await runs()).toEqual([
      {
        job: "mark-stale-agents",
        slot: "2026-11-22T10:10:00Z",
        site: "convex",
        startedAt: NOW + 4 * 60_000,
        endedAt: NOW + 4 * 60_000,
        outcome: "ok",
        summary: "1 agent or site went offline",
      },
    ]);
  });

  test("every job, under the daemon's job names", async () => {
    const old = NOW - ARCHIVE_AFTER_MS - 1;
    await t.mutation(api.episodes.bulkSyncEpisodes, {
      ...laptop,
      cursor: 2,
      episodes: [item("1", { fields: { ts: old, createdAt: old } }), item("2", { fields: { ts: NOW, createdAt: NOW } })],
    });
    for (const fn of [
      internal.scheduled.expirePendingApprovals,
      internal.scheduled.syncHealth,
      internal.scheduled.qdrantEpisodeSync,
      internal.scheduled.dailyDigest,
      internal.scheduled.cleanupOldEpisodes,
      internal.scheduled.alerts,
    ]) {
      await t.action(fn, {});
    }
    const recorded = (await runs()).map((r) => [r.job, r.slot, r.outcome, r.summary]);
    expect(recorded.sort()).toEqual([
      ["alerts", "2026-11-22T10:07:00Z", "ok", "1 signal observed, nothing to say"],
      ["cleanup-old-episodes", "2026-11-22T03:00:00Z", "ok", "1 episode older than 90 days archived, 1 file written"],
      ["daily-digest", "2026-11-22T06:00:00Z", "ok", "digest for 2026-11-21: 0 episodes from 1 site"],
      ["expire-pending-approvals", "2026-11-22T10:00:00Z", "ok", "0 pending approvals expired"],
      ["qdrant-episode-sync", "2026-11-22T10:05:00Z", "ok", "2 episodes wait for a vector"],
      ["sync-health", "2026-11-22T10:00:00Z", "ok", "no site changed state"],
    ]);
    expect(await t.query(api.digest.get, { ...laptop, day: "2026-11-21" })).toMatchObject({ day: "2026-11-21" });
  });

  test("a failing body is recorded as failed, with its error on one line, and rethrown", async () => {
    // The wrapper with a real backend behind its mutations, and a body that fails.
    const mutation = t.mutation as (ref: unknown, args: unknown) => Promise<unknown>;
    const ctx = { runMutation: (ref: unknown, args: unknown) => mutation(ref, args) } as unknown as ActionCtx;
    const failing = cronRun(ctx, "sync-health", SCHEDULES["sync-health"], async () => {
      throw new TypeError("no\nsuch thing");
    });
    await expect(failing).rejects.toThrow("such thing");
    expect(await runs()).toMatchObject([
      { job: "sync-health", site: "convex", outcome: "failed", summary: "TypeError: no such thing", endedAt: NOW },
    ]);
  });
});

