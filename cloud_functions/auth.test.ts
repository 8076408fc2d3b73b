import { describe, expect, test } from "vitest";
import { api } from "./_generated/api";
import { sha256Hex } from "./lib/auth";
import { backend, errorCode, errorMessage, registerSite } from "./test.setup";

describe("sites:register", () => {
  test("returns a 32-byte hex secret once and stores only its hash", async () => {
    const t = backend();
    const { site, secret } = await registerSite(t, "laptop");
    expect(site).toBe("laptop");
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    const rows = await t.run((ctx) => ctx.db.query("sites").collect());
    expect(rows).toHaveLength(1);
    expect(rows[0].secretHash).toBe(await sha256Hex(secret));
    expect(JSON.stringify(rows)).not.toContain(secret);
  });

  test("two sites get different secrets", async () => {
    const t = backend();
    const a = await registerSite(t, "a");
    const b = await registerSite(t, "b");
    expect(a.secret).not.toBe(b.secret);
  });

  test("an existing name is a CONFLICT", async () => {
    const t = backend();
    await registerSite(t, "laptop");
    expect(await errorCode(registerSite(t, "laptop"))).toBe("CONFLICT");
  });

  test.each(["", "has space", "-leading", "a/b", "x".repeat(64)])("name %j is INVALID", async (name) => {
    expect(await errorCode(registerSite(backend(), name))).toBe("INVALID");
  });
});

describe("every public function checks the site's secret", () => {
  const calls = {
    "episodes:getCursor": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.query(api.episodes.getCursor, auth),
    "episodes:bulkSyncEpisodes": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.mutation(api.episodes.bulkSyncEpisodes, { ...auth, cursor: 1, episodes: [] }),
    "episodes:listEpisodes": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.query(api.episodes.listEpisodes, { ...auth, after: null, limit: 10 }),
    "agents:heartbeat": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.mutation(api.agents.heartbeat, { ...auth, agentName: "a", platform: "p" }),
    "agents:heartbeatSite": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.mutation(api.agents.heartbeatSite, {
        ...auth,
        version: "1",
        host: "h",
        pid: 1,
        lagS: null,
        backlog: null,
        indexState: null,
        quarantined: 0,
        conflicts: 0,
      }),
    "agents:sites": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.query(api.agents.sites, auth),
    "agents:list": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.query(api.agents.list, { ...auth, allSites: true }),
    "jobs:claimJob": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.mutation(api.jobs.claimJob, { ...auth, job: "j", slot: "s", leaseMs: 1000 }),
    "jobs:finishJob": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.mutation(api.jobs.finishJob, { ...auth, job: "j", slot: "s", outcome: "ok", summary: "" }),
    "jobs:recordRun": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.mutation(api.jobs.recordRun, { ...auth, job: "j", slot: "s", outcome: "ok", summary: "", startedAt: 1, endedAt: 2 }),
    "jobs:runs": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.query(api.jobs.runs, auth),
    "digest:get": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.query(api.digest.get, { ...auth, day: "2026-01-01" }),
    "health:syncHealth": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.query(api.health.syncHealth, auth),
    "health:transitions": (t: ReturnType<typeof backend>, auth: { site: string; secret?: string }) =>
      t.query(api.health.transitions, { ...auth, sinceMs: 0 }),
  };

  for (const [name, call] of Object.entries(calls)) {
    test(`${name}: wrong, missing, empty secret, unknown site, another site's secret`, async () => {
      const t = backend();
      const laptop = await registerSite(t, "laptop");
      const vm = await registerSite(t, "vm");
      const attempts = [
        { site: "laptop", secret: "0".repeat(64) },
        { site: "laptop" },
        { site: "laptop", secret: "" },
        { site: "nowhere", secret: laptop.secret },
        { site: "vm", secret: laptop.secret }, // writing or reading as another site
      ];
      for (const auth of attempts) expect(await errorCode(call(t, auth))).toBe("UNAUTHORIZED");
      await expect(call(t, laptop)).resolves.toBeDefined();
      await expect(call(t, vm)).resolves.toBeDefined();
    });
  }

  test("the message never contains the secret", async () => {
    const t = backend();
    const laptop = await registerSite(t, "laptop");
    const message = await errorMessage(t.query(api.episodes.getCursor, { site: "vm", secret: laptop.secret }));
    expect(message).toContain("vm");
    expect(message).not.toContain(laptop.secret);
  });

  test("a disabled site is refused", async () => {
    const t = backend();
    const laptop = await registerSite(t, "laptop");
    await t.run(async (ctx) => {
      const row = await ctx.db.query("sites").first();
      await ctx.db.patch(row!._id, { disabled: true });
    });
    expect(await errorCode(t.query(api.episodes.getCursor, laptop))).toBe("UNAUTHORIZED");
  });
});
