import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { api, internal } from "./_generated/api";
import { findEpisode } from "./lib/push";
import { backend, errorCode, errorMessage, registerSite, type Backend } from "./test.setup";
import { episodeFields, item } from "./test.fixtures";

let t: Backend;
let laptop: { site: string; secret: string };

beforeEach(async () => {
  vi.useFakeTimers();
  vi.setSystemTime(1_770_000_000_000);
  t = backend();
  laptop = await registerSite(t, "laptop");
});
afterEach(() => vi.useRealTimers());

const push = (episodes: ReturnType<typeof item>[], cursor = 1, auth = laptop) =>
  t.mutation(api.episodes.bulkSyncEpisodes, { ...auth, cursor, episodes });

describe("bulkSyncEpisodes: the hub's per-row outcomes", () => {
  test("a new key is inserted with its remote id and first-receipt time", async () => {
    const { results, cursor } = await push([item("1"), item("2")], 2);
    expect(results.map((r) => r.outcome)).toEqual(["inserted", "inserted"]);
    expect(results[0]).toMatchObject({ sourceId: "1", syncedAt: 1_770_000_000_000, reason: null });
    expect(typeof results[0].remoteId).toBe("string");
    expect(cursor).toEqual({ site: "laptop", lastSyncedId: 2, lastSyncedAt: 1_770_000_000_000, totalSynced: 2 });
  });

  test("the same content again is unchanged; nothing is written", async () => {
    const first = await push([item("1")]);
    vi.setSystemTime(1_770_000_060_000);
    const again = await push([item("1")]);
    expect(again.results[0]).toEqual({ ...first.results[0], outcome: "unchanged" });
    expect(again.cursor.totalSynced).toBe(1);
  });

  test("new content under the same identity updates in place and keeps syncedAt", async () => {
    const first = await push([item("1")]);
    vi.setSystemTime(1_770_000_060_000);
    const edit = item("1", { content: "edited", fields: { output: "better output" } });
    const { results } = await push([edit]);
    expect(results[0]).toMatchObject({ outcome: "updated", remoteId: first.results[0].remoteId, syncedAt: 1_770_000_000_000 });
    const doc = await t.run((ctx) => ctx.db.query("episodes").first());
    expect(doc).toMatchObject({ output: "better output", contentHash: "edited", syncedAt: 1_770_000_000_000, updatedAt: 1_770_000_060_000 });
  });

  test("another identity under the key is a conflict and leaves the episode untouched", async () => {
    const first = await push([item("22")]);
    const other = item("22", { identity: "someone else", content: "other", fields: { task: "other task" } });
    const { results } = await push([other]);
    expect(results[0]).toEqual({
      sourceId: "22",
      outcome: "conflict",
      remoteId: first.results[0].remoteId,
      syncedAt: first.results[0].syncedAt,
      reason: "the key holds another episode",
    });
    const doc = await t.run((ctx) => findEpisode(ctx.db, "laptop", "22"));
    expect(doc?.contentHash).toBe("content-22");
  });

  test("a key repeated within one batch behaves as in the hub", async () => {
    const { results } = await push([item("5"), item("5"), item("5", { content: "v2" }), item("5", { identity: "x" })]);
    expect(results.map((r) => r.outcome)).toEqual(["inserted", "unchanged", "updated", "conflict"]);
  });

  test("an unfit row is rejected with a reason and does not hold back the others", async () => {
    const bad = item("2", { fields: { metadata: [1, 2] } });
    const { results, cursor } = await push([item("1"), bad, item("3")], 3);
    expect(results.map((r) => r.outcome)).toEqual(["inserted", "rejected", "inserted"]);
    expect(results[1]).toEqual({ sourceId: "2", outcome: "rejected", remoteId: null, syncedAt: null, reason: "metadata is not an object" });
    expect(cursor.totalSynced).toBe(2);
  });

  test.each([
    [{ metadata: undefined, metadataJson: "{not json" }, /metadataJson is not JSON/],
    [{ metadata: undefined, metadataJson: "[1]" }, /not a JSON object/],
    [{ metadata: undefined }, /neither metadata nor metadataJson/],
    [{ metadataJson: "{}", metadata: {} }, /both/],
    [{ output: "x".repeat(1_100_000) }, /episode too large/],
  ])("refuses %#", async (fields, reason) => {
    const { results } = await push([item("1", { fields })]);
    expect(results[0].outcome).toBe("rejected");
    expect(results[0].reason).toMatch(reason);
  });

  test("an empty sourceId is rejected", async () => {
    const { results } = await push([item("")]);
    expect(results[0]).toMatchObject({ outcome: "rejected", reason: "sourceId is empty" });
  });

  test("the cursor never goes backwards and counts only inserts", async () => {
    await push([item("1"), item("2")], 10);
    vi.setSystemTime(1_770_000_060_000);
    const { cursor } = await push([item("1"), item("3")], 4);
    expect(cursor).toEqual({ site: "laptop", lastSyncedId: 10, lastSyncedAt: 1_770_000_060_000, totalSynced: 3 });
  });

  test("an empty batch still advances the cursor", async () => {
    const { results, cursor } = await push([], 7);
    expect(results).toEqual([]);
    expect(cursor.lastSyncedId).toBe(7);
  });

  test("more than 200 episodes is TOO_LARGE; 200 is fine", async () => {
    const many = Array.from({ length: 201 }, (_, i) => item(String(i)));
    expect(await errorCode(push(many))).toBe("TOO_LARGE");
    const { results } = await push(many.slice(0, 200));
    expect(results).toHaveLength(200);
  });

  test.each([-1, 1.5, Number.MAX_SAFE_INTEGER + 2])("cursor %d is INVALID", async (cursor) => {
    expect(await errorCode(push([item("1")], cursor))).toBe("INVALID");
  });

  test("a failed call writes nothing", async () => {
    await errorCode(push([item("1")], -1));
    expect(await t.run((ctx) => ctx.db.query("episodes").collect())).toEqual([]);
  });

  test.each([
    ["a missing field", { task: undefined }, /task/],
    ["a wrong type", { success: "yes" }, /Expected `boolean`/],
    ["an unknown field", { mood: "happy" }, /mood/],
    ["a non-string tag", { tags: [1] }, /Expected `string`, got `1`/],
  ])("the validator refuses %s", async (_name, overrides, pattern) => {
    const bad = { ...item("1"), fields: { ...episodeFields(), ...overrides } } as never;
    const message = await errorMessage(push([bad]));
    expect(message).toMatch(/ArgumentValidationError|Validator error/);
    expect(message).toMatch(pattern);
  });

  test("a forgotten key is rejected, not re-inserted", async () => {
    await push([item("1")]);
    await t.action(api.episodes.forget, { ...laptop, sourceId: "1" });
    const { results } = await push([item("1")]);
    expect(results[0]).toEqual({ sourceId: "1", outcome: "rejected", remoteId: null, syncedAt: null, reason: "forgotten" });
  });

  test("sites keep separate keys: the same sourceId on two sites is two episodes", async () => {
    const vm = await registerSite(t, "vm");
    await push([item("1")]);
    const { results } = await push([item("1", { identity: "vm's" })], 1, vm);
    expect(results[0].outcome).toBe("inserted");
  });
});

