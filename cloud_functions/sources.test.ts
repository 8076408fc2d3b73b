import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { api } from "./_generated/api";
import { backend, errorCode, errorMessage, registerSite, type Backend } from "./test.setup";

let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };
const first = { instance: "i-1", machine: "m-1", host: "laptop.lan", agentdbPath: "/home/a/agentdb.db" };
const second = { instance: "i-2", machine: "m-2", host: "clone.lan", agentdbPath: "/srv/agentdb.db" };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(1_770_000_000_000);
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});
afterEach(() => vi.useRealTimers());

test("no record before the first claim; the first claim needs expected null", async () => {
  expect(await t.query(api.sources.getSource, laptop)).toBeNull();
  expect(await t.mutation(api.sources.setSource, { ...laptop, ...first, expected: "i-0" })).toEqual({ claimed: false, source: null });
  expect(await t.query(api.sources.getSource, laptop)).toBeNull();
  const claimed = await t.mutation(api.sources.setSource, { ...laptop, ...first, expected: null });
  const stored = { ...first, claimedAt: 1_770_000_000_000, lastSeenAt: 1_770_000_000_000 };
  expect(claimed).toEqual({ claimed: true, source: stored });
  expect(await t.query(api.sources.getSource, laptop)).toEqual(stored);
});

test("the holder renews: claimedAt stays, lastSeenAt and the descriptive fields move", async () => {
  await t.mutation(api.sources.setSource, { ...laptop, ...first, expected: null });
  vi.setSystemTime(1_770_000_060_000);
  const moved = { ...first, agentdbPath: "/home/a/moved.db" };
  // expected null with the holder's own instance: a retry whose first reply was lost still wins
  expect((await t.mutation(api.sources.setSource, { ...laptop, ...moved, expected: null })).claimed).toBe(true);
  expect(await t.query(api.sources.getSource, laptop)).toEqual({
    ...moved,
    claimedAt: 1_770_000_000_000,
    lastSeenAt: 1_770_000_060_000,
  });
  expect(await t.run((ctx) => ctx.db.query("sources").collect())).toHaveLength(1);
});

test("another instance takes the site only by naming the current one", async () => {
  await t.mutation(api.sources.setSource, { ...laptop, ...first, expected: null });
  vi.setSystemTime(1_770_000_060_000);
  const refused = await t.mutation(api.sources.setSource, { ...laptop, ...second, expected: null });
  const held = { ...first, claimedAt: 1_770_000_000_000, lastSeenAt: 1_770_000_000_000 };
  expect(refused).toEqual({ claimed: false, source: held });
  expect(await t.mutation(api.sources.setSource, { ...laptop, ...second, expected: "i-9" })).toEqual({ claimed: false, source: held });
  expect(await t.query(api.sources.getSource, laptop)).toEqual(held);
  const taken = await t.mutation(api.sources.setSource, { ...laptop, ...second, expected: "i-1" });
  const now = { ...second, claimedAt: 1_770_000_060_000, lastSeenAt: 1_770_000_060_000 };
  expect(taken).toEqual({ claimed: true, source: now });
  expect(await t.query(api.sources.getSource, laptop)).toEqual(now);
});

test("two instances racing from the same expected value: one takes the site", async () => {
  await t.mutation(api.sources.setSource, { ...laptop, ...first, expected: null });
  const contenders = ["i-2", "i-3", "i-4", "i-5"].map((instance) => ({ ...laptop, ...second, instance, expected: "i-1" }));
  const answers = await Promise.all(contenders.map((args) => t.mutation(api.sources.setSource, args)));
  expect(answers.filter((answer) => answer.claimed)).toHaveLength(1);
  const winner = answers.find((answer) => answer.claimed)!.source!.instance;
  expect((await t.query(api.sources.getSource, laptop))!.instance).toBe(winner);
  expect(await t.run((ctx) => ctx.db.query("sources").collect())).toHaveLength(1);
});

test("each site has its own record and sees only its own", async () => {
  await t.mutation(api.sources.setSource, { ...laptop, ...first, expected: null });
  expect(await t.query(api.sources.getSource, vm)).toBeNull();
  // the same instance under another site name is that site's own claim, not a conflict
  expect((await t.mutation(api.sources.setSource, { ...vm, ...first, expected: null })).claimed).toBe(true);
  expect((await t.mutation(api.sources.setSource, { ...vm, ...second, expected: "i-1" })).claimed).toBe(true);
  expect((await t.query(api.sources.getSource, laptop))!.instance).toBe("i-1");
  expect((await t.query(api.sources.getSource, vm))!.instance).toBe("i-2");
});

test("both functions check the site's secret", async () => {
  await t.mutation(api.sources.setSource, { ...laptop, ...first, expected: null });
  const attempts = [
    { site: "laptop", secret: "0".repeat(64) },
    { site: "laptop" },
    { site: "laptop", secret: "" },
    { site: "nowhere", secret: laptop.secret },
    { site: "laptop", secret: vm.secret }, // reading or taking another site's record
  ];
  for (const auth of attempts) {
    expect(await errorCode(t.query(api.sources.getSource, auth))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.mutation(api.sources.setSource, { ...auth, ...second, expected: "i-1" }))).toBe("UNAUTHORIZED");
  }
  expect((await t.query(api.sources.getSource, laptop))!.instance).toBe("i-1");
});

test("the validator refuses a claim that leaves out expected", async () => {
  const message = await errorMessage(t.mutation(api.sources.setSource, { ...laptop, ...first } as never));
  expect(message).toMatch(/Missing required field `expected`/);
  expect(await t.query(api.sources.getSource, laptop)).toBeNull();
});
