import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { backend, errorCode, errorMessage, registerSite, type Backend } from "./test.setup";

let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(1_770_000_000_000);
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});
afterEach(() => vi.useRealTimers());

test("heartbeat registers an agent online, once, under its site", async () => {
  expect(await t.mutation(api.agents.heartbeat, { ...laptop, agentName: "claude", platform: "linux" })).toEqual({ status: "online" });
  vi.setSystemTime(1_770_000_030_000);
  await t.mutation(api.agents.heartbeat, { ...laptop, agentName: "claude", platform: "linux" });
  await t.mutation(api.agents.heartbeat, { ...vm, agentName: "claude", platform: "vm" });
  const agents = await t.query(api.agents.list, laptop);
  expect(agents).toHaveLength(1);
  expect(agents[0]).toMatchObject({ agentName: "claude", site: "laptop", status: "online", lastHeartbeat: 1_770_000_030_000 });
});

test("the validator refuses a heartbeat without a platform", async () => {
  const message = await errorMessage(t.mutation(api.agents.heartbeat, { ...laptop, agentName: "claude" } as never));
  expect(message).toMatch(/Missing required field `platform`/);
});

test("markStale: offline after 3 minutes without a heartbeat; a heartbeat brings it back", async () => {
  await t.mutation(api.agents.heartbeat, { ...laptop, agentName: "old", platform: "linux" });
  vi.setSystemTime(1_770_000_000_000 + 2 * 60_000);
  await t.mutation(api.agents.heartbeat, { ...vm, agentName: "recent", platform: "linux" });
  vi.setSystemTime(1_770_000_000_000 + 3 * 60_000 + 1);
  expect(await t.mutation(internal.agents.markStale, {})).toEqual({
    marked: 1,
    agents: [{ site: "laptop", agentName: "old" }],
    sites: [],
  });
  expect((await t.query(api.agents.list, laptop))[0].status).toBe("offline");
  expect((await t.query(api.agents.list, vm))[0].status).toBe("online");
  expect(await t.mutation(internal.agents.markStale, {})).toEqual({ marked: 0, agents: [], sites: [] });
  await t.mutation(api.agents.heartbeat, { ...laptop, agentName: "old", platform: "linux" });
  expect((await t.query(api.agents.list, laptop))[0].status).toBe("online");
});

test("markStale as of a given time (an admin's sweep): the clock is an argument", async () => {
  await t.mutation(api.agents.heartbeat, { ...laptop, agentName: "old", platform: "linux" });
  expect(await t.mutation(internal.agents.markStale, { now: Date.now() + 60_000 })).toMatchObject({ marked: 0 });
  expect(await t.mutation(internal.agents.markStale, { now: Date.now() + 3 * 60_000 + 1 })).toMatchObject({
    agents: [{ site: "laptop", agentName: "old" }],
  });
});

const beat = {
  version: "0.1.0",
  host: "laptop.lan",
  pid: 4242,
  lagS: 1.5,
  backlog: 3,
  indexState: "ready",
  quarantined: 2,
  conflicts: 1,
  redacted: 4,
};

test("an agent's interface and last episode: kept when a beat leaves them out, never going back", async () => {
  const beatOf = (extra: object) => t.mutation(api.agents.heartbeat, { ...laptop, agentName: "claude", platform: "linux", ...extra });
  await beatOf({ interface: "cli", lastEpisodeAt: 500 });
  await beatOf({});
  await beatOf({ lastEpisodeAt: 400 });
  expect(await t.query(api.agents.list, laptop)).toEqual([
    {
      agentName: "claude",
      site: "laptop",
      platform: "linux",
      status: "online",
      lastHeartbeat: 1_770_000_000_000,
      interface: "cli",
      lastEpisodeAt: 500,
    },
  ]);
});

test("allSites lists every site's agents, by site then name", async () => {
  for (const [auth, name] of [[vm, "b"], [laptop, "z"], [laptop, "a"]] as const) {
    await t.mutation(api.agents.heartbeat, { ...auth, agentName: name, platform: "p" });
  }
  const all = await t.query(api.agents.list, { ...vm, allSites: true });
  expect(all.map((a) => [a.site, a.agentName])).toEqual([["laptop", "a"], ["laptop", "z"], ["vm", "b"]]);
  expect((await t.query(api.agents.list, vm)).map((a) => a.agentName)).toEqual(["b"]);
});

test("sites: every registered site, with its beat, cursor and health; offline when stale", async () => {
  await t.mutation(api.agents.heartbeatSite, { ...laptop, ...beat });
  await t.mutation(api.episodes.updateCursor, { ...vm, lastSyncedId: 7 });
  await t.run(async (ctx) => {
    await ctx.db.insert("healthStates", { site: "vm", state: "down", since: 1 });
    await ctx.db.insert("sites", { name: "retired", secretHash: "x", createdAt: 1, disabled: true });
  });
  const [l, v] = await t.query(api.agents.sites, vm);
  expect(l).toEqual({
    site: "laptop",
    lastHeartbeat: 1_770_000_000_000,
    online: true,
    version: "0.1.0",
    host: "laptop.lan",
    pid: 4242,
    lagS: 1.5,
    backlog: 3,
    indexState: "ready",
    cursor: null,
    lastSyncAt: null,
    totalSynced: null,
    quarantined: 2,
    conflicts: 1,
    redacted: 4,
    health: null,
  });
  expect(v).toMatchObject({ site: "vm", lastHeartbeat: null, online: false, cursor: 7, lastSyncAt: 1_770_000_000_000, totalSynced: 0, health: "down" });
  expect(await t.mutation(internal.agents.markStale, { now: Date.now() + 60_000, staleAfterMs: 60_000 })).toEqual({
    marked: 0,
    agents: [],
    sites: [],
  });
  expect(await t.mutation(internal.agents.markStale, { now: Date.now() + 60_001, staleAfterMs: 60_000 })).toMatchObject({
    marked: 1,
    sites: ["laptop"],
  });
  expect((await t.query(api.agents.sites, laptop))[0].online).toBe(false);
  await t.mutation(api.agents.heartbeatSite, { ...laptop, ...beat, quarantined: 0 });
  expect((await t.query(api.agents.sites, laptop))[0]).toMatchObject({ online: true, quarantined: 0 });
});

test("a site's beat with a negative count is INVALID", async () => {
  expect(await errorCode(t.mutation(api.agents.heartbeatSite, { ...laptop, ...beat, conflicts: -1 }))).toBe("INVALID");
  expect(await errorCode(t.mutation(api.agents.heartbeatSite, { ...laptop, ...beat, redacted: 1.5 }))).toBe("INVALID");
  const { redacted: _, ...older } = beat; // a daemon from before redaction says nothing of it
  await t.mutation(api.agents.heartbeatSite, { ...laptop, ...older });
  expect((await t.query(api.agents.sites, laptop))[0].redacted).toBe(0);
});
