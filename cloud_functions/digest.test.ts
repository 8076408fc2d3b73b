import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { backend, registerSite } from "./test.setup";
import { item } from "./test.fixtures";

const NOW = 1_770_000_000_000;
const DAY = 24 * 60 * 60 * 1000;

beforeEach(() => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
});
afterEach(() => vi.useRealTimers());

test("daily: episodes, success rate and mean reward of the last 24 h, per site", async () => {
  const t = backend();
  const laptop = await registerSite(t, "laptop");
  const vm = await registerSite(t, "vm");
  const at = (createdAt: number, success: boolean, reward: number | null) => ({ createdAt, ts: createdAt, success, reward });
  await t.mutation(api.episodes.bulkSyncEpisodes, {
    ...laptop,
    cursor: 4,
    episodes: [
      item("1", { fields: at(NOW - 1000, true, 1) }),
      item("2", { fields: at(NOW - 2000, false, 0) }),
      item("3", { fields: at(NOW - 3000, true, null) }),
      item("4", { fields: at(NOW - DAY - 1, true, 1) }), // older than a day
    ],
  });
  await t.mutation(api.episodes.bulkSyncEpisodes, { ...vm, cursor: 1, episodes: [item("1", { fields: at(NOW - 10, false, null) })] });
  expect(await t.mutation(internal.digest.daily, {})).toEqual({
    since: NOW - DAY,
    until: NOW,
    truncated: false,
    sites: [
      { site: "laptop", episodes: 3, successRate: 2 / 3, meanReward: 0.5 },
      { site: "vm", episodes: 1, successRate: 0, meanReward: null },
    ],
  });
});

test("daily with nothing to report", async () => {
  expect(await backend().mutation(internal.digest.daily, {})).toMatchObject({ sites: [], truncated: false });
});
