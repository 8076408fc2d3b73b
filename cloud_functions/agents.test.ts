import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { backend, errorMessage, registerSite, type Backend } from "./test.setup";

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
  expect(await t.mutation(internal.agents.markStale, {})).toEqual({ marked: [{ site: "laptop", agentName: "old" }] });
  expect((await t.query(api.agents.list, laptop))[0].status).toBe("offline");
  expect((await t.query(api.agents.list, vm))[0].status).toBe("online");
  expect(await t.mutation(internal.agents.markStale, {})).toEqual({ marked: [] });
  await t.mutation(api.agents.heartbeat, { ...laptop, agentName: "old", platform: "linux" });
  expect((await t.query(api.agents.list, laptop))[0].status).toBe("online");
});

test("markStale as of a given time (an admin's sweep): the clock is an argument", async () => {
  await t.mutation(api.agents.heartbeat, { ...laptop, agentName: "old", platform: "linux" });
  expect(await t.mutation(internal.agents.markStale, { now: Date.now() + 60_000 })).toEqual({ marked: [] });
  expect(await t.mutation(internal.agents.markStale, { now: Date.now() + 3 * 60_000 + 1 })).toEqual({
    marked: [{ site: "laptop", agentName: "old" }],
  });
});
