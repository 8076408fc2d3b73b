import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api } from "./_generated/api";
import { USE_KINDS } from "./lib/uses";
import { contract } from "./test.contracts";
import { backend, errorCode, registerSite, type Backend } from "./test.setup";
import { item } from "./test.fixtures";

const NOW = 1_770_000_000_000;
let t: Backend;
let laptop: { site: string; secret: string };
let vm: { site: string; secret: string };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(NOW);
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
  await t.mutation(api.episodes.bulkSyncEpisodes, { ...laptop, cursor: 2, episodes: [item("1"), item("2")] });
});
afterEach(() => vi.useRealTimers());

const one = { sourceSite: "laptop", sourceId: "1" };
const two = { sourceSite: "laptop", sourceId: "2" };
const record = (events: unknown[], auth = vm) => t.mutation(api.uses.record, { ...auth, events: events as never });
const totals = (keys = [one, two]) => t.query(api.uses.totals, { ...laptop, keys });

describe("uses", () => {
  test("the kinds are the contract's, and any other is refused in its sentence", async () => {
    const pinned = contract<{ handed: string[]; opened: string[]; refused: { kind: string; sentence: string } }>("uses.json");
    expect([...USE_KINDS]).toEqual([...pinned.handed, ...pinned.opened]);
    const refused = record([{ useId: "u", kind: pinned.refused.kind, usedAt: NOW, keys: [one] }]);
    await expect(refused).rejects.toThrow(pinned.refused.sentence);
  });

  test("add up per memory by kind; an event delivered twice counts once; the latest use wins", async () => {
    const handed = { useId: "u-1", kind: "context", usedAt: NOW, keys: [one, two], agent: "claude-code" };
    expect(await record([handed, { useId: "u-2", kind: "get_episode", usedAt: NOW + 5, keys: [one, one] }])).toEqual({ counted: 3 });
    expect(await record([handed])).toEqual({ counted: 0 });
    expect(await record([{ useId: "u-3", kind: "mcp_search", usedAt: NOW - 9, keys: [two, { sourceSite: "laptop", sourceId: "404" }] }])).toEqual({ counted: 1 });
    expect(await totals()).toEqual([
      { ...one, accessCount: 2, lastAccessed: NOW + 5, byKind: { context: 1, get_episode: 1 }, pinned: false, pinnedBy: null, pinnedAt: null },
      { ...two, accessCount: 2, lastAccessed: NOW, byKind: { context: 1, mcp_search: 1 }, pinned: false, pinnedBy: null, pinnedAt: null },
    ]);
    const page = await t.query(api.uses.totalsPage, { ...vm, after: null, limit: 1 });
    expect(page.totals).toHaveLength(1);
    expect(page.next).not.toBeNull();
  });

  test("pins: set by any site, cleared, and gone with an unused memory's row", async () => {
    expect(await t.mutation(api.uses.pin, { ...vm, ...one, pinned: true, by: "ann" })).toBe(true);
    expect(await t.mutation(api.uses.pin, { ...vm, sourceSite: "laptop", sourceId: "404", pinned: true, by: "ann" })).toBe(false);
    expect(await totals([one])).toEqual([{ ...one, accessCount: 0, lastAccessed: null, byKind: {}, pinned: true, pinnedBy: "ann", pinnedAt: NOW }]);
    expect(await t.mutation(api.uses.pin, { ...laptop, ...one, pinned: false, by: "bob" })).toBe(true);
    expect(await totals([one])).toEqual([]);
  });

  test("a forget removes the memory's uses and pin, and a late delivery does not bring them back", async () => {
    await record([{ useId: "u-1", kind: "related", usedAt: NOW, keys: [one, two] }]);
    await t.mutation(api.uses.pin, { ...vm, ...one, pinned: true, by: "ann" });
    await t.action(api.episodes.forget, { ...laptop, sourceId: "1" });
    expect((await totals()).map((x) => x.sourceId)).toEqual(["2"]);
    expect(await t.run(async (ctx) => (await ctx.db.query("uses").collect()).map((u) => u.sourceId))).toEqual(["2"]);
    expect(await record([{ useId: "u-1", kind: "related", usedAt: NOW, keys: [one] }])).toEqual({ counted: 0 });
  });

  test("a caller must be a site", async () => {
    expect(await errorCode(record([], { site: "vm", secret: "wrong" }))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.query(api.uses.totals, { site: "laptop", keys: [] }))).toBe("UNAUTHORIZED");
  });
});
