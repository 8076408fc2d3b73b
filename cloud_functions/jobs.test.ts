import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { RUNS_KEPT_MS } from "./jobs";
import { backend, errorCode, errorMessage, registerSite, type Backend } from "./test.setup";

const NOW = 1_770_000_000_000;
const LEASE = 60_000;
let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };
const slot = { job: "daily-digest", slot: "2026-11-21T06:00:00Z" };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});
afterEach(() => vi.useRealTimers());

const claim = (auth: typeof laptop, leaseMs = LEASE, which = slot) =>
  t.mutation(api.jobs.claimJob, { ...auth, ...which, leaseMs });
const finish = (auth: typeof laptop, outcome: "ok" | "failed" = "ok", summary = "done") =>
  t.mutation(api.jobs.finishJob, { ...auth, ...slot, outcome, summary });
const runs = (job?: string) => t.query(api.jobs.runs, { ...laptop, job });

describe("claimJob", () => {
  test("take, keep, skip; the holder's run is recorded as running", async () => {
    expect(await claim(laptop)).toEqual({ claim: "take", holder: "laptop", expiresAt: NOW + LEASE });
    expect(await claim(vm)).toEqual({ claim: "skip", holder: "laptop", expiresAt: NOW + LEASE });
    vi.setSystemTime(NOW + 1_000);
    expect(await claim(laptop)).toEqual({ claim: "keep", holder: "laptop", expiresAt: NOW + 1_000 + LEASE });
    // A retry restarts its run rather than adding one.
    expect(await runs()).toEqual([
      { ...slot, site: "laptop", startedAt: NOW + 1_000, endedAt: null, outcome: "running", summary: "" },
    ]);
  });

  test("an expired holder is taken over once; its run becomes abandoned", async () => {
    await claim(laptop);
    vi.setSystemTime(NOW + LEASE);
    expect(await claim(vm)).toEqual({ claim: "take-over", holder: "vm", expiresAt: NOW + 2 * LEASE });
    expect(await claim(laptop)).toMatchObject({ claim: "skip", holder: "vm" });
    expect(await runs()).toEqual([
      { ...slot, site: "vm", startedAt: NOW + LEASE, endedAt: null, outcome: "running", summary: "" },
      { ...slot, site: "laptop", startedAt: NOW, endedAt: NOW + LEASE, outcome: "abandoned", summary: "" },
    ]);
  });

  test("a finished slot is never run again, whatever its outcome, by anyone", async () => {
    await claim(laptop);
    vi.setSystemTime(NOW + 5_000);
    expect(await finish(laptop, "failed", "Boom: no")).toBeNull();
    for (const auth of [laptop, vm]) expect(await claim(auth)).toMatchObject({ claim: "skip" });
    vi.setSystemTime(NOW + 10 * LEASE);
    expect(await claim(vm)).toMatchObject({ claim: "skip" });
    expect(await runs()).toEqual([
      { ...slot, site: "laptop", startedAt: NOW, endedAt: NOW + 5_000, outcome: "failed", summary: "Boom: no" },
    ]);
  });

  test("a holder taken over that finishes anyway records its outcome; the slot is done", async () => {
    await claim(laptop);
    vi.setSystemTime(NOW + LEASE);
    await claim(vm);
    await finish(laptop, "ok", "late but done");
    expect((await runs()).map((r) => [r.site, r.outcome, r.summary])).toEqual([
      ["vm", "running", ""],
      ["laptop", "ok", "late but done"],
    ]);
    await finish(vm);
    expect(await claim(vm)).toMatchObject({ claim: "skip" });
  });

  test("sites racing for one slot: one takes it, the others skip", async () => {
    const answers = await Promise.all([laptop, vm, laptop, vm].map((auth) => claim(auth)));
    const taken = answers.filter((a) => a.claim === "take");
    expect(taken).toHaveLength(1);
    expect(answers.every((a) => a.holder === taken[0].holder)).toBe(true);
    expect(await t.run((ctx) => ctx.db.query("jobLeases").collect())).toHaveLength(1);
    expect((await runs()).map((r) => r.site)).toEqual([taken[0].holder]);
  });

  test("a negative lease is INVALID; a missing slot fails the validator", async () => {
    expect(await errorCode(claim(laptop, -1))).toBe("INVALID");
    const missing = { ...laptop, job: "j", leaseMs: 1 } as never;
    expect(await errorMessage(t.mutation(api.jobs.claimJob, missing))).toMatch(/Missing required field `slot`/);
  });
});

describe("runs", () => {
  test("every site's runs and the crons', newest first, by job, with a limit", async () => {
    await t.mutation(api.jobs.recordRun, {
      ...vm,
      job: "qdrant-episode-sync",
      slot: "s1",
      outcome: "ok",
      summary: "caught up",
      startedAt: NOW - 10_000,
      endedAt: NOW - 9_000,
    });
    await claim(laptop);
    const cron = await t.mutation(internal.jobs.startRun, { job: "sync-health", slot: "s2", startedAt: NOW + 1 });
    await t.mutation(internal.jobs.endRun, { runId: cron, outcome: "ok", summary: "no site changed state" });
    expect((await runs()).map((r) => [r.job, r.site, r.outcome])).toEqual([
      ["sync-health", "convex", "ok"],
      ["daily-digest", "laptop", "running"],
      ["qdrant-episode-sync", "vm", "ok"],
    ]);
    expect((await runs("qdrant-episode-sync")).map((r) => r.summary)).toEqual(["caught up"]);
    expect(await t.query(api.jobs.runs, { ...vm, limit: 1 })).toHaveLength(1);
    expect(await errorCode(t.query(api.jobs.runs, { ...vm, limit: 501 }))).toBe("INVALID");
  });

  test("runs older than two weeks are forgotten as crons finish, running ones never", async () => {
    const old = NOW - RUNS_KEPT_MS - 1;
    await t.mutation(api.jobs.recordRun, {
      ...vm,
      job: "qdrant-episode-sync",
      slot: "old",
      outcome: "ok",
      summary: "long ago",
      startedAt: old,
      endedAt: old,
    });
    await t.mutation(internal.jobs.startRun, { job: "alerts", slot: "stuck", startedAt: old });
    const cron = await t.mutation(internal.jobs.startRun, { job: "sync-health", slot: "new", startedAt: NOW });
    await t.mutation(internal.jobs.endRun, { runId: cron, outcome: "ok", summary: "fine" });
    expect((await runs()).map((r) => r.slot).sort()).toEqual(["new", "stuck"]);
  });

  test("a cron run left running (its action died) is abandoned by the next", async () => {
    await t.mutation(internal.jobs.startRun, { job: "sync-health", slot: "s1", startedAt: NOW });
    await t.mutation(internal.jobs.startRun, { job: "sync-health", slot: "s2", startedAt: NOW + 1 });
    expect((await runs()).map((r) => [r.slot, r.outcome, r.endedAt])).toEqual([
      ["s2", "running", null],
      ["s1", "abandoned", NOW + 1],
    ]);
  });
});
