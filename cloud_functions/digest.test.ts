import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { dayBounds } from "./digest";
import { backend, errorCode, registerSite, type Backend } from "./test.setup";
import { item, type Fields } from "./test.fixtures";

const DAY = "2026-02-02";
const START = Date.parse(`${DAY}T00:00:00Z`);
const DAY_MS = 24 * 60 * 60 * 1000;
const NOW = START + DAY_MS + 6 * 60 * 60 * 1000; // 06:00 the next day, when the cron builds it
let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(START + 60_000);
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});
afterEach(() => vi.useRealTimers());

const at = (minute: number, fields: Partial<Fields>): Partial<Fields> => ({
  createdAt: START + minute * 60_000,
  ts: START + minute * 60_000,
  ...fields,
});

async function seed() {
  await t.mutation(api.episodes.bulkSyncEpisodes, {
    ...laptop,
    cursor: 6,
    episodes: [
      item("1", { fields: at(1, { agentName: "coder", task: "fix", tags: ["py", "bug"], success: true, reward: 1 }) }),
      item("2", { fields: at(2, { agentName: "coder", task: "fix", tags: ["py"], success: false, reward: 0 }) }),
      item("3", { fields: at(3, { agentName: "coder", task: "test", tags: ["py", "py"], success: true, reward: null }) }),
      item("4", { fields: at(4, { agentName: null, task: "plan", tags: [], success: true, reward: 0.25 }) }),
      item("5", { fields: at(-1, { agentName: "coder", task: "yesterday" }) }), // the day before
      item("6", { fields: at(24 * 60, { agentName: "coder", task: "tomorrow" }) }), // the day after
    ],
  });
  await t.mutation(api.episodes.bulkSyncEpisodes, {
    ...vm,
    cursor: 1,
    episodes: [item("1", { fields: at(5, { agentName: "planner", task: "plan", tags: ["ops"], success: false, reward: 0.5 }) })],
  });
  await t.mutation(api.agents.heartbeatSite, {
    ...laptop,
    version: "1",
    host: "h",
    pid: 1,
    lagS: 0,
    backlog: 0,
    indexState: null,
    quarantined: 3,
    conflicts: 2,
    redacted: 5,
  });
  const approval = (actionType: string) =>
    t.mutation(api.approvals.create, {
      ...laptop,
      agentName: "coder",
      actionType,
      priority: "normal",
      reviewers: [],
      expiresAt: START + 10 * DAY_MS,
    });
  await approval("send_message");
  await approval("destructive");
  await t.mutation(internal.approvals.expirePending, { now: START + 40 * 60_000 }); // destructive: 30 min
  await t.mutation(internal.health.syncHealthAlert, { now: START + 2 * 60_000 });
}

test("per site and per agent: episodes, success rate, mean reward, top tasks and tags; facts", async () => {
  await seed();
  const digest = await t.mutation(internal.digest.build, { day: DAY, now: NOW });
  expect(digest).toEqual({
    day: DAY,
    since: START,
    until: START + DAY_MS,
    builtAt: NOW,
    dream: { folds: 0, folded: 0, superseded: 0 }, // no dream ran that day
    episodes: 5,
    sites: [
      {
        site: "laptop",
        episodes: 4,
        successRate: 0.75,
        meanReward: 1.25 / 3,
        topTasks: ["fix", "plan", "test"],
        topTags: ["py", "bug"],
        agents: [
          { agent: "coder", episodes: 3, successRate: 2 / 3, meanReward: 0.5, topTasks: ["fix", "test"], topTags: ["py", "bug"] },
          { agent: "unknown", episodes: 1, successRate: 1, meanReward: 0.25, topTasks: ["plan"], topTags: [] },
        ],
        health: "up",
        lastSyncAt: START + 60_000,
        quarantined: 3,
        conflicts: 2,
        redacted: 5,
        approvals: { pending: 1, expired: 1 },
      },
      {
        site: "vm",
        episodes: 1,
        successRate: 0,
        meanReward: 0.5,
        topTasks: ["plan"],
        topTags: ["ops"],
        agents: [{ agent: "planner", episodes: 1, successRate: 0, meanReward: 0.5, topTasks: ["plan"], topTags: ["ops"] }],
        health: "up",
        lastSyncAt: START + 60_000,
        quarantined: 0,
        conflicts: 0,
        redacted: 0,
        approvals: { pending: 0, expired: 0 },
      },
    ],
    approvals: { pending: 1, expired: 1 },
    truncated: false,
  });
  expect(await t.query(api.digest.get, { ...vm, day: DAY })).toEqual(digest);
});

test("stored one per day: building again replaces it; archived episodes still count", async () => {
  await seed();
  await t.mutation(internal.digest.build, { day: DAY, now: NOW });
  await t.action(internal.episodes.archiveOld, { cutoff: START + DAY_MS, limit: 100 });
  const again = await t.mutation(internal.digest.build, { day: DAY, now: NOW + 1 });
  expect(again).toMatchObject({ builtAt: NOW + 1, episodes: 5 });
  expect(await t.run((ctx) => ctx.db.query("digests").collect())).toHaveLength(1);
  expect(await t.query(api.digest.get, { ...laptop, day: DAY })).toMatchObject({ builtAt: NOW + 1 });
  expect(await t.query(api.digest.get, { ...laptop, day: "2026-02-03" })).toBeNull();
});

test("today's digest on demand: built now, so far, stored; only today, only for a registered site", async () => {
  await seed();
  const now = START + 60_000; // the fake clock: today is DAY
  const digest = await t.mutation(api.digest.buildToday, { ...laptop, day: DAY });
  expect(digest).toMatchObject({ day: DAY, builtAt: now, episodes: 5 });
  expect(await t.query(api.digest.get, { ...vm, day: DAY })).toEqual(digest);
  for (const day of ["2026-02-01", "2026-02-03", "today"]) {
    expect(await errorCode(t.mutation(api.digest.buildToday, { ...laptop, day }))).toBe("INVALID");
  }
  expect(await errorCode(t.mutation(api.digest.buildToday, { ...laptop, secret: "wrong", day: DAY }))).toBe(
    "UNAUTHORIZED",
  );
});

test("top five, most frequent first, ties by name", async () => {
  const tasks = ["e", "d", "c", "b", "a", "f", "f", "z", "z", "z"];
  await t.mutation(api.episodes.bulkSyncEpisodes, {
    ...laptop,
    cursor: tasks.length,
    episodes: tasks.map((task, i) => item(String(i + 1), { fields: at(i, { task, tags: [task, "all"] }) })),
  });
  const digest = await t.mutation(internal.digest.build, { day: DAY });
  expect(digest.sites[0].topTasks).toEqual(["z", "f", "a", "b", "c"]);
  expect(digest.sites[0].topTags).toEqual(["all", "z", "f", "a", "b"]);
});

test("nothing to report; a bad day is INVALID", async () => {
  expect(await t.mutation(internal.digest.build, { day: DAY, now: NOW })).toMatchObject({
    episodes: 0,
    sites: [],
    approvals: { pending: 0, expired: 0 },
  });
  for (const day of ["2026-2-2", "2026-02-30", "yesterday"]) {
    expect(await errorCode(t.mutation(internal.digest.build, { day }))).toBe("INVALID");
  }
  expect(dayBounds("2024-02-29")).toEqual({ since: Date.parse("2024-02-29T00:00:00Z"), until: Date.parse("2024-03-01T00:00:00Z") });
});
