/** The change feed (episodes:changes), recording Qdrant points (episodes:recordPoints), and the backfill. */
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { CHANGE_COUNTER, MAX_FEED_BYTES } from "./lib/changes";
import { pushEpisodes } from "./lib/push";
import { backend, errorCode, registerSite, type Backend } from "./test.setup";
import { item } from "./test.fixtures";

type Auth = { site: string; secret: string };
let t: Backend;
let laptop: Auth;
let vm: Auth;

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(1_770_000_000_000);
  t = backend();
  laptop = await registerSite(t, "laptop");
  vm = await registerSite(t, "vm");
});
afterEach(() => vi.useRealTimers());

const push = (episodes: ReturnType<typeof item>[], auth = laptop, backbone = t) =>
  backbone.mutation(api.episodes.bulkSyncEpisodes, { ...auth, cursor: 1, episodes });
const forget = (sourceId: string, auth = laptop) => t.action(api.episodes.forget, { ...auth, sourceId });
const changes = (after = 0, limit = 500, auth = laptop, backbone = t) =>
  backbone.query(api.episodes.changes, { ...auth, after, limit });
const keys = (feed: { sourceSite: string; sourceId: string }[]) => feed.map((c) => `${c.sourceSite}/${c.sourceId}`);
const counter = (backbone = t) =>
  backbone.run(async (ctx) => (await ctx.db.query("counters").collect()).map(({ name, value }) => ({ name, value })));
const point = (sourceSite: string, sourceId: string, qdrantPointId: string, contentHash = `content-${sourceId}`) => ({
  sourceSite,
  sourceId,
  qdrantPointId,
  contentHash,
});

/** Every change after `after`, `limit` a page, checking each page's order. */
async function feed(after = 0, limit = 500, auth = laptop, backbone = t) {
  const all = [];
  for (;;) {
    const page = await changes(after, limit, auth, backbone);
    if (page.length === 0) return all;
    expect(page.length).toBeLessThanOrEqual(limit);
    for (const entry of page) {
      expect(entry.seq).toBeGreaterThan(after);
      after = entry.seq;
    }
    all.push(...page);
  }
}