describe("cursor functions", () => {
  test("getCursor is null before the first push", async () => {
    expect(await t.query(api.episodes.getCursor, laptop)).toBeNull();
  });

  test("updateCursor moves forward only and keeps totalSynced", async () => {
    await push([item("1")], 5);
    vi.setSystemTime(1_770_000_060_000);
    expect(await t.mutation(api.episodes.updateCursor, { ...laptop, lastSyncedId: 3 })).toEqual({
      site: "laptop",
      lastSyncedId: 5,
      lastSyncedAt: 1_770_000_060_000,
      totalSynced: 1,
    });
    await t.mutation(api.episodes.updateCursor, { ...laptop, lastSyncedId: 9 });
    expect((await t.query(api.episodes.getCursor, laptop))?.lastSyncedId).toBe(9);
  });

  test("updateCursor creates the cursor; a bad id is INVALID", async () => {
    expect((await t.mutation(api.episodes.updateCursor, { ...laptop, lastSyncedId: 4 })).totalSynced).toBe(0);
    expect(await errorCode(t.mutation(api.episodes.updateCursor, { ...laptop, lastSyncedId: -4 }))).toBe("INVALID");
  });

  test("a site sees only its own cursor", async () => {
    const vm = await registerSite(t, "vm");
    await push([item("1")], 5);
    expect(await t.query(api.episodes.getCursor, vm)).toBeNull();
  });
});

