import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { backend, registerSite, type Backend } from "./test.setup";
import { item } from "./test.fixtures";

const NOW = 1_770_000_000_000;
const HOUR = 60 * 60 * 1000;
let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});
afterEach(() => vi.useRealTimers());

const push = (auth: typeof laptop, id: string) =>
  t.mutation(api.episodes.bulkSyncEpisodes, { ...auth, cursor: Number(id), episodes: [item(id)] });

describe("syncHealth", () => {
  test("every site's cursor and silence, to any site; no episodes", async () => {
    await push(laptop, "3");
    vi.setSystemTime(NOW + 5_000);
    await push(vm, "7");
    vi.setSystemTime(NOW + 10_000);
    const health = await t.query(api.health.syncHealth, vm);
    expect(health).toEqual([
      { site: "laptop", lastSyncedId: 3, lastSyncedAt: NOW, totalSynced: 1, silentForMs: 10_000 },
      { site: "vm", lastSyncedId: 7, lastSyncedAt: NOW + 5_000, totalSynced: 1, silentForMs: 5_000 },
    ]);
  });
});

describe("syncHealthAlert (the sync-health sweep)", () => {
  test("one 'down' when a site goes silent for an hour, one 'up' when it syncs again", async () => {
    await push(laptop, "1");
    await push(vm, "1");
    expect(await t.mutation(internal.health.syncHealthAlert, {})).toEqual([]);
    vi.setSystemTime(NOW + HOUR - 1);
    await push(vm, "2");
    vi.setSystemTime(NOW + HOUR);
    expect(await t.mutation(internal.health.syncHealthAlert, {})).toEqual([
      { site: "laptop", state: "down", at: NOW + HOUR, silentForS: 3600 },
    ]);
    vi.setSystemTime(NOW + 2 * HOUR);
    // Still silent: no second alert. vm is silent now too, which is news.
    expect(await t.mutation(internal.health.syncHealthAlert, {})).toEqual([
      { site: "vm", state: "down", at: NOW + 2 * HOUR, silentForS: 3600.001 },
    ]);
    await push(laptop, "2");
    expect(await t.mutation(internal.health.syncHealthAlert, {})).toEqual([
      { site: "laptop", state: "up", at: NOW + 2 * HOUR, silentForS: 0 },
    ]);
    expect(await t.mutation(internal.health.syncHealthAlert, {})).toEqual([]);
    const states = await t.run((ctx) => ctx.db.query("healthStates").collect());
    expect(states.map(({ site, state }) => ({ site, state }))).toEqual([
      { site: "laptop", state: "up" },
      { site: "vm", state: "down" },
    ]);
    const since = await t.query(api.health.transitions, { ...vm, sinceMs: NOW + 2 * HOUR });
    expect(since.map((x) => [x.site, x.state])).toEqual([
      ["vm", "down"],
      ["laptop", "up"],
    ]);
    expect(await t.query(api.health.transitions, { ...vm, sinceMs: 0 })).toHaveLength(3);
  });

  test("the time and the threshold can be given", async () => {
    await push(laptop, "1");
    expect(await t.mutation(internal.health.syncHealthAlert, { now: NOW + 1_000, silentAfterMs: 1_000 })).toMatchObject([
      { site: "laptop", state: "down", silentForS: 1 },
    ]);
  });

  test("a site first judged silent is news; a site never synced is never judged", async () => {
    await push(laptop, "1");
    await t.mutation(api.agents.heartbeat, { ...vm, agentName: "a", platform: "p" });
    expect(await t.mutation(internal.health.syncHealthAlert, { now: NOW + 2 * HOUR })).toEqual([
      { site: "laptop", state: "down", at: NOW + 2 * HOUR, silentForS: 7200 },
    ]);
  });
});