describe("episodes:changes", () => {
  test("every site's inserts, in commit order, with strictly increasing seqs", async () => {
    await push([item("1"), item("2")]);
    await push([item("1", { identity: "vm's" })], vm);
    await push([item("3")]);
    const all = await changes();
    expect(keys(all)).toEqual(["laptop/1", "laptop/2", "vm/1", "laptop/3"]);
    expect(all.map((c) => c.seq)).toEqual([1, 2, 3, 4]);
    expect(await counter()).toEqual([{ name: CHANGE_COUNTER, value: 4 }]);
  });

  test("an entry carries the episode as listEpisodes exports it, and no point yet", async () => {
    await push([item("1", { fields: { metadata: { tool: "bash", n: 1 } } })]);
    const [entry] = await changes();
    const { episodes } = await t.query(api.episodes.listEpisodes, { ...laptop, after: null, limit: 10 });
    expect(entry).toEqual({
      seq: 1,
      sourceSite: "laptop",
      sourceId: "1",
      episode: episodes[0],
      qdrantPointId: null,
      archived: false,
    });
    expect(entry.episode).toMatchObject({ contentHash: "content-1", metadata: { tool: "bash", n: 1 } });
  });

  test("an edit moves the episode to a new seq: it appears once, as it now is", async () => {
    await push([item("1"), item("2")]);
    vi.setSystemTime(1_770_000_060_000);
    await push([item("1", { content: "edited", fields: { output: "better" } })]);
    const all = await changes();
    expect(keys(all)).toEqual(["laptop/2", "laptop/1"]);
    expect(all.map((c) => c.seq)).toEqual([2, 3]);
    expect(all[1].episode).toMatchObject({ output: "better", contentHash: "edited", syncedAt: 1_770_000_000_000 });
    expect(await changes(2)).toEqual([all[1]]);
  });

  test("unchanged, conflicting and rejected rows are no change and leave the counter alone", async () => {
    await push([item("1")]);
    const before = await changes();
    const { results } = await push([item("1"), item("1", { identity: "other", content: "x" }), item("", {})]);
    expect(results.map((r) => r.outcome)).toEqual(["unchanged", "conflict", "rejected"]);
    expect(await changes()).toEqual(before);
    expect(await counter()).toEqual([{ name: CHANGE_COUNTER, value: 1 }]);
  });

  test("no counter until the first change: a push of nothing changed does not create it", async () => {
    await push([item("", {})]);
    expect(await counter()).toEqual([]);
    expect(await changes()).toEqual([]);
  });

  test("a push writes the counter once, however many rows it changes", async () => {
    const limited = backend({ transactionLimits: true });
    const written = await limited.run(async (ctx) => {
      await pushEpisodes(ctx, "laptop", [item("1"), item("2"), item("3"), item("1", { content: "v2" })], Date.now());
      return (await ctx.meta.getTransactionMetrics()).documentsWritten.used;
    });
    expect(written).toBe(4 + 1); // three inserts and an edit, and the counter
    expect(await counter(limited)).toEqual([{ name: CHANGE_COUNTER, value: 4 }]);
  });

  test("a forget is a change with no episode; forgetting again, or a forgotten key's push, is not", async () => {
    await push([item("1"), item("2")]);
    await forget("1");
    await forget("1");
    await push([item("1")]);
    await forget("never-pushed", vm);
    const all = await changes();
    expect(all.map((c) => [c.seq, `${c.sourceSite}/${c.sourceId}`, c.episode === null])).toEqual([
      [2, "laptop/2", false],
      [3, "laptop/1", true],
      [4, "vm/never-pushed", true],
    ]);
    expect(all[1].qdrantPointId).toBeNull();
  });

  test("after and limit page through the feed, episodes and tombstones merged", async () => {
    await push([item("1"), item("2"), item("3")]);
    await forget("2");
    await push([item("4")], vm);
    await forget("1");
    await push([item("3", { content: "edited" })]);
    const all = await changes();
    expect(keys(all)).toEqual(["laptop/2", "vm/4", "laptop/1", "laptop/3"]);
    expect(all.map((c) => c.seq)).toEqual([4, 5, 6, 7]);
    for (const limit of [1, 2, 3]) expect(await feed(0, limit)).toEqual(all);
    expect(await changes(4, 2)).toEqual(all.slice(1, 3));
    expect(await changes(7)).toEqual([]);
    expect(await changes(1_000)).toEqual([]);
  });

  test("any registered site reads every site's changes; a wrong or missing secret is refused", async () => {
    await push([item("1")]);
    expect(keys(await changes(0, 10, vm))).toEqual(["laptop/1"]);
    expect(await errorCode(changes(0, 10, { ...laptop, secret: "wrong" }))).toBe("UNAUTHORIZED");
    expect(await errorCode(t.query(api.episodes.changes, { site: "laptop", after: 0, limit: 10 }))).toBe("UNAUTHORIZED");
    expect(await errorCode(changes(0, 10, { site: "nobody", secret: laptop.secret }))).toBe("UNAUTHORIZED");
  });

  test.each([
    ["limit 0", 0, 0],
    ["limit 501", 0, 501],
    ["a fractional limit", 0, 1.5],
    ["a negative after", -1, 10],
    ["a fractional after", 0.5, 10],
  ])("%s is INVALID", async (_name, after, limit) => {
    expect(await errorCode(changes(after, limit))).toBe("INVALID");
  });

  test("limit 500 is fine", async () => {
    await push([item("1")]);
    expect(await changes(0, 500)).toHaveLength(1);
  });

  test("large episodes: a page stops early within Convex's read limit, and paging still gets them all", async () => {
    const limited = backend({ transactionLimits: true });
    const auth = await registerSite(limited, "laptop");
    const big = (i: number) => item(String(i), { fields: { output: "x".repeat(900_000) } });
    const count = Math.ceil((20 * 1024 * 1024) / 900_000); // more than a query may read (16 MiB)
    for (let i = 0; i < count; i += 5) {
      await push(Array.from({ length: Math.min(5, count - i) }, (_, j) => big(i + j)), auth, limited);
    }
    const first = await changes(0, 500, auth, limited);
    expect(first.length).toBeGreaterThan(0);
    expect(first.length).toBeLessThan(count);
    expect(first.length * 900_000).toBeGreaterThanOrEqual(MAX_FEED_BYTES - 900_000);
    const all = await feed(0, 500, auth, limited);
    expect(all.map((c) => c.sourceId)).toEqual(Array.from({ length: count }, (_, i) => String(i)));
  });
});