describe("listEpisodes", () => {
  test("pages through the site's own episodes in order of first receipt, with the export fields", async () => {
    const vm = await registerSite(t, "vm");
    for (let i = 0; i < 5; i += 1) {
      vi.setSystemTime(1_770_000_000_000 + i * 1000);
      await push([item(String(i))], i);
    }
    await push([item("vm-only")], 1, vm);
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const page: { episodes: { sourceId: string }[]; next: string | null } = await t.query(api.episodes.listEpisodes, {
        ...laptop,
        after,
        limit: 2,
      });
      seen.push(...page.episodes.map((e) => e.sourceId));
      after = page.next;
    } while (after !== null);
    expect(seen).toEqual(["0", "1", "2", "3", "4"]);
    const { episodes } = await t.query(api.episodes.listEpisodes, { ...laptop, after: null, limit: 1 });
    // The wire sorts keys; clients read fields by name.
    expect(Object.keys(episodes[0]).sort()).toEqual([
      "sourceSite", "sourceId", "sessionId", "task", "input", "output", "critique", "reward", "success",
      "latencyMs", "tokensUsed", "tags", "metadata", "ts", "createdAt", "agentName", "agentPlatform",
      "agentInterface", "parentAgent", "llmProvider", "llmModel", "contentHash", "syncedAt",
    ].sort());
    expect(episodes[0]).toMatchObject({ sourceSite: "laptop", metadata: { tool: "bash" }, syncedAt: 1_770_000_000_000 });
  });

  test.each([0, 501, 2.5])("limit %d is INVALID", async (limit) => {
    expect(await errorCode(t.query(api.episodes.listEpisodes, { ...laptop, after: null, limit }))).toBe("INVALID");
  });
});

describe("forget", () => {
  test("deletes the episode and leaves a tombstone; a second forget deletes nothing", async () => {
    await push([item("1"), item("2")]);
    expect(await t.action(api.episodes.forget, { ...laptop, sourceId: "1" })).toEqual({ deleted: true, archiveWeek: null });
    expect(await t.action(api.episodes.forget, { ...laptop, sourceId: "1" })).toEqual({ deleted: false, archiveWeek: null });
    const rows = await t.run(async (ctx) => ({
      episodes: (await ctx.db.query("episodes").collect()).map((e) => e.sourceId),
      tombstones: (await ctx.db.query("tombstones").collect()).map((e) => e.sourceId),
    }));
    expect(rows).toEqual({ episodes: ["2"], tombstones: ["1"] });
  });

  test("takes the episode off the site's totalSynced, once", async () => {
    await push([item("1"), item("2")], 2);
    await t.action(api.episodes.forget, { ...laptop, sourceId: "1" });
    await t.action(api.episodes.forget, { ...laptop, sourceId: "1" });
    const cursor = await t.run(async (ctx) => await ctx.db.query("syncCursors").first());
    expect(cursor).toMatchObject({ lastSyncedId: 2, totalSynced: 1 });
  });

  test("a site cannot forget another site's episode", async () => {
    const vm = await registerSite(t, "vm");
    await push([item("1")]);
    expect(await t.action(api.episodes.forget, { ...vm, sourceId: "1" })).toEqual({ deleted: false, archiveWeek: null });
    expect(await t.run((ctx) => ctx.db.query("episodes").collect())).toHaveLength(1);
  });
});

describe("approvalStatusOf (admin, tests)", () => {
  const statusOf = (site: string, sourceId: string) => t.query(internal.episodes.approvalStatusOf, { site, sourceId });

  test("the episode's stored approvalStatus, or null when the episode or the field is absent", async () => {
    expect(await statusOf("laptop", "1")).toBeNull(); // no episode
    await push([item("1"), item("2")], 2);
    expect(await statusOf("laptop", "1")).toBeNull(); // no approvalStatus
    await t.mutation(api.approvals.create, {
      ...laptop,
      agentName: "claude",
      actionType: "deploy",
      priority: "normal",
      reviewers: [],
      expiresAt: 1_770_000_000_000 + 60_000,
      sourceId: "1",
    });
    expect(await statusOf("laptop", "1")).toBe("pending");
    expect(await statusOf("laptop", "2")).toBeNull();
    expect(await statusOf("vm", "1")).toBeNull(); // another site's key
  });
});
