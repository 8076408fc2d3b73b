import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { liveness, MAX_AGENT_BEATS } from "./agents";
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

const T0 = 1_770_000_000_000;

test("liveness: online while the last sign of life is at most staleAfterMs old", () => {
  expect(liveness(T0, T0 + 180_000, 180_000)).toBe("online");
  expect(liveness(T0, T0 + 180_001, 180_000)).toBe("offline");
  expect(liveness(null, T0, 180_000)).toBe("offline");
});

test("a site's beat carries its agents: last seen when seen, never after now, never going back", async () => {
  await t.mutation(api.agents.heartbeatSite, {
    ...laptop,
    ...beat,
    agents: [
      { agentName: "coder", platform: "claude-code", seenAt: T0 - 1_000, interface: "cli", lastEpisodeAt: T0 - 1_000 },
      { agentName: "cc-sub-1", platform: "claude-code", seenAt: T0 - 600_000 },
      { agentName: "ahead", platform: "claude-code", seenAt: T0 + 3_600_000 },
    ],
  });
  await t.mutation(api.agents.heartbeatSite, {
    ...laptop,
    ...beat,
    agents: [{ agentName: "coder", platform: "claude-code", seenAt: T0 - 60_000, lastEpisodeAt: T0 - 60_000 }],
  });
  const rows = await t.query(api.agents.list, laptop);
  expect(rows.map((a) => [a.agentName, a.lastHeartbeat, a.interface, a.lastEpisodeAt])).toEqual([
    ["ahead", T0, null, null],
    ["cc-sub-1", T0 - 600_000, null, null],
    ["coder", T0 - 1_000, "cli", T0 - 1_000],
  ]);
  expect((await t.query(api.agents.sites, laptop))[0]).toMatchObject({ online: true, lastHeartbeat: T0 });
  expect(await t.mutation(internal.agents.markStale, {})).toEqual({
    marked: 1,
    agents: [{ site: "laptop", agentName: "cc-sub-1" }],
    sites: [],
  });
});

test("more agents than one beat carries is TOO_LARGE", async () => {
  const agents = Array.from({ length: MAX_AGENT_BEATS + 1 }, (_, i) => ({ agentName: `a${i}`, platform: "p", seenAt: T0 }));
  expect(await errorCode(t.mutation(api.agents.heartbeatSite, { ...laptop, ...beat, agents }))).toBe("TOO_LARGE");
  await t.mutation(api.agents.heartbeatSite, { ...laptop, ...beat, agents: agents.slice(1) });
  expect(await t.query(api.agents.list, laptop)).toHaveLength(MAX_AGENT_BEATS);
});

test("pruneAgents: agents of every site silent past the retention leave, online or not, a limit a call", async () => {
  const day = 86_400_000;
  const seenAt = (agentName: string, at: number) => ({ agentName, platform: "p", seenAt: at });
  await t.mutation(api.agents.heartbeatSite, { ...laptop, ...beat, agents: [seenAt("old", T0 - 31 * day), seenAt("recent", T0 - day)] });
  await t.mutation(api.agents.heartbeatSite, { ...vm, ...beat, agents: [seenAt("older", T0 - 40 * day)] });
  await t.mutation(internal.agents.markStale, {}); // old and recent offline; older too
  await t.mutation(api.agents.heartbeatSite, { ...vm, ...beat, agents: [seenAt("online-but-old", T0 - 35 * day)] });
  expect(await t.mutation(internal.agents.pruneAgents, { limit: 2 })).toEqual({
    pruned: [
      { site: "vm", agentName: "older" },
      { site: "laptop", agentName: "old" },
    ],
  });
  expect(await t.mutation(internal.agents.pruneAgents, {})).toEqual({ pruned: [{ site: "vm", agentName: "online-but-old" }] });
  expect((await t.query(api.agents.list, { ...laptop, allSites: true })).map((a) => a.agentName)).toEqual(["recent"]);
  expect(await t.mutation(internal.agents.pruneAgents, { now: T0 + 30 * day })).toEqual({
    pruned: [{ site: "laptop", agentName: "recent" }],
  });
});

test("the mark-stale-agents cron prunes past the deployment's retention", async () => {
  await t.mutation(api.agents.heartbeatSite, { ...laptop, ...beat, agents: [{ agentName: "gone", platform: "p", seenAt: T0 - 8 * 86_400_000 }] });
  process.env.MEMSYNC_JOBS__AGENT_RETENTION_DAYS = "7";
  try {
    expect(await t.action(internal.scheduled.markStaleAgents, {})).toBe(
      "1 agent or site went offline; 1 agent silent past the retention pruned",
    );
  } finally {
    delete process.env.MEMSYNC_JOBS__AGENT_RETENTION_DAYS;
  }
  expect(await t.query(api.agents.list, laptop)).toEqual([]);
});