describe("episodes:recordPoints", () => {
  const record = (items: ReturnType<typeof point>[], auth = vm) => t.mutation(api.episodes.recordPoints, { ...auth, items });

  test("records points for the current content only, for any site's episodes, ignoring unknown keys", async () => {
    await push([item("1"), item("2"), item("3")]);
    const result = await record([
      point("laptop", "1", "p-1"),
      point("laptop", "2", "p-2", "stale"),
      point("laptop", "99", "p-99"),
      point("vm", "3", "p-3"), // vm has no episode 3
    ]);
    expect(result).toEqual({ recorded: 1 });
    const points = Object.fromEntries((await changes()).map((c) => [c.sourceId, c.qdrantPointId]));
    expect(points).toEqual({ 1: "p-1", 2: null, 3: null });
    expect(await record([])).toEqual({ recorded: 0 });
  });

  test("recording is not a change: no seq moves and the counter stays", async () => {
    await push([item("1"), item("2")]);
    const before = await changes();
    await record([point("laptop", "1", "p-1"), point("laptop", "2", "p-2")]);
    const after = await changes();
    expect(after.map((c) => [c.seq, c.sourceId, c.qdrantPointId])).toEqual([
      [1, "1", "p-1"],
      [2, "2", "p-2"],
    ]);
    expect(after.map((c) => c.episode)).toEqual(before.map((c) => c.episode));
    expect(await changes(2)).toEqual([]);
    expect(await counter()).toEqual([{ name: CHANGE_COUNTER, value: 2 }]);
  });

  test("recording the same point again still counts; an edit clears the point, and the old one cannot return", async () => {
    await push([item("1")]);
    expect(await record([point("laptop", "1", "p-1")])).toEqual({ recorded: 1 });
    expect(await record([point("laptop", "1", "p-1")])).toEqual({ recorded: 1 });
    await push([item("1", { content: "edited" })]);
    const [edited] = await changes(1);
    expect([edited.seq, edited.qdrantPointId]).toEqual([2, null]);
    expect(await record([point("laptop", "1", "p-1")])).toEqual({ recorded: 0 });
    expect(await record([point("laptop", "1", "p-1b", "edited")])).toEqual({ recorded: 1 });
    expect((await changes(1))[0].qdrantPointId).toBe("p-1b");
    // Off the vector backlog too, as the internal recordPointIds does.
    expect(await t.query(internal.episodes.needingVectors, { limit: 10 })).toEqual([]);
  });

  test("a wrong or missing secret is refused and records nothing", async () => {
    await push([item("1")]);
    expect(await errorCode(record([point("laptop", "1", "p-1")], { ...vm, secret: "wrong" }))).toBe("UNAUTHORIZED");
    const missing = t.mutation(api.episodes.recordPoints, { site: "vm", items: [point("laptop", "1", "p-1")] });
    expect(await errorCode(missing)).toBe("UNAUTHORIZED");
    expect((await changes())[0].qdrantPointId).toBeNull();
  });

  test("more than 500 items is TOO_LARGE and records nothing; 500 is fine", async () => {
    await push([item("1")]);
    const many = Array.from({ length: 501 }, () => point("laptop", "1", "p-1"));
    expect(await errorCode(record(many))).toBe("TOO_LARGE");
    expect((await changes())[0].qdrantPointId).toBeNull();
    expect(await record(many.slice(0, 500))).toEqual({ recorded: 500 });
  });
});

describe("episodes:backfillChangeSeq (documents written before the feed)", () => {
  /** Makes the deployment look as it did before the feed: no seqs, no counter. */
  const forgetTheFeed = () =>
    t.run(async (ctx) => {
      for (const table of ["episodes", "tombstones"] as const) {
        for (const doc of await ctx.db.query(table).collect()) await ctx.db.patch(doc._id, { changeSeq: undefined });
      }
      for (const doc of await ctx.db.query("counters").collect()) await ctx.db.delete(doc._id);
    });

  test("old documents are accepted by the schema and are not in the feed until backfilled", async () => {
    await push([item("1"), item("2")]);
    await forget("1");
    await forgetTheFeed();
    expect(await changes()).toEqual([]);
    // A push after the deploy takes seqs from a fresh counter; the old rows still have none.
    await push([item("3")], vm);
    expect(keys(await changes())).toEqual(["vm/3"]);
  });

  test("gives every old episode, then every old tombstone, a seq after the existing ones, in batches", async () => {
    await push([item("1"), item("2"), item("3")]);
    await forget("2");
    await push([item("4")], vm);
    await forgetTheFeed();
    await push([item("5")]); // after the deploy: seq 1
    const first = await t.mutation(internal.episodes.backfillChangeSeq, { limit: 2 });
    expect(first).toEqual({ assigned: 2, more: true });
    await t.finishAllScheduledFunctions(vi.runAllTimers);
    const all = await changes();
    expect(keys(all)).toEqual(["laptop/5", "laptop/1", "laptop/3", "vm/4", "laptop/2"]);
    expect(all.map((c) => c.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(all[all.length - 1].episode).toBeNull();
    expect(await counter()).toEqual([{ name: CHANGE_COUNTER, value: 5 }]);
    // Nothing is left; running it again assigns nothing, and the next change follows on.
    expect(await t.mutation(internal.episodes.backfillChangeSeq, { limit: 100 })).toEqual({ assigned: 0, more: false });
    await push([item("6")]);
    expect((await changes(5)).map((c) => [c.seq, c.sourceId])).toEqual([[6, "6"]]);
  });

  test.each([0, -1, 501])("limit %d is INVALID", async (limit) => {
    expect(await errorCode(t.mutation(internal.episodes.backfillChangeSeq, { limit }))).toBe("INVALID");
  });
});
